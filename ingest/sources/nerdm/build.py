"""A NERDm record folder -> the record's subgraph (nodes, edges, defects), checked but not yet written.

Layout read: `DIR/nerdm.json` (or a `.json` file given directly, its folder being DIR) plus any payload
files and `.sha256` sidecars at `DIR/<filepath>`. Nothing here touches Neo4j; `ingest/write/loader.py` writes
the result in one transaction.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from voe.errors import InputError
from voe.graph import (
    EdgeRow,
    NodeRow,
    json_text,
)
from voe.ingest.builder import (  # noqa: F401 - re-exported: the loader, the pipeline and the tests read them here
    RULESET_VERSION,
    BuilderCore,
    Origin,
    RecordGraph,
    _storable_row,
    _text,
    _value_at,
    parser_libraries,
    parser_versions,
    stamp_rows,
)
from voe.ingest.payloads.files import (
    SPECIAL_NAMES,
    LocalBytes,
    NotRegularFile,
    entry_kind,
    hash_file,
    list_entries,
    pointer_of,
)
from voe.ingest.rules import ids, media_types, readmes
from voe.ingest.rules.evidence import evidence_kind, reference_kind
from voe.ingest.sources.nerdm.schema import NerdmSchemas, Violation
from voe.ontology import Label, Rel

NERDM_FILENAME = "nerdm.json"
# Arrays and objects nested deeper than this are refused when a record is read (an InputError naming the
# file): everything downstream (schema checks, canonical JSON, the graph) recurses over the record.
MAX_JSON_DEPTH = 512


class NerdmChecksum(BaseModel):
    model_config = ConfigDict(extra="allow")
    hash: str | None = None
    algorithm: dict[str, Any] | None = None

    @property
    def tag(self) -> str:
        tag = (self.algorithm or {}).get("tag")
        if isinstance(tag, str) or not tag:
            return (tag or "sha256").lower()
        return json_text(tag)  # the schema check reports it; the property stays text


class NerdmComponent(BaseModel):
    """The fields voe reads from a NERDm component; everything else is kept in the record file."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    nerdm_id: str = Field(alias="@id")
    types: list[str] = Field(default_factory=list, alias="@type")
    filepath: str | None = None
    mediaType: str | None = None
    size: int | None = None
    checksum: NerdmChecksum | None = None
    describes: str | None = None
    valid: bool | None = None
    downloadURL: str | None = None
    accessURL: str | None = None
    title: str | None = None
    description: str | None = None

    @property
    def kind(self) -> Label:
        if "nrdp:ChecksumFile" in self.types:
            return Label.CHECKSUM_FILE
        if "nrdp:Subcollection" in self.types:
            return Label.SUBCOLLECTION
        if "nrd:Hidden" in self.types:
            return Label.HIDDEN_COMPONENT
        return Label.DATA_FILE if ("nrdp:DataFile" in self.types or self.filepath) else Label.COMPONENT


class NerdmPublisher(BaseModel):
    """Who published the record (an organization in NIST's records); its name is what the Record keeps."""

    model_config = ConfigDict(extra="allow")
    name: str | None = None


