"""What every record builder shares (NERDm record, plain folder, facts catalog): the record's state, source
locations, files, defects, evidence, parsed payload documents, and the one place rows become what Neo4j
stores (`_seal`). The three builders are siblings on this core (ingest/sources/nerdm/build.py, ingest/sources/folder.py,
ingest/sources/catalog.py); nothing here touches Neo4j.
"""

from __future__ import annotations

import hashlib
import json
import math
import posixpath
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from voe import collector
from voe.errors import InputError
from voe.graph import (
    INT64_MAX,
    INT64_MIN,
    MAX_KEY_BYTES,
    MAX_TEXT_CHARS,
    EdgeRow,
    NodeRow,
    json_text,
    storable,
    storable_key,
)
from voe.ingest.payloads.files import (
    SPECIAL_NAMES,
    LocalBytes,
    resolve_pointer,
    span_sha256,
)
from voe.ingest.payloads.parse_ahead import ParseAhead, Workers
from voe.ingest.payloads.parsers.model import Fact, Parsed
from voe.ingest.rules import ids
from voe.ingest.rules.captions import add_captions
from voe.ingest.rules.defects import RULES
from voe.ingest.rules.evidence import evidence_kind
from voe.ingest.sources.measurements import measurement_evidence
from voe.ingest.sources.releases import ParsedFile
from voe.ontology import Label, Rel

# part of the ingest stamp: changing a rule re-stamps (and re-checks) records; 9: span hashes over RFC 8785 bytes
RULESET_VERSION = "nerdm-18"


# the libraries whose reading of a file becomes facts: an upgrade of one re-stamps (and re-reads) every record,
# instead of keeping the facts the old version read under the same stamp
RECORD_LIBRARIES = ("jsonschema",)  # the record builder's own: NERDm validation


def parser_libraries() -> tuple[str, ...]:
    """What the ingest stamp pins: the libraries every registered parser names, then the record builder's."""
    from voe.ingest.payloads.parsers import registry

    return (*registry.libraries(), *RECORD_LIBRARIES)


