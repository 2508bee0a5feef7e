"""A NERDm record folder -> the record's subgraph (nodes, edges, defects), checked but not yet written.

Layout read: `DIR/nerdm.json` (or a `.json` file given directly, its folder being DIR) plus any payload
files and `.sha256` sidecars at `DIR/<filepath>`. Nothing here touches Neo4j; `ingest/loader.py` writes
the result in one transaction.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ingest import ids, media_types
from ingest.defects import RULES
from ingest.documents import parse_file
from ingest.evidence import evidence_kind, reference_kind
from ingest.files import LocalBytes, escape_pointer_token, hash_file, list_files, resolve_pointer, span_sha256
from ingest.nerdm_schema import NerdmSchemas, Violation
from ingest.parsers.model import Fact, Parsed
from voe.errors import InputError
from voe.graph import EdgeRow, NodeRow
from voe.ontology import Label, Rel

RULESET_VERSION = "nerdm-7"  # part of the ingest stamp: changing a rule re-stamps (and re-checks) records
NERDM_FILENAME = "nerdm.json"


class NerdmChecksum(BaseModel):
    model_config = ConfigDict(extra="allow")
    hash: str | None = None
    algorithm: dict[str, Any] | None = None

    @property
    def tag(self) -> str:
        return str((self.algorithm or {}).get("tag") or "sha256").lower()


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
    schema_uri: str | None = Field(default=None, alias="_schema")


@dataclass
class RecordGraph:
    record_id: str
    ark: str
    version: str | None
    title: str | None
    source: Path
    nodes: list[NodeRow] = field(default_factory=list)
    edges: list[EdgeRow] = field(default_factory=list)
    components: Counter[str] = field(default_factory=Counter)
    defects: Counter[str] = field(default_factory=Counter)
    files: int = 0
    held: int = 0
    problems: list[InputError] = field(default_factory=list)  # payloads we could not read
    late_elements: int = 0  # schema-defect rows written after the main batch
    parsed_files: Counter[str] = field(default_factory=Counter)
    facts: int = 0
    pages: int = 0
    cells: int = 0
    evidence: Counter[str] = field(default_factory=Counter)
    stamp: str = ""
    source_root: str | None = None  # a plain folder's resolved absolute path
    shares_name_with: str | None = None  # a plain folder: the record id another folder of this name holds
    previous_stamp: str | None = None  # set by the loader: the stamp the graph held for this record before
    previous_state: str | None = None  # ... and that record's ingest_state


def find_record_file(path: Path) -> Path:
    if not path.exists():
        raise InputError("path does not exist", path=str(path))
    if path.is_dir():
        candidate = path / NERDM_FILENAME
        if not candidate.exists():
            raise InputError(f"folder holds no {NERDM_FILENAME} (expected a NERDm record folder)", path=str(path))
        return candidate
    return path


def read_record(record_file: Path) -> tuple[dict[str, Any], bytes]:
    try:
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
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        ends_early = exc.pos >= len(text.rstrip()) - 1 or exc.msg.startswith("Unterminated string")
        hint = " (the file ends early: truncated?)" if ends_early else ""
        raise InputError(
            f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}{hint}", path=str(record_file)
        ) from exc
    if not isinstance(doc, dict):
        raise InputError(f"is JSON but not a NERDm record (top level is {type(doc).__name__}, not an object)",
                         path=str(record_file), pointer="")
    if not isinstance(doc.get("@id"), str):
        raise InputError("is JSON but not a NERDm record: no string @id", path=str(record_file), pointer="/@id")
    looks_nerdm = "nerdm" in str(doc.get("_schema", "")) or any(
        str(t).startswith(("nrd:", "nrdp:")) for t in (doc.get("@type") or [])
    )
    if not looks_nerdm:
        raise InputError("is JSON but not a NERDm record: no NERDm _schema or nrd/nrdp @type",
                         path=str(record_file), pointer="/_schema")
    if "components" in doc and not isinstance(doc["components"], list):
        raise InputError("components must be a list", path=str(record_file), pointer="/components")
    return doc, raw


def _archive_host(header: NerdmHeader, components: list[dict[str, Any]]) -> str:
    for url in [header.landingPage] + [c.get("downloadURL") for c in components[:5] if isinstance(c, dict)]:
        if isinstance(url, str) and urlparse(url).hostname:
            return str(urlparse(url).hostname)
    return "unknown"


ARCHIVE_NAMES = {"data.nist.gov": "NIST Public Data Repository"}


class RecordBuilder:
    """Collects nodes and edges for one record, each fact pinned to a SourceLocation."""

    def __init__(self, record_file: Path, raw: bytes, doc: dict[str, Any], validated: bool) -> None:
        self.record_file = record_file
        self.root = record_file.parent
        self.doc = doc
        self.file_sha = hashlib.sha256(raw).hexdigest()
        self.file_size = len(raw)
        self.provenance = "nist_bytes"  # a reconstructed catalog says so instead (ingest/catalog.py)
        self.validated = validated  # when False, structural problems the schema would name are reported here
        self._by_nerdm_id: dict[str, tuple[int, NerdmComponent, str]] = {}
        try:
            self.header = NerdmHeader.model_validate(doc)
        except ValidationError as exc:
            first = exc.errors()[0]
            ptr = "/" + "/".join(escape_pointer_token(p) for p in first["loc"])
            raise InputError(f"NERDm header field is unusable: {first['msg']}", path=str(record_file),
                             pointer=ptr) from exc
        # whether the schema check ran is part of the stamp: its defects exist only when it did
        self._start(self.header.ark, ids.record_id(self.header.ark, self.header.version), self.header.version,
                    self.header.title, [self.file_sha.encode(), b"schema" if validated else b"no-schema"])
        self._present = list_files(self.root)
        self._dirs = _subdirs(self.root)

    def _start(self, ark: str, rec_id: str, version: str | None, title: str | None, stamp_seed: list[bytes]) -> None:
        """The state every builder (NERDm, plain folder, facts catalog) collects into."""
        self.ark = ark
        self.rec_id = rec_id
        self.g = RecordGraph(rec_id, ark, version, title, self.record_file)
        self._stamp_parts: list[bytes] = [RULESET_VERSION.encode(), *stamp_seed]
        self._locations: set[str] = set()
        self._files: set[str] = set()
        self._doc_info: dict[str, tuple[str, Parsed]] = {}
        self._file_rows: dict[str, NodeRow] = {}

    # -- primitives ----------------------------------------------------------------------------
    def _owned(self, props: dict[str, Any]) -> dict[str, Any]:
        return {**props, "record_id": self.rec_id}

    def location(self, pointer: str, value: Any) -> str:
        loc = ids.location_id(self.file_sha, pointer)
        if loc not in self._locations:
            self._locations.add(loc)
            self.g.nodes.append(NodeRow(loc, (Label.SOURCE_LOCATION,), self._owned({
                "kind": "json_pointer", "path": self.record_file.name, "file_sha256": self.file_sha,
                "pointer": pointer, "span_sha256": span_sha256(value),
            })))
            self.g.edges.append(EdgeRow(Rel.IN_FILE, loc, Label.SOURCE_LOCATION, ids.file_id(self.file_sha),
                                        Label.FILE))
        return loc

    def file(self, local: LocalBytes, origin: str) -> str:
        fid = ids.file_id(local.sha256)
        if fid not in self._files:
            self._files.add(fid)
            self.g.files += 1
            row = NodeRow(fid, (Label.FILE,), {
                "sha256": local.sha256, "size": local.size, "name": local.path.name, "origin": origin,
            })
            self._file_rows[fid] = row
            self.g.nodes.append(row)
        return fid

    def defect(self, rule: str, subject: str, subject_label: Label, pointer: str, detail: str,
               path: str | None = None, location: str | None = None) -> None:
        """A defect located by a JSON pointer into the record file, or at `location` (a SourceLocation id
        already in the batch) for defects inside a payload file."""
        kind = RULES[rule]
        did = ids.defect_id(kind, subject, pointer)
        loc = location or self.location(pointer, _value_at(self.doc, pointer))
        self.g.nodes.append(NodeRow(did, (Label.DEFECT,), self._owned({
            "kind": kind.value, "rule": rule, "detail": detail, "subject": subject, "pointer": pointer,
            "path": path or self.record_file.name,
        })))
        self.g.edges.append(EdgeRow(Rel.HAS_DEFECT, subject, subject_label, did, Label.DEFECT))
        self.g.edges.append(EdgeRow(Rel.LOCATED_AT, did, Label.DEFECT, loc, Label.SOURCE_LOCATION))
        self.g.defects[kind.value] += 1

    # -- the record ----------------------------------------------------------------------------
    def build(self) -> RecordGraph:
        doc, h = self.doc, self.header
        components_raw = doc.get("components") or []
        host = _archive_host(h, components_raw)
        arch = ids.archive_id(host)
        record_file_bytes = LocalBytes(self.record_file, self.file_sha, self.file_size)
        fid = self.file(record_file_bytes, origin="nerdm")
        self.g.nodes.append(NodeRow(arch, (Label.ARCHIVE,), {"host": host, "name": ARCHIVE_NAMES.get(host, host)}))
        self.g.nodes.append(NodeRow(self.rec_id, (Label.RECORD,), self._owned({
            "ark": h.ark, "ediid": h.ediid, "version": h.version, "doi": h.doi, "title": h.title,
            "landing_page": h.landingPage, "modified": h.modified, "issued": h.issued,
            "schema": h.schema_uri, "source_path": self.record_file.name, "source_sha256": self.file_sha,
            "component_count": len(components_raw), "ingest_state": "writing",
        })))
        self.g.edges.append(EdgeRow(Rel.CONTAINS, arch, Label.ARCHIVE, self.rec_id, Label.RECORD))
        self.g.edges.append(EdgeRow(Rel.STORED_AS, self.rec_id, Label.RECORD, fid, Label.FILE,
                                    {"path": self.record_file.name}))
        self.g.edges.append(EdgeRow(Rel.LOCATED_AT, self.rec_id, Label.RECORD, self.location("", doc),
                                    Label.SOURCE_LOCATION))

        parsed: list[tuple[int, NerdmComponent, str]] = []
        by_nerdm_id: dict[str, tuple[int, NerdmComponent, str]] = {}
        for i, raw in enumerate(components_raw):
            comp = _parse_component(raw)
            if comp is None:
                # Unidentifiable entry: the schema check names it; nothing to hang a node on.
                if not self.validated:
                    self.defect("nerdm.schema", self.rec_id, Label.RECORD, f"/components/{i}",
                                "component has no string @id")
                continue
            cid = ids.component_id(self.rec_id, comp.nerdm_id)
            if comp.nerdm_id in by_nerdm_id:
                self.defect("nerdm.schema", self.rec_id, Label.RECORD, f"/components/{i}/@id",
                            f"duplicate component @id {comp.nerdm_id!r}")
                continue
            by_nerdm_id[comp.nerdm_id] = (i, comp, cid)
            parsed.append((i, comp, cid))

        folders = {c.filepath: cid for _, c, cid in parsed if c.kind is Label.SUBCOLLECTION and c.filepath}
        for i, comp, cid in parsed:
            self._component(i, comp, cid, folders, by_nerdm_id)
        self._evidence(parsed)
        self._references()

        # 64 bits of the input hash: plenty to tell two versions of a record apart, and short strings keep
        # the property store (written for every node and edge of the record) small.
        self.g.stamp = hashlib.sha256(b"\0".join(self._stamp_parts)).hexdigest()[:16]
        self._by_nerdm_id = by_nerdm_id
        _stamp(self.g.nodes, self.g.edges, self.g.stamp)
        return self.g

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
        nodes, edges = self.g.nodes[n_nodes:], self.g.edges[n_edges:]
        del self.g.nodes[n_nodes:], self.g.edges[n_edges:]
        self.g.late_elements += len(nodes) + len(edges)
        _stamp(nodes, edges, self.g.stamp)
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
        local: LocalBytes | None = None
        if is_file and comp.filepath:
            local = self._hold(comp, cid, ptr)
            props["held"] = local is not None
            props["status"] = "held" if local is not None else "not_held"
            if local is not None:
                props["sha256"] = local.sha256
                props["size"] = local.size
        self.g.nodes.append(NodeRow(cid, labels, self._owned({k: v for k, v in props.items() if v is not None})))
        self.g.edges.append(EdgeRow(Rel.HAS_COMPONENT, self.rec_id, Label.RECORD, cid, Label.COMPONENT))
        self.g.edges.append(EdgeRow(Rel.LOCATED_AT, cid, Label.COMPONENT,
                                    self.location(ptr, self.doc["components"][i]), Label.SOURCE_LOCATION))
        if comp.filepath:
            parent = posixpath.dirname(comp.filepath.rstrip("/"))
            if parent and parent in folders and folders[parent] != cid:
                self.g.edges.append(EdgeRow(Rel.PART_OF, cid, Label.COMPONENT, folders[parent], Label.SUBCOLLECTION))

        if kind is Label.DATA_FILE and declared is None:
            self.defect("nerdm.datafile.checksum", cid, Label.COMPONENT, ptr, "DataFile declares no checksum")
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
        path = self.root / comp.filepath
        if comp.filepath not in self._present and comp.filepath.rstrip("/") not in self._dirs:
            self._stamp_parts.append(f"absent:{comp.filepath}".encode())
            return None
        try:
            local = hash_file(path)
        except OSError as exc:
            reason = "is a folder" if path.is_dir() else (exc.strerror or str(exc))
            self.defect("file.read", cid, Label.COMPONENT, f"{ptr}/filepath", f"{comp.filepath}: cannot be read ({reason})",
                        path=comp.filepath)
            self.g.problems.append(InputError(f"payload cannot be read ({reason})", path=str(path)))
            self._stamp_parts.append(f"unreadable:{comp.filepath}".encode())
            return None
        self.held(path, comp.filepath, local, cid, parse=comp.kind is not Label.CHECKSUM_FILE)
        return local

    def held(self, path: Path, relpath: str, local: LocalBytes, cid: str, parse: bool = True) -> None:
        """Bytes we hold for a component: stamp them, store the File, link it, and parse it by content."""
        self._stamp_parts.append(f"held:{relpath}:{local.sha256}:{local.size}".encode())
        self.g.held += 1
        fid = self.file(local, origin="payload")
        self.g.edges.append(EdgeRow(Rel.STORED_AS, cid, Label.COMPONENT, fid, Label.FILE, {"path": relpath}))
        if parse:
            self.document(path, relpath, local, cid)

    # -- evidence objects ---------------------------------------------------------------------
    def _evidence(self, parsed: list[tuple[int, NerdmComponent, str]]) -> None:
        """One Evidence per subcollection and per root-level data file (rules in ingest/evidence.py)."""
        direct_files: Counter[str] = Counter(
            posixpath.dirname(c.filepath.rstrip("/")) for _, c, _ in parsed if c.filepath and c.kind is Label.DATA_FILE)
        for i, comp, cid in parsed:
            if not comp.filepath or comp.kind not in (Label.SUBCOLLECTION, Label.DATA_FILE):
                continue
            if comp.kind is Label.DATA_FILE and "/" in comp.filepath.strip("/"):
                continue
            info = self._doc_info.get(cid)
            kind, rule = evidence_kind(comp.filepath, comp.title, comp.mediaType, info[1].format if info else None,
                                       is_folder=comp.kind is Label.SUBCOLLECTION)
            members = direct_files[comp.filepath.rstrip("/")] if comp.kind is Label.SUBCOLLECTION else 0
            self.add_evidence(comp.filepath, kind, rule, comp.title or comp.filepath, cid,
                              [self.location(f"/components/{i}", self.doc["components"][i])],
                              provenance=self.provenance, members=members)

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
            self.g.nodes.append(NodeRow(eid, (Label.EVIDENCE,), self._owned({
                "canonical_id": eid, "kind": kind, "kind_rule": rule, "title": str(ref.get("title") or target),
                "filepath": None, "target": target, "ref_type": ref.get("refType"), "record_ark": self.ark,
                "provenance": "referenced", "available": False,
            })))
            self.g.edges.append(EdgeRow(Rel.LOCATED_AT, eid, Label.EVIDENCE, loc, Label.SOURCE_LOCATION))
            self.g.evidence[kind] += 1

    def add_evidence(self, filepath: str, kind: str, rule: str, title: str, component: str, locations: list[str],
                     provenance: str, members: int = 0) -> str:
        eid = ids.evidence_id(self.rec_id, filepath)
        self.g.nodes.append(NodeRow(eid, (Label.EVIDENCE,), self._owned({
            "canonical_id": eid, "kind": kind, "kind_rule": rule, "title": title, "filepath": filepath,
            "record_ark": self.ark, "provenance": provenance, "members": members,
            "available": provenance != "reconstructed",
        })))
        self.g.edges.append(EdgeRow(Rel.EVIDENCED_BY, eid, Label.EVIDENCE, component, Label.COMPONENT))
        for loc in locations:
            self.g.edges.append(EdgeRow(Rel.LOCATED_AT, eid, Label.EVIDENCE, loc, Label.SOURCE_LOCATION))
        self.g.evidence[kind] += 1
        return eid

    # -- payload contents ---------------------------------------------------------------------
    def document(self, path: Path, relpath: str, local: LocalBytes, subject: str) -> None:
        """Parse a held file by content; one SourceLocation per fact (IN_FILE the file), defects on `subject`."""
        parsed = parse_file(path, relpath)
        if parsed is None:
            return
        fid = ids.file_id(local.sha256)
        self.g.parsed_files[parsed.format] += 1
        self.g.facts += len(parsed.facts)
        self.g.pages += parsed.pages
        self.g.cells += parsed.cells
        self._doc_info[subject] = (relpath, parsed)
        locs: dict[str, str] = {}
        for fact in parsed.facts:
            locs[fact.locator] = self.fact_location(fact, relpath, local)
        for d in parsed.defects:
            if d.locator and d.locator in locs:
                loc = locs[d.locator]
            else:
                region = d.locator or "file"
                loc = ids.location_id(local.sha256, region)
                if loc not in self._locations:
                    self._locations.add(loc)
                    self.g.nodes.append(NodeRow(loc, (Label.SOURCE_LOCATION,), self._owned({
                        "kind": "file_region", "path": relpath, "file_sha256": local.sha256, "locator": region,
                        "span_sha256": local.sha256 if region == "file" else hashlib.sha256(b"").hexdigest(),
                    })))
                    self.g.edges.append(EdgeRow(Rel.IN_FILE, loc, Label.SOURCE_LOCATION, fid, Label.FILE))
            self.defect(d.rule, subject, Label.COMPONENT, f"{relpath}#{d.locator or 'file'}", f"{relpath}: {d.detail}",
                        path=relpath, location=loc)
        self._file_rows[fid].props.update({
            "format": parsed.format, "role": parsed.role.value, "facts": len(parsed.facts),
            "summary_json": json.dumps(parsed.summary, sort_keys=True, default=str)})

    def fact_location(self, fact: Fact, relpath: str, local: LocalBytes) -> str:
        loc = ids.location_id(local.sha256, fact.locator)
        if loc in self._locations:
            return loc
        self._locations.add(loc)
        props: dict[str, Any] = {
            "kind": fact.kind, "path": relpath, "file_sha256": local.sha256, "locator": fact.locator,
            "text": fact.text[:4000], "span_sha256": fact.span_sha256, "name": fact.name, "unit": fact.unit,
            "role": fact.role.value,
        }
        if isinstance(fact.value, (str, int, float, bool)):
            props["value"] = fact.value
        for key in ("page", "bbox", "sheet", "cell", "line", "end_line", "column", "xpath", "formula", "cached_value"):
            if fact.extra.get(key) is not None:
                props[key] = fact.extra[key]
        self.g.nodes.append(NodeRow(loc, (Label.SOURCE_LOCATION,),
                                    self._owned({k: v for k, v in props.items() if v is not None})))
        self.g.edges.append(EdgeRow(Rel.IN_FILE, loc, Label.SOURCE_LOCATION, ids.file_id(local.sha256), Label.FILE))
        return loc

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
            expected = hashlib.sha256(target_hash.encode("ascii")).hexdigest()
            if comp.checksum.hash.lower() != expected:
                self.defect("nerdm.sidecar.declared", cid, Label.COMPONENT, f"{ptr}/checksum/hash",
                            f"{comp.filepath}: declared sha256 {comp.checksum.hash} is not sha256 of "
                            f"{tcomp.filepath}'s declared digest ({expected})")


def _parse_component(raw: Any) -> NerdmComponent | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("@id"), str):
        return None
    try:
        return NerdmComponent.model_validate(raw)
    except ValidationError:
        # Keep what is well-typed; the schema check reports the rest with its JSON pointer.
        safe: dict[str, Any] = {k: v for k, v in raw.items() if k in ("@id", "filepath", "title") and isinstance(v, str)}
        types = raw.get("@type")
        if isinstance(types, list):
            safe["@type"] = [t for t in types if isinstance(t, str)]
        return NerdmComponent.model_validate(safe)


def _value_at(doc: Any, pointer: str) -> Any:
    try:
        return resolve_pointer(doc, pointer)
    except (KeyError, IndexError, ValueError, TypeError):
        return None


def _subdirs(root: Path) -> set[str]:
    """Folders under root (relative POSIX paths): a folder where a payload should be is unreadable, not absent."""
    out: set[str] = set()
    for dirpath, dirnames, _ in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        out.update(prefix + d for d in dirnames)
    return out


def _stamp(nodes: list[NodeRow], edges: list[EdgeRow], stamp: str) -> None:
    for node in nodes:
        if "record_id" in node.props:
            node.props["ingest_stamp"] = stamp
    for edge in edges:
        edge.props["ingest_stamp"] = stamp


def open_record(path: Path, validated: bool) -> RecordBuilder:
    """Find and parse the record file; raises InputError for anything unreadable."""
    record_file = find_record_file(path)
    doc, raw = read_record(record_file)
    return RecordBuilder(record_file, raw, doc, validated)


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