class NerdmHeader(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    ark: str = Field(alias="@id")
    ediid: str | None = None
    version: str | None = None
    doi: str | None = None
    title: str | None = None
    landingPage: str | None = None
    modified: str | None = None
    issued: str | None = None
    license: str | None = None
    publisher: NerdmPublisher | None = None
    schema_uri: str | None = Field(default=None, alias="_schema")


# The record keys a node property is read from (alternatives in order), for the JSON pointer of a
# `value_not_storable` defect; and the property each header / component key fills.
HEADER_PROPS = {"ediid": "ediid", "version": "version", "doi": "doi", "title": "title", "landingPage": "landing_page",
                "modified": "modified", "issued": "issued", "license": "license", "publisher": "publisher",
                "_schema": "schema"}
RECORD_FIELDS: dict[str, tuple[str, ...]] = {**{prop: (key,) for key, prop in HEADER_PROPS.items()},
                                             "ark": ("@id",), "id": ("@id",), "record_id": ("@id",),
                                             "description": ("description",), "release_history": ("releaseHistory",),
                                             "contact_name": ("contactPoint",), "contact_email": ("contactPoint",)}
COMPONENT_PROPS = {"filepath": "filepath", "mediaType": "media_type", "size": "declared_size",
                   "checksum/hash": "declared_sha256", "checksum/algorithm": "checksum_algorithm",
                   "describes": "describes", "valid": "valid", "downloadURL": "download_url",
                   "accessURL": "download_url", "title": "title", "description": "description"}
COMPONENT_FIELDS: dict[str, tuple[str, ...]] = {
    "id": ("@id",), "nerdm_id": ("@id",), "filepath": ("filepath",), "name": ("filepath", "@id"),
    "media_type": ("mediaType",), "declared_size": ("size",), "declared_sha256": ("checksum/hash", "checksum"),
    "checksum_algorithm": ("checksum/algorithm/tag", "checksum/algorithm"), "download_url": ("downloadURL", "accessURL"),
    "title": ("title",), "description": ("description",), "describes": ("describes",), "valid": ("valid",)}
SIDECAR_SUFFIX = ".sha256"
EVIDENCE_FIELDS: dict[str, tuple[str, ...]] = {"id": ("filepath",), "canonical_id": ("filepath",),
                                               "filepath": ("filepath",), "title": ("title", "filepath")}
REFERENCE_FIELDS: dict[str, tuple[str, ...]] = {"id": ("location", "@id"), "canonical_id": ("location", "@id"),
                                                "target": ("location", "@id"), "title": ("title", "location", "@id"),
                                                "ref_type": ("refType",)}






def find_record_file(path: Path) -> Path:
    if not path.exists():
        raise InputError("path does not exist", path=str(path))
    if path.is_dir():
        candidate = path / NERDM_FILENAME
        if candidate.is_symlink():
            raise InputError("is a symbolic link, not followed (ingest reads only what the folder holds; "
                             "name the file itself to read it)", path=str(candidate))
        if not candidate.exists():
            raise InputError(f"folder holds no {NERDM_FILENAME} (expected a NERDm record folder)", path=str(path))
        return candidate
    return path


def read_record(record_file: Path) -> tuple[dict[str, Any], bytes]:
    doc, raw = load_json(record_file)
    check_record(doc, record_file)
    return doc, raw


def load_json(record_file: Path) -> tuple[Any, bytes]:
    """A JSON file read whole, bounded in depth; anything unreadable is an InputError naming the file."""
    try:
        kind = entry_kind(record_file.stat().st_mode)
        if kind not in ("file", "dir"):
            raise InputError(f"is {SPECIAL_NAMES[kind]}, expected a NERDm JSON file", path=str(record_file))
        raw = record_file.read_bytes()
    except IsADirectoryError as exc:
        raise InputError("is a folder, expected a NERDm JSON file", path=str(record_file)) from exc
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror or exc}", path=str(record_file)) from exc
    if not raw.strip():
        raise InputError("is empty (truncated?), expected a NERDm JSON record", path=str(record_file))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"is not UTF-8 text (byte {exc.start})", path=str(record_file)) from exc
    too_deep = f"nests arrays and objects deeper than {MAX_JSON_DEPTH} levels; not read as a NERDm record"
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        ends_early = exc.pos >= len(text.rstrip()) - 1 or exc.msg.startswith("Unterminated string")
        hint = " (the file ends early: truncated?)" if ends_early else ""
        raise InputError(
            f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}{hint}", path=str(record_file)
        ) from exc
    except RecursionError as exc:  # the C decoder stops at Python's recursion limit, far beyond MAX_JSON_DEPTH
        raise InputError(too_deep, path=str(record_file)) from exc
    except ValueError as exc:  # an integer literal beyond Python's digit limit (4,300 digits)
        raise InputError(f"is not a JSON record voe can read: {str(exc).split(';')[0]}", path=str(record_file)) from exc
    if json_depth(doc, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise InputError(too_deep, path=str(record_file))
    return doc, raw


def looks_nerdm(doc: Any) -> bool:
    """A NERDm resource: an object with a string @id and a NERDm _schema or nrd/nrdp @type."""
    return isinstance(doc, dict) and isinstance(doc.get("@id"), str) and (
        "nerdm" in str(doc.get("_schema", "")) or any(
            str(t).startswith(("nrd:", "nrdp:", "nrdr:")) for t in (doc.get("@type") or [])
            if isinstance(doc.get("@type"), list)))


def check_record(doc: Any, record_file: Path, pointer: str = "") -> None:
    """Raise InputError unless `doc` (at `pointer` of the file) is a NERDm record voe can build."""
    if not isinstance(doc, dict):
        raise InputError(f"is JSON but not a NERDm record (top level is {type(doc).__name__}, not an object)",
                         path=str(record_file), pointer=pointer)
    if not isinstance(doc.get("@id"), str):
        raise InputError("is JSON but not a NERDm record: no string @id", path=str(record_file),
                         pointer=f"{pointer}/@id")
    nerdm = "nerdm" in str(doc.get("_schema", "")) or any(
        str(t).startswith(("nrd:", "nrdp:")) for t in (doc.get("@type") or [])
    )
    if not nerdm:
        raise InputError("is JSON but not a NERDm record: no NERDm _schema or nrd/nrdp @type",
                         path=str(record_file), pointer=f"{pointer}/_schema")
    if "components" in doc and not isinstance(doc["components"], list):
        raise InputError("components must be a list", path=str(record_file), pointer=f"{pointer}/components")


def json_depth(doc: Any, limit: int) -> int:
    """How deeply arrays and objects nest in a parsed JSON value (a scalar is 0), counted level by level
    without recursion; stops counting once past `limit`."""
    level = [doc] if isinstance(doc, (dict, list)) else []
    depth = 0
    while level and depth <= limit:
        depth += 1
        level = [x for v in level for x in (v.values() if type(v) is dict else v)
                 if type(x) is dict or type(x) is list]
    return depth


MAX_DESCRIPTION = 2000


def _description(header: NerdmHeader) -> str | None:
    """The record's description (NERDm: a list of paragraphs), joined and cut: what it says its data are."""
    value = (header.model_extra or {}).get("description")
    parts = value if isinstance(value, list) else [value] if isinstance(value, str) else []
    text = " ".join(str(p).strip() for p in parts if isinstance(p, str) and p.strip())
    return text[:MAX_DESCRIPTION] or None


def _contact(point: Any) -> dict[str, str]:
    """Who the record names to write to (NERDm contactPoint: fn, hasEmail), for the curator's report."""
    if not isinstance(point, dict):
        return {}
    name, email = point.get("fn"), point.get("hasEmail")
    out = {}
    if isinstance(name, str) and name.strip():
        out["contact_name"] = name.strip()[:200]
    if isinstance(email, str) and email.strip():
        out["contact_email"] = email.strip().removeprefix("mailto:")[:200]
    return out


MAX_HISTORY = 1200


def _history_text(history: Any) -> str | None:
    """The record's release history as one line a reader scans ("1.0.0 2019-08-12 initial release; 1.1.0 ..."),
    cut at MAX_HISTORY characters; None when it lists no release."""
    releases = history.get("hasRelease") if isinstance(history, dict) else None
    if not isinstance(releases, list):
        return None
    parts = [" ".join(str(r.get(k) or "").strip()[:60] for k in ("version", "issued", "description")).strip()
             for r in releases if isinstance(r, dict)]
    text = "; ".join(p for p in parts if p)
    return text[:MAX_HISTORY] or None


def _archive_host(header: NerdmHeader, components: list[dict[str, Any]]) -> str:
    for url in [header.landingPage] + [c.get("downloadURL") for c in components[:5] if isinstance(c, dict)]:
        if not isinstance(url, str):
            continue
        try:
            host = urlparse(url).hostname
        except ValueError:  # e.g. a malformed IPv6 literal: not a host to name the archive by
            continue
        if host:
            return host
    return "unknown"


@dataclass(frozen=True)
class Holding:
    """What a folder holds at a file component's filepath: `special` (the entry or a folder above it is a
    symlink, FIFO, ...: `entry`, `kind`), `absent`, `not_regular` (became one since the listing: `kind`),
    `unreadable` (`reason`) or `held` (`local`: its sha256 and size)."""

    state: str
    local: LocalBytes | None = None
    entry: str = ""
    kind: str = ""
    reason: str = ""

    def stamp_part(self, filepath: str) -> bytes:
        """What this adds to the ingest stamp (as NerdmBuilder._hold adds it)."""
        if self.state in ("special", "not_regular"):  # as BuilderCore._not_regular adds it
            text = f"special:{filepath}:{self.kind}"
        elif self.state == "held":
            assert self.local is not None
            text = f"held:{filepath}:{self.local.sha256}:{self.local.size}"
        else:
            text = f"{self.state}:{filepath}"
        return text.encode("utf-8", "surrogatepass")


def probe_holding(builder: BuilderCore, filepath: str) -> Holding:
    special = builder._special_entry(filepath)
    if special is not None:
        return Holding("special", entry=special[0], kind=special[1])
    if builder._entries.get(filepath) is None and builder._entries.get(filepath.rstrip("/")) != "dir":
        return Holding("absent")
    path = builder.root / filepath
    try:
        return Holding("held", hash_file(path))
    except NotRegularFile as exc:
        return Holding("not_regular", kind=exc.kind)
    except OSError as exc:
        return Holding("unreadable", reason="is a folder" if path.is_dir() else (exc.strerror or str(exc)))


ARCHIVE_NAMES = {"data.nist.gov": "NIST Public Data Repository"}


class NerdmBuilder(BuilderCore):
    """A NERDm record folder: the record file's header and components, their payloads and sidecars."""

    def __init__(self, record_file: Path, raw: bytes, doc: dict[str, Any], validated: bool) -> None:
        self._open(record_file, doc, hashlib.sha256(raw).hexdigest(), len(raw), validated)

    def _open(self, record_file: Path, doc: dict[str, Any], file_sha: str, file_size: int, validated: bool,
              rec_id: str | None = None, stamp: bytes = b"") -> None:
        """The state both readers of a record file share (the whole file here, passes in NerdmStream)."""
        self.record_file = record_file
        self.root = record_file.parent
        self.doc = doc
        self.file_sha = file_sha
        self.file_size = file_size
        self.provenance = "nist_bytes"  # a reconstructed catalog says so instead (ingest/sources/catalog.py)
        self.validated = validated  # when False, structural problems the schema would name are reported here
        self._by_nerdm_id: dict[str, tuple[int, NerdmComponent, str]] = {}
        self._declares_checksums = True  # build() reads it from the components, a streamed record from its scan
        self.header, self._header_unread = self._read_header(doc)
        # whether the schema check ran is part of the stamp: its defects exist only when it did
        self._start(self.header.ark, rec_id or ids.record_id(self.header.ark, self.header.version), self.header.version,
                    self.header.title, [self.file_sha.encode(), b"schema" if validated else b"no-schema", stamp])
        self._entries = list_entries(self.root)  # what the folder holds; symlinks listed, never followed
        self._any_special = any(kind not in ("file", "dir") for kind in self._entries.values())

    def _read_header(self, doc: dict[str, Any]) -> tuple[NerdmHeader, dict[str, Any]]:
        try:
            # a header field of another JSON type than the model reads (a map for a title) is stored as the
            # record has it (made storable, with a defect, by _seal) and reported by the schema check
            return lenient(NerdmHeader, doc)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise InputError(f"NERDm header field is unusable: {first['msg']}", path=str(self.record_file),
                             pointer=pointer_of(first["loc"])) from exc

    # -- what Neo4j can store ------------------------------------------------------------------
    def _fallback_origin(self) -> Origin:
        """Where the Record node's own values are reported (the record file's root)."""
        return Origin("", self.rec_id, Label.RECORD, fields=RECORD_FIELDS)

    # -- the record ----------------------------------------------------------------------------
    def build(self) -> RecordGraph:
        doc = self.doc
        components_raw = doc.get("components") or []
        self._record_rows(components_raw[:5], len(components_raw))

        parsed: list[tuple[int, NerdmComponent, str]] = []
        by_nerdm_id: dict[str, tuple[int, NerdmComponent, str]] = {}
        self._declares_checksums = any(
            isinstance(c, dict) and "nrdp:ChecksumFile" not in (c.get("@type") or [])
            and isinstance(c.get("checksum"), dict) and c["checksum"].get("hash") for c in components_raw)
        for i, raw in enumerate(components_raw):
            read = parse_component(raw)
            if read is None:
                # Unidentifiable entry: the schema check names it; nothing to hang a node on.
                if not self.validated:
                    self.defect("nerdm.schema", self.rec_id, Label.RECORD, f"/components/{i}",
                                "component has no string @id")
                continue
            comp, unread = read
            if unread:
                self._unread[i] = unread
            cid = ids.component_id(self.rec_id, comp.nerdm_id)
            if comp.nerdm_id in by_nerdm_id:
                self.defect("nerdm.schema", self.rec_id, Label.RECORD, f"/components/{i}/@id",
                            f"duplicate component @id {comp.nerdm_id!r}")
                continue
            by_nerdm_id[comp.nerdm_id] = (i, comp, cid)
            parsed.append((i, comp, cid))

        folders = {c.filepath: cid for _, c, cid in parsed if c.kind is Label.SUBCOLLECTION and c.filepath}
        with self._parsing_ahead(c.filepath for _, c, _ in parsed
                                 if c.kind is Label.DATA_FILE and c.filepath and self._regular(c.filepath)):
            for i, comp, cid in parsed:
                self._component(i, comp, cid, folders, by_nerdm_id)
        self._evidence(parsed)
        self._references()
        self.measurement_tables({c.filepath.rsplit("/", 1)[-1]: ids.evidence_id(self.rec_id, c.filepath)
                                 for _, c, _ in parsed if c.kind is Label.DATA_FILE and c.filepath
                                 and "/" not in c.filepath.strip("/")})
        self._readmes(parsed)
        self._after_evidence(parsed)

        # 64 bits of the input hash: plenty to tell two versions of a record apart, and short strings keep
        # the property store (written for every node and edge of the record) small.
        self.g.stamp = hashlib.sha256(b"\0".join(self._stamp_parts)).hexdigest()[:16]
        self._by_nerdm_id = by_nerdm_id
        self._seal()
        stamp_rows(self.g.nodes, self.g.edges, self.g.stamp)
        return self.g

    def _record_rows(self, first_components: list[Any], count: int, located: bool = True) -> None:
        """The record file's File, the archive (named by the first components' download host), the Record and
        their edges (`located`: its LOCATED_AT the whole record file too)."""
        h = self.header
        host = _archive_host(h, first_components)
        arch = ids.archive_id(host)
        fid = self.file(LocalBytes(self.record_file, self.file_sha, self.file_size), origin="nerdm")
        self.g.nodes.append(NodeRow(arch, (Label.ARCHIVE,), {"host": host, "name": ARCHIVE_NAMES.get(host, host)}))
        record_props = {
            "ark": h.ark, "ediid": h.ediid, "version": h.version, "doi": h.doi, "title": h.title,
            "landing_page": h.landingPage, "modified": h.modified, "issued": h.issued,
            "license": h.license, "publisher": h.publisher.name if h.publisher is not None else None,
            "schema": h.schema_uri, "source_path": self.record_name, "source_sha256": self.file_sha,
            "component_count": count, "ingest_state": "writing", "description": _description(h),
            **_contact((h.model_extra or {}).get("contactPoint")),
        }
        for key, value in self._header_unread.items():
            if key in HEADER_PROPS:
                record_props[HEADER_PROPS[key]] = value
        record_row = NodeRow(self.rec_id, (Label.RECORD,), self._owned(record_props))
        self.g.nodes.append(record_row)
        self.g.edges.append(EdgeRow(Rel.CONTAINS, arch, Label.ARCHIVE, self.rec_id, Label.RECORD))
        self.g.edges.append(EdgeRow(Rel.STORED_AS, self.rec_id, Label.RECORD, fid, Label.FILE,
                                    {"path": self.record_name}))
        if located:
            self.g.edges.append(EdgeRow(Rel.LOCATED_AT, self.rec_id, Label.RECORD, self.location("", self.doc),
                                        Label.SOURCE_LOCATION))
        described = (h.model_extra or {}).get("description")
        if record_props["description"] and described is not None:  # what the record says its data are, located
            self.g.edges.append(EdgeRow(Rel.LOCATED_AT, self.rec_id, Label.RECORD,
                                        self.location("/description", described), Label.SOURCE_LOCATION))
        history = (h.model_extra or {}).get("releaseHistory")
        if (text := _history_text(history)) is not None:  # what the record says of its versions, located
            record_row.props["release_history"] = text
            self.g.edges.append(EdgeRow(Rel.LOCATED_AT, self.rec_id, Label.RECORD,
                                        self.location("/releaseHistory", history), Label.SOURCE_LOCATION))

    def schema_defects(self, violations: list[Violation]) -> tuple[list[NodeRow], list[EdgeRow]]:
        """Defects for schema violations, computed after build() (validation runs alongside the writes)."""
        n_nodes, n_edges = len(self.g.nodes), len(self.g.edges)
        components_raw = self.doc.get("components") or []
        for v in violations:
            subject, label = self.rec_id, Label.RECORD
            parts = v.pointer.split("/")
            if len(parts) > 2 and parts[1] == "components" and parts[2].isdigit():
                raw_comp = components_raw[int(parts[2])]
                nid = raw_comp.get("@id") if isinstance(raw_comp, dict) else None
                if isinstance(nid, str) and nid in self._by_nerdm_id and self._by_nerdm_id[nid][0] == int(parts[2]):
                    subject, label = self._by_nerdm_id[nid][2], Label.COMPONENT
            self.defect("nerdm.schema", subject, label, v.pointer, f"{v.message} (schema {v.schema})")
        self._seal(n_nodes, n_edges)
        nodes, edges = self.g.nodes[n_nodes:], self.g.edges[n_edges:]
        del self.g.nodes[n_nodes:], self.g.edges[n_edges:]
        self.g.late_elements += len(nodes) + len(edges)
        stamp_rows(nodes, edges, self.g.stamp)
        return nodes, edges

    def _component(self, i: int, comp: NerdmComponent, cid: str, folders: dict[str, str],
                   by_nerdm_id: dict[str, tuple[int, NerdmComponent, str]]) -> None:
        ptr = f"/components/{i}"
        kind = comp.kind
        self.g.components[kind.value] += 1
        labels = (Label.COMPONENT,) if kind is Label.COMPONENT else (Label.COMPONENT, kind)
        declared = comp.checksum.hash.lower() if comp.checksum and comp.checksum.hash else None
        is_file = kind in (Label.DATA_FILE, Label.CHECKSUM_FILE)
        props: dict[str, Any] = {
            "nerdm_id": comp.nerdm_id, "component_type": kind.value, "filepath": comp.filepath,
            "name": posixpath.basename(comp.filepath) if comp.filepath else comp.nerdm_id,
            "media_type": comp.mediaType, "declared_size": comp.size, "declared_sha256": declared,
            "checksum_algorithm": comp.checksum.tag if comp.checksum else None,
            "download_url": comp.downloadURL or comp.accessURL, "title": comp.title,
            "description": comp.description, "describes": comp.describes, "valid": comp.valid,
        }
        for key, value in self._unread.get(i, {}).items():  # as the record has them; _seal makes them storable
            prop = COMPONENT_PROPS.get(key)
            if prop is not None and props.get(prop) is None:
                props[prop] = value
        self._origins[cid] = Origin(ptr, cid, Label.COMPONENT, fields=COMPONENT_FIELDS)
        local: LocalBytes | None = None
        if is_file and comp.filepath:
            local = self._hold(comp, cid, ptr)
            props["held"] = local is not None
            props["status"] = "held" if local is not None else self._absent_status.get(cid, "not_held")
            if local is not None:
                props["sha256"] = local.sha256
                props["size"] = local.size
        elif kind is Label.SUBCOLLECTION and comp.filepath and (special := self._special_entry(comp.filepath)):
            self._not_regular(comp.filepath, cid, ptr, *special)  # a folder that is a symlink: not descended
            props["status"] = "not_a_regular_file"
        self.g.nodes.append(NodeRow(cid, labels, self._owned({k: v for k, v in props.items() if v is not None})))
        self.g.edges.append(EdgeRow(Rel.HAS_COMPONENT, self.rec_id, Label.RECORD, cid, Label.COMPONENT))
        self.g.edges.append(EdgeRow(Rel.LOCATED_AT, cid, Label.COMPONENT,
                                    self.location(ptr, self.doc["components"][i]), Label.SOURCE_LOCATION))
        if comp.filepath:
            parent = posixpath.dirname(comp.filepath.rstrip("/"))
            if parent and parent in folders and folders[parent] != cid:
                self.g.edges.append(EdgeRow(Rel.PART_OF, cid, Label.COMPONENT, folders[parent], Label.SUBCOLLECTION))

        if kind is Label.DATA_FILE and declared is None:
            if self._declares_checksums:
                self.defect("nerdm.datafile.checksum", cid, Label.COMPONENT, ptr,
                            "DataFile declares no checksum where the record declares them for other files")
            else:
                self.defect("nerdm.datafile.no_checksums", cid, Label.COMPONENT, ptr,
                            "DataFile declares no checksum; the record declares none for any file")
        if is_file and comp.filepath:
            reason = media_types.mismatch(comp.filepath, comp.mediaType)
            if reason:
                self.defect("nerdm.media_type", cid, Label.COMPONENT, f"{ptr}/mediaType", reason)
        if local is not None:
            if declared is not None and comp.checksum and comp.checksum.tag == "sha256" and local.sha256 != declared:
                self.defect("file.sha256", cid, Label.COMPONENT, f"{ptr}/checksum/hash",
                            f"{comp.filepath}: recomputed sha256 {local.sha256} != declared {declared}",
                            path=comp.filepath)
            if comp.size is not None and local.size != comp.size:
                self.defect("file.size", cid, Label.COMPONENT, f"{ptr}/size",
                            f"{comp.filepath}: holds {local.size} bytes, declared {comp.size}", path=comp.filepath)
        if kind is Label.CHECKSUM_FILE:
            self._sidecar(i, comp, cid, local, by_nerdm_id)

    def _hold(self, comp: NerdmComponent, cid: str, ptr: str) -> LocalBytes | None:
        assert comp.filepath is not None
        h = self._holding(comp.filepath, cid)
        if h.state == "special":
            self._not_regular(comp.filepath, cid, ptr, h.entry, h.kind)
            return None
        if h.state == "absent":
            self._stamp_parts.append(f"absent:{comp.filepath}".encode("utf-8", "surrogatepass"))
            return None
        if h.state == "not_regular":  # replaced by a symlink or a FIFO since the folder was listed
            self._not_regular(comp.filepath, cid, ptr, comp.filepath, h.kind)
            return None
        path = self.root / comp.filepath
        if h.state == "unreadable":
            self.defect("file.read", cid, Label.COMPONENT, f"{ptr}/filepath",
                        f"{comp.filepath}: cannot be read ({h.reason})", path=comp.filepath)
            self.g.problems.append(InputError(f"payload cannot be read ({h.reason})", path=str(path)))
            self._stamp_parts.append(f"unreadable:{comp.filepath}".encode("utf-8", "surrogatepass"))
            return None
        assert h.local is not None
        self.held(path, comp.filepath, h.local, cid, parse=comp.kind is not Label.CHECKSUM_FILE)
        return h.local

    def _holding(self, filepath: str, cid: str) -> Holding:
        """What the folder holds at a file component's filepath (a streamed record looked in its first pass)."""
        return probe_holding(self, filepath)

    # -- evidence objects ---------------------------------------------------------------------
    def _evidence(self, parsed: list[tuple[int, NerdmComponent, str]]) -> None:
        """One Evidence per subcollection and per root-level data file (rules in ingest/rules/evidence.py)."""
        direct_files: Counter[str] = Counter(
            posixpath.dirname(c.filepath.rstrip("/")) for _, c, _ in parsed if c.filepath and c.kind is Label.DATA_FILE)
        for i, comp, cid in parsed:
            self._one_evidence(i, comp, cid, direct_files)

    def _readmes(self, parsed: list[tuple[int, NerdmComponent, str]]) -> None:
        """What a held readme says that the record contradicts (ingest/rules/readmes.py), on the readme at its line."""
        files = [c.filepath for _, c, _ in parsed if c.filepath and c.kind is Label.DATA_FILE]
        refs = self.doc.get("references") if isinstance(self.doc.get("references"), list) else []
        referenced = [str(r.get(k)) for r in refs if isinstance(r, dict) for k in ("@id", "location") if r.get(k)]
        own = [self.header.ark, self.header.ediid or "", self.header.doi or ""]
        for _, comp, cid in parsed:
            info = self._doc_info.get(cid)
            if not comp.filepath or not readmes.README.search(comp.filepath) or info is None:
                continue
            relpath, doc = info
            lines = [(int(f.extra.get("line") or 0), f.text) for f in doc.facts if f.kind == "line"]
            local = self._doc_local[cid]
            for finding in readmes.read(lines, own, referenced, files):
                fact = next(f for f in doc.facts if f.kind == "line" and int(f.extra.get("line") or 0) == finding.line)
                self.defect(finding.rule, cid, Label.COMPONENT, f"{relpath}#L{finding.line}",
                            f"{relpath} line {finding.line}: {finding.detail}", path=relpath,
                            location=self.fact_location(fact, relpath, local))

    def _after_evidence(self, parsed: list[tuple[int, NerdmComponent, str]]) -> None:
        """What a reader of several records adds once a record's evidence is known (a version's changes)."""

    def _one_evidence(self, i: int, comp: NerdmComponent, cid: str, direct_files: Counter[str]) -> None:
        """The component's Evidence, if it is a subcollection (`direct_files`: DataFiles per folder) or a
        root-level data file."""
        if not comp.filepath or comp.kind not in (Label.SUBCOLLECTION, Label.DATA_FILE):
            return
        if comp.kind is Label.DATA_FILE and "/" in comp.filepath.strip("/"):
            return
        info = self._doc_info.get(cid)
        kind, rule = evidence_kind(comp.filepath, comp.title, comp.mediaType, info[1].format if info else None,
                                   is_folder=comp.kind is Label.SUBCOLLECTION)
        members = direct_files[comp.filepath.rstrip("/")] if comp.kind is Label.SUBCOLLECTION else 0
        eid = self.add_evidence(comp.filepath, kind, rule, comp.title or comp.filepath, cid,
                                [self.location(f"/components/{i}", self.doc["components"][i])],
                                provenance=self.provenance, members=members)
        self._origins[eid] = Origin(f"/components/{i}", cid, Label.COMPONENT, fields=EVIDENCE_FIELDS)

    def _references(self) -> None:
        """Each entry of the record's `references` names an object the archive does not hold: an Evidence
        with no EVIDENCED_BY (no acquisition path), located at the reference in the record file."""
        refs = self.doc.get("references")
        if not isinstance(refs, list):
            return
        for i, ref in enumerate(refs):
            if not isinstance(ref, dict) or not isinstance(ref.get("location") or ref.get("@id"), str):
                continue
            target = str(ref.get("location") or ref.get("@id"))
            types = [t for t in ref.get("@type", []) if isinstance(t, str)] if isinstance(ref.get("@type"), list) else []
            kind, rule = reference_kind(target, ref.get("title"), types)
            eid = ids.evidence_id(self.rec_id, f"references/{i}")
            loc = self.location(f"/references/{i}", ref)
            # a title that is a map or list is stored as its JSON text by _seal, with a defect
            title = ref.get("title") or target
            self.g.nodes.append(NodeRow(eid, (Label.EVIDENCE,), self._owned({
                "canonical_id": eid, "kind": kind, "kind_rule": rule,
                "title": title if isinstance(title, (dict, list)) else str(title),
                "filepath": None, "target": target, "ref_type": ref.get("refType"), "record_ark": self.ark,
                "provenance": "referenced", "available": False,
            })))
            self._origins[eid] = Origin(f"/references/{i}", self.rec_id, Label.RECORD, fields=REFERENCE_FIELDS)
            self.g.edges.append(EdgeRow(Rel.LOCATED_AT, eid, Label.EVIDENCE, loc, Label.SOURCE_LOCATION))
            self.g.evidence[kind] += 1




    def _sidecar(self, i: int, comp: NerdmComponent, cid: str, local: LocalBytes | None,
                 by_nerdm_id: dict[str, tuple[int, NerdmComponent, str]]) -> None:
        ptr = f"/components/{i}"
        if comp.valid is False:
            self.defect("nerdm.sidecar.valid_flag", cid, Label.COMPONENT, f"{ptr}/valid",
                        f"{comp.filepath}: the record marks this checksum file valid: false")
        if not comp.describes:
            return
        target = by_nerdm_id.get(comp.describes)
        if target is None:
            self.defect("nerdm.sidecar.describes", cid, Label.COMPONENT, f"{ptr}/describes",
                        f"{comp.filepath}: describes {comp.describes!r}, which is not a component of the record")
            # the sidecar's own name is the target's (NIST writes `<file>.sha256`); `describes` is an @id
            own = comp.filepath or ""
            target_path = own.removesuffix(SIDECAR_SUFFIX) if own.endswith(SIDECAR_SUFFIX) else \
                comp.describes.removeprefix("cmps/")
            listed = by_nerdm_id.filepaths() if hasattr(by_nerdm_id, "filepaths") else \
                {c.filepath for _, c, _ in by_nerdm_id.values()}
            if target_path and target_path not in listed:  # a listed file named by a wrong @id is not missing
                self.add_attested(target_path, [self.location(f"{ptr}/describes", comp.describes)])
            return
        _, tcomp, tid = target
        self.g.edges.append(EdgeRow(Rel.DESCRIBES, cid, Label.CHECKSUM_FILE, tid, Label.COMPONENT))
        target_hash = tcomp.checksum.hash.lower() if tcomp.checksum and tcomp.checksum.hash else None
        if target_hash is None:
            return
        if local is not None:
            text = local.path.read_bytes().decode("ascii", errors="replace").strip()
            content = text.split()[0].lower() if text else ""
            for row in reversed(self.g.nodes):  # what the sidecar says is shown to a reviewer beside the digest
                if row.id == cid:
                    row.props["content"] = content[:128]
                    break
            if content != target_hash:
                self.defect("nerdm.sidecar.bytes", cid, Label.COMPONENT, f"{ptr}/describes",
                            f"{comp.filepath}: holds {content[:64]!r}, but {tcomp.filepath} declares {target_hash}",
                            path=comp.filepath)
        elif comp.checksum and comp.checksum.hash:
            # a digest is hex text; one that is not (a lone surrogate even) cannot match, but must not crash
            expected = hashlib.sha256(target_hash.encode("utf-8", "surrogatepass")).hexdigest()
            if comp.checksum.hash.lower() != expected:
                self.defect("nerdm.sidecar.declared", cid, Label.COMPONENT, f"{ptr}/checksum/hash",
                            f"{comp.filepath}: declared sha256 {comp.checksum.hash} is not sha256 of "
                            f"{tcomp.filepath}'s declared digest ({expected})")


def parse_component(raw: Any) -> tuple[NerdmComponent, dict[str, Any]] | None:
    """The component's model of what is well-typed, and the values (by their key path in the component) of
    another JSON type than the model reads; None when it has no string @id."""
    if not isinstance(raw, dict) or not isinstance(raw.get("@id"), str):
        return None
    try:
        return NerdmComponent.model_validate(raw), {}
    except ValidationError:
        pass
    # Keep what is well-typed; the schema check reports the rest with its JSON pointer, and the builder
    # stores the other values as the record has them (made storable by _seal).
    clean = dict(raw)
    unread: dict[str, Any] = {}
    types = raw.get("@type")
    if isinstance(types, list):
        clean["@type"] = [t for t in types if isinstance(t, str)]
    checksum = raw.get("checksum")
    if isinstance(checksum, dict):
        try:
            cs, cs_unread = lenient(NerdmChecksum, checksum)
            clean["checksum"] = cs.model_dump(exclude_none=True)
            unread.update({f"checksum/{k}": v for k, v in cs_unread.items()})
        except ValidationError:
            clean.pop("checksum")
    try:
        comp, top = lenient(NerdmComponent, clean)
    except ValidationError:  # pragma: no cover - @id is a string, and every other field is optional
        return None
    unread.update(top)
    return comp, unread


M = TypeVar("M", bound=BaseModel)


def lenient(model: type[M], raw: dict[str, Any]) -> tuple[M, dict[str, Any]]:
    """The model of what in `raw` is well-typed, and the top-level keys (with their values) whose value is of
    another JSON type than the model reads. Raises ValidationError when a required field is unusable."""
    try:
        return model.model_validate(raw), {}
    except ValidationError as exc:
        keys = {err["loc"][0] for err in exc.errors() if err["loc"]}
    unread = {k: raw[k] for k in keys if isinstance(k, str) and k in raw}
    return model.model_validate({k: v for k, v in raw.items() if k not in unread}), unread












def open_record(path: Path, validated: bool) -> NerdmBuilder:
    """Find and parse the record file; raises InputError for anything unreadable."""
    record_file = find_record_file(path)
    doc, raw = read_record(record_file)
    return NerdmBuilder(record_file, raw, doc, validated)


def build_record(path: Path, schemas: NerdmSchemas | None) -> RecordGraph:
    """Build the whole subgraph synchronously, schema defects included (tests and small callers)."""
    builder = open_record(path, schemas is not None)
    rg = builder.build()
    if schemas is not None:
        nodes, edges = builder.schema_defects(schemas.validate(builder.doc))
        rg.nodes += nodes
        rg.edges += edges
        rg.late_elements = 0
    return rg