@lru_cache(maxsize=1)
def parser_versions() -> bytes:
    from importlib.metadata import PackageNotFoundError, version

    def one(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "absent"

    return ";".join(f"{n}={one(n)}" for n in parser_libraries()).encode()


# Properties that are ids or indexed (cypher/schema.cypher), or name an id: over-long values are hashed keys
KEY_PROPS = frozenset({"id", "record_id", "filepath", "kind", "sha256", "canonical_id", "subject"})
FULL_TEXT_PROPS = frozenset({"filepath", "kind", "sha256"})  # a hashed key keeps its text in `<prop>_full`


SILENT_LABELS = frozenset({Label.DEFECT, Label.FILE, Label.ARCHIVE})  # our own rows: made storable, no defect


MIRROR_PROPS = frozenset({"path", "record_ark"})  # repeat a filepath, the record file name or the ark: reported there


@dataclass(frozen=True)
class Origin:
    """Where a node's values come from, for the `value_not_storable` defects of `BuilderCore._seal`."""

    pointer: str  # JSON pointer of the object in the record file, or `<path>#<locator>` for payload values
    subject: str  # the node the defect is on, and its label
    label: Label
    location: str | None = None  # payload values: their SourceLocation; None: located at the pointer
    fields: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # property -> record keys under pointer


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
    streamed_elements: int = 0  # a streamed record's rows (its `nodes` and `edges` hold none of them at the end)
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


def _text(value: str | None) -> str | None:
    """A string as Neo4j (and a JSON report) can hold it: lone surrogates escaped."""
    return None if value is None else storable(value)[0]


EMPTY_FIELDS: Mapping[str, tuple[str, ...]] = {}


def _storable_row(row: NodeRow, scalars: Mapping[str, tuple[str, ...]] = EMPTY_FIELDS) -> list[tuple[str, str]]:
    """Make the row's id and properties storable in place; the properties that changed, and why. A list in
    one of `scalars` (properties read from one record value) is stored as its JSON text too."""
    changes: list[tuple[str, str]] = []
    id_note = None
    if not (row.id.isascii() and len(row.id) <= MAX_KEY_BYTES):
        row.id, id_note = storable_key(row.id)
    extra: dict[str, Any] = {}
    for key, value in row.props.items():
        kind = type(value)
        if kind is str:
            if value.isascii() and (len(value) <= MAX_KEY_BYTES or key not in KEY_PROPS):
                continue
        elif kind is int:
            if INT64_MIN <= value <= INT64_MAX:
                continue
        elif value is None or kind is bool or (kind is float and math.isfinite(value)):
            continue
        if key in KEY_PROPS and kind is str:
            safe, why = storable_key(value)
            if why and key in FULL_TEXT_PROPS and len(safe) < len(value):
                extra[f"{key}_full"] = storable(value[:MAX_TEXT_CHARS])[0]
        elif kind is list and key in scalars:
            safe, why = json_text(value), "is a list where the record has one value, stored as its canonical JSON text"
        else:
            safe, why = storable(value)
        if why:
            extra[key] = safe
            changes.append((key, why))
    row.props.update(extra)
    if id_note:  # last: the property the id is made of says more
        changes.append(("id", id_note))
    return changes


def _value_at(doc: Any, pointer: str) -> Any:
    try:
        return resolve_pointer(doc, pointer)
    except (KeyError, IndexError, ValueError, TypeError):
        return None


def stamp_rows(nodes: list[NodeRow], edges: list[EdgeRow], stamp: str) -> None:
    """The stamp on a record's rows, and each node's Browser caption: every builder ends here, whole or
    streamed, so the caption is made from the node's final properties the same way on every path."""
    add_captions(nodes)
    for node in nodes:
        if "record_id" in node.props:
            node.props["ingest_stamp"] = stamp
    for edge in edges:
        edge.props["ingest_stamp"] = stamp


class BuilderCore:
    """Collects nodes and edges for one record, each fact pinned to a SourceLocation. A builder sets the
    attributes below, then calls `_start`; `_seal` runs last."""

    POINTER_LOCATED = True  # defects without a location are located by JSON pointer into the record file
    SOURCE_FORMAT = "nerdm"  # what the record was read from (the manifest counts decisions per source format)
    record_file: Path  # the file JSON pointers point into (a plain folder: its listing, never read)
    root: Path
    doc: Any  # the JSON those pointers index
    file_sha: str
    provenance: str
    _entries: dict[str, str]  # what the folder holds (ingest.payloads.files.list_entries); symlinks listed, never followed
    _any_special: bool
    on_document: Callable[[str], None] | None = None  # called with each held file's path before it is parsed
    parse_workers: Workers | None = None  # the ingest call's parser processes (else each build forks its own)

    def _fallback_origin(self) -> Origin:
        """Where the Record node's own values are reported."""
        raise NotImplementedError

    def build(self) -> RecordGraph:
        """The record's rows, sealed and stamped."""
        raise NotImplementedError

    def _start(self, ark: str, rec_id: str, version: str | None, title: str | None, stamp_seed: list[bytes]) -> None:
        """The state every builder (NERDm, plain folder, facts catalog) collects into."""
        self.ark = ark
        # the record id is a key every node of the record carries: storable from the start (_seal makes the
        # rest storable; the same function, so every reference to it agrees)
        self.rec_id, self._rec_id_note = storable_key(rec_id)
        self.g = RecordGraph(self.rec_id, _text(ark) or "", _text(version), _text(title), self.record_file)
        self._stamp_parts: list[bytes] = [RULESET_VERSION.encode(), parser_versions(), *stamp_seed]
        self._locations: set[str] = set()
        self._files: set[str] = set()
        self._doc_info: dict[str, tuple[str, Parsed]] = {}
        self._doc_local: dict[str, LocalBytes] = {}
        self._ahead: ParseAhead | None = None
        self._file_rows: dict[str, NodeRow] = {}
        self._origins: dict[str, Origin] = {}
        self._located: dict[str, str] | None = None  # node id -> its first LOCATED_AT, built when needed
        self._unread: dict[int, dict[str, Any]] = {}  # component index -> values the model could not read
        self._absent_status: dict[str, str] = {}  # component id -> why its bytes are not held, when not absent

    # -- primitives ----------------------------------------------------------------------------
    @property
    def record_name(self) -> str:
        """How locations name the record file: its name (a collection of records: its path in the collection)."""
        return getattr(self, "_record_name", None) or self.record_file.name

    def _owned(self, props: dict[str, Any]) -> dict[str, Any]:
        return {**props, "record_id": self.rec_id}

    def location(self, pointer: str, value: Any) -> str:
        loc = ids.location_id(self.file_sha, pointer)
        if loc not in self._locations:
            self._locations.add(loc)
            self.g.nodes.append(NodeRow(loc, (Label.SOURCE_LOCATION,), self._owned({
                "kind": "json_pointer", "path": self.record_name, "file_sha256": self.file_sha,
                "pointer": pointer, "span_sha256": self._span(pointer, value),
            })))
            self.g.edges.append(EdgeRow(Rel.IN_FILE, loc, Label.SOURCE_LOCATION, ids.file_id(self.file_sha),
                                        Label.FILE))
        return loc

    def _span(self, pointer: str, value: Any) -> str:
        """The span hash of the record file's value at `pointer` (a streamed record knows its whole-file one
        without holding the file)."""
        return span_sha256(value)

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
        already in the batch) for defects inside a payload file. In a plain folder a defect with no
        `location` (an entry with no bytes to point into: a symlink, a FIFO) has no SourceLocation."""
        kind = RULES[rule]
        did = ids.defect_id(kind, subject, pointer)
        loc = location or (self.location(pointer, _value_at(self.doc, pointer)) if self.POINTER_LOCATED else None)
        self.g.nodes.append(NodeRow(did, (Label.DEFECT,), self._owned({
            "kind": kind.value, "rule": rule, "detail": detail, "subject": subject, "pointer": pointer,
            "path": path or self.record_name,
        })))
        self.g.edges.append(EdgeRow(Rel.HAS_DEFECT, subject, subject_label, did, Label.DEFECT))
        if loc is not None:
            self.g.edges.append(EdgeRow(Rel.LOCATED_AT, did, Label.DEFECT, loc, Label.SOURCE_LOCATION))
        self.g.defects[kind.value] += 1

    def _seal(self, start_nodes: int = 0, start_edges: int = 0, first: bool | None = None) -> None:
        """The one place the builder's rows become what Neo4j stores; every builder calls it last, before
        the stamp (and schema_defects on its late rows). Each property value is made storable
        (voe.graph.storable; ids and indexed properties by storable_key, a hashed key keeping its text in
        `<prop>_full` for filepath, kind and sha256), and each record value that had to change is one
        `value_not_storable` defect (rule `graph.value`) on the node it came from (`Origin`), at its JSON
        pointer or its place in a payload. Our own rows (defects, files, archives, JSON-pointer locations)
        and every edge are made storable the same way without a defect of their own. `first`: whether these
        are the record's first rows (default: they start at 0), where the record id's own defect goes."""
        end = len(self.g.nodes)
        for row in self.g.nodes[start_nodes:end]:
            if row.id == self.rec_id and Label.RECORD in row.labels:
                row.props.setdefault("source_format", self.SOURCE_FORMAT)
        reported: set[tuple[str, str]] = set()
        if self._rec_id_note and (start_nodes == 0 if first is None else first):
            self._value_defect(self._fallback_origin(), "id", self._rec_id_note, reported)
        record_row = None
        for row in self.g.nodes[start_nodes:end]:
            raw_id = row.id
            if raw_id == self.rec_id:
                record_row = row
            origin = self._origins.get(raw_id)
            if origin is None and raw_id == self.rec_id and Label.RECORD in row.labels:
                origin = self._fallback_origin()
            changes = _storable_row(row, origin.fields if origin is not None else EMPTY_FIELDS)
            changes = [(prop, note) for prop, note in changes if prop not in MIRROR_PROPS]
            if not changes or SILENT_LABELS.intersection(row.labels):
                continue
            if origin is None:  # e.g. a release-notes Evidence: reported where it is located
                located = self._located_at(raw_id)
                origin = self._origins.get(located) if located is not None else None
                if origin is None:
                    continue
            for prop, note in changes:
                self._value_defect(origin, prop, note, reported)
        for row in self.g.nodes[end:]:
            _storable_row(row)
        for edge in self.g.edges[start_edges:]:
            if not (edge.src.isascii() and len(edge.src) <= MAX_KEY_BYTES):
                edge.src = storable_key(edge.src)[0]
            if not (edge.dst.isascii() and len(edge.dst) <= MAX_KEY_BYTES):
                edge.dst = storable_key(edge.dst)[0]
            for key, value in edge.props.items():
                if type(value) is not str or not value.isascii():
                    safe, changed = storable(value)
                    if changed:
                        edge.props[key] = safe
        if record_row is not None and Label.RECORD in record_row.labels:
            title = record_row.props.get("title")
            self.g.title = title if isinstance(title, str) else None

    def _located_at(self, node_id: str) -> str | None:
        """The first SourceLocation the node is LOCATED_AT (edges still carry the ids as built)."""
        if self._located is None:
            self._located = {}
            for e in self.g.edges:
                if e.rel == Rel.LOCATED_AT:
                    self._located.setdefault(e.src, e.dst)
        return self._located.get(node_id)

    def _value_defect(self, origin: Origin, prop: str, why: str, reported: set[tuple[str, str]]) -> None:
        pointer = origin.pointer
        keys = origin.fields.get(prop, ())
        if keys and self.POINTER_LOCATED:
            key = next((k for k in keys if _value_at(self.doc, f"{origin.pointer}/{k}") is not None), keys[0])
            pointer = f"{origin.pointer}/{key}"
        if (origin.subject, pointer) in reported:
            return
        reported.add((origin.subject, pointer))
        self.defect("graph.value", origin.subject, origin.label, pointer,
                    f"{pointer or '/'}: the value of {prop} {why}", location=origin.location)

    @contextmanager
    def _parsing_ahead(self, relpaths: Iterable[str]) -> Iterator[None]:
        """While the block runs, the files named (in the order `document` will take them) are parsed ahead in
        worker processes (ingest/payloads/parse_ahead.py): the ingest's (`parse_workers`), else the block's own."""
        workers = self.parse_workers or Workers()
        self._ahead = ParseAhead(self.root, relpaths, workers)
        try:
            yield
        finally:
            self._ahead.close()
            self._ahead = None
            if workers is not self.parse_workers:
                workers.close()

    def _regular(self, relpath: str) -> bool:
        """Whether the folder listing holds a regular file at relpath, with nothing special above it."""
        return self._entries.get(relpath) == "file" and self._special_entry(relpath) is None

    def _special_entry(self, relpath: str) -> tuple[str, str] | None:
        """The entry at relpath, or the folder above it, that is not a regular file or folder (a symlink, a
        FIFO, a socket, a device): its path and kind. Nothing under such an entry is read."""
        if not self._any_special:
            return None
        p = relpath.rstrip("/")
        while p:
            kind = self._entries.get(p)
            if kind is not None and kind not in ("file", "dir"):
                return p, kind
            p = posixpath.dirname(p)
        return None

    def _not_regular(self, relpath: str, cid: str, ptr: str, entry: str, kind: str) -> None:
        """A symlink or special file where the record puts a payload: not followed, not opened, a defect."""
        what = SPECIAL_NAMES.get(kind, SPECIAL_NAMES["other"])
        where = f"{relpath}: is {what}" if entry == relpath.rstrip("/") else f"{relpath}: lies under {entry}, {what}"
        self.defect("file.special", cid, Label.COMPONENT, f"{ptr}/filepath", f"{where}; nothing of it is read",
                    path=relpath)
        self._absent_status[cid] = "not_a_regular_file"
        self._stamp_parts.append(f"special:{relpath}:{kind}".encode("utf-8", "surrogatepass"))

    def held(self, path: Path, relpath: str, local: LocalBytes, cid: str, parse: bool = True) -> None:
        """Bytes we hold for a component: stamp them, store the File, link it, and parse it by content."""
        self._stamp_parts.append(f"held:{relpath}:{local.sha256}:{local.size}".encode("utf-8", "surrogatepass"))
        self.g.held += 1
        fid = self.file(local, origin="payload")
        self.g.edges.append(EdgeRow(Rel.STORED_AS, cid, Label.COMPONENT, fid, Label.FILE, {"path": relpath}))
        if parse:
            self.document(path, relpath, local, cid)

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

    def add_attested(self, target_path: str, locations: list[str]) -> str:
        """An item the record attests but does not list (a checksum file describes it): an Evidence with no
        EVIDENCED_BY, so a request for it answers `unavailable`, located where the record attests it."""
        name = target_path.rstrip("/").rsplit("/", 1)[-1] or target_path
        kind, rule = evidence_kind(target_path, None, None, None)
        eid = ids.evidence_id(self.rec_id, target_path)
        self.g.nodes.append(NodeRow(eid, (Label.EVIDENCE,), self._owned({
            "canonical_id": eid, "kind": kind, "kind_rule": rule, "title": name, "filepath": target_path,
            "record_ark": self.ark, "provenance": "attested", "available": False,
        })))
        for loc in locations:
            self.g.edges.append(EdgeRow(Rel.LOCATED_AT, eid, Label.EVIDENCE, loc, Label.SOURCE_LOCATION))
        self.g.evidence[kind] += 1
        return eid

    # -- payload contents ---------------------------------------------------------------------
    def document(self, path: Path, relpath: str, local: LocalBytes, subject: str) -> None:
        """Parse a held file by content; one SourceLocation per fact (IN_FILE the file), defects on `subject`."""
        if self.on_document is not None:
            self.on_document(relpath)
        if self._ahead is None:  # a file outside a parsing-ahead block: a worker of its own, under the same limits
            with self._parsing_ahead([relpath]):
                assert self._ahead is not None
                parsed = self._ahead.take(path, relpath, local)
        else:
            parsed = self._ahead.take(path, relpath, local)
        if parsed is None:
            return
        if parsed.pages:
            collector.after_large_parse()
        fid = ids.file_id(local.sha256)
        self.g.parsed_files[parsed.format] += 1
        self.g.facts += len(parsed.facts)
        self.g.pages += parsed.pages
        self.g.cells += parsed.cells
        self._doc_info[subject] = (relpath, parsed)
        self._doc_local[subject] = local
        locs: dict[str, str] = {}
        for fact in parsed.facts:
            loc = locs[fact.locator] = self.fact_location(fact, relpath, local)
            if loc not in self._origins:  # a parsed value Neo4j cannot store is a defect of the file's component
                self._origins[loc] = Origin(f"{relpath}#{fact.locator}", subject, Label.COMPONENT, location=loc)
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

    def measurement_tables(self, files: dict[str, str]) -> None:
        """Evidence for the measurements the record's held workbooks describe (ingest/sources/measurements.py),
        once every file is parsed. `files`: the record's file names -> the evidence item holding each."""
        workbooks = [ParsedFile(relpath, parsed, self._doc_local[cid])
                     for cid, (relpath, parsed) in sorted(self._doc_info.items()) if parsed.format == "xlsx"]
        if workbooks:
            measurement_evidence(self, workbooks, files)

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
