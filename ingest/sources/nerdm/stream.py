"""A NERDm record too large to hold in memory, read in passes over its file and built a chunk of components at a
time, so memory does not grow with the record (issue 13: a million components under 1 GiB).

The same rows as `NerdmBuilder.build` (the class reuses its component, sidecar, defect and sealing code; the
graph is compared with the in-memory build's in tests/ingest/write/test_write_paths.py), in another order:

1. `scan`: the whole file through ijson's C parser: its JSON syntax, nesting depth, the header (every top-level
   member but `components`), the number of components, and the file's sha256. A file this pass cannot read
   (malformed, nested too deep, numbers beyond 64 bits, a second `components`) is read by the in-memory path
   instead, which reads what it can and names the rest as it always has.
2. `prepare`: the components once more, keeping per component only what later components need (its index by
   @id for duplicates and sidecar targets, subcollections, DataFiles per folder), looking at every payload the
   folder holds (hashed once; the build reuses the digest) and the ingest stamp.
3. `head`, then `chunks()`: the Record with its file, archive, references and schema findings on the record,
   then each chunk of components with their locations, files, payload facts, evidence, defects and schema
   findings, sealed and stamped. An edge to a component of a later chunk (a sidecar before the file it
   describes, a file before its subcollection) is held back and returned by `deferred()`.

Between the passes the file must not change: each pass hashes what it reads, and a difference is an
InputError (nothing of the record is kept).
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections import Counter
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import ijson

from voe.canonical import canonical
from voe.errors import InputError
from voe.graph import EdgeRow, NodeRow, storable
from voe.ingest.builder import stamp_rows
from voe.ingest.rules import ids
from voe.ingest.sources.nerdm.build import (
    MAX_JSON_DEPTH,
    Holding,
    NerdmBuilder,
    NerdmComponent,
    NerdmHeader,
    lenient,
    parse_component,
    probe_holding,
)
from voe.ingest.sources.nerdm.schema import NerdmSchemas, Violation
from voe.ontology import Label, Rel

CHUNK_COMPONENTS = 4000  # about 26k nodes and edges for a record of files and sidecars: one write transaction
READ_BYTES = 64 << 10  # ijson's default: yajl is three times slower fed 1 MiB at a time
_BOM = b"\xef\xbb\xbf"


# yajl reads a lone surrogate escape as "?" (or fails on a low one) where json.loads keeps it: such a file is read
# whole. A pair (a character beyond the BMP, as ensure_ascii writes it) yajl reads right. An escaped backslash
# before "u" looks like an escape here too; that file is read whole as well, which is only slower.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_PAIR_OR_SINGLE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _lone_surrogate_escape(path: Path, block: int = READ_BYTES) -> bool:
    """Whether the file holds a surrogate escape that is not half of a high-low pair (read in blocks; a match
    is judged in the block it starts in, with the next bytes in view)."""
    with path.open("rb") as f:
        carry = b""
        while True:
            data = f.read(block)
            buf = carry + data
            end = len(buf) if not data else max(0, len(buf) - 12)
            resume = end
            for m in _PAIR_OR_SINGLE.finditer(buf):
                if m.start() >= end:
                    break
                if m.end() - m.start() == 6:
                    return True
                resume = max(resume, m.end())
            if not data:
                return False
            carry = buf[resume:]


class _Hashing:
    """A binary file that hashes what is read from it (ijson reads through it) and notes surrogate escapes."""

    def __init__(self, f: IO[bytes]) -> None:
        self.f, self.sha, self.size = f, hashlib.sha256(), 0
        self.surrogates = False
        self.odd_space = False
        self._tail = b""

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.sha.update(data)
        self.size += len(data)
        if not self.surrogates and (_SURROGATE_ESCAPE.search(self._tail + data[:8]) or _SURROGATE_ESCAPE.search(data)):
            self.surrogates = True  # pairs too: scan() then looks closer
        if not self.odd_space and (b"\x0b" in data or b"\x0c" in data):
            self.odd_space = True  # yajl skips \v and \f as whitespace, json.loads refuses them
        self._tail = data[-8:]
        return data


def _open(path: Path) -> tuple[IO[bytes], _Hashing]:
    f = path.open("rb")
    hashing = _Hashing(f)
    head = f.read(3)
    hashing.sha.update(head)
    hashing.size += len(head)
    if head != _BOM:  # json.loads of utf-8-sig text skips a BOM; yajl does not
        f.seek(0)
        hashing.sha, hashing.size = hashlib.sha256(), 0
    return f, hashing


@dataclass
class Scan:
    """What the first pass learned of a record file."""

    header: dict[str, Any]
    count: int
    sha256: str
    size: int
    # whether a component other than a checksum file declares a checksum hash: the build's choice between
    # missing_checksum and no_checksums_declared needs the whole list (ingest/rules/defects.py)
    declares_checksums: bool = False


class NotStreamable(Exception):
    """The first pass cannot read the file the way the streamed build would; the in-memory path reads it."""


_START = frozenset({"start_map", "start_array"})
_END = frozenset({"end_map", "end_array"})


def scan(path: Path) -> Scan:
    """Pass 1. Raises NotStreamable for anything the in-memory reader should judge (and name)."""
    f, hashing = _open(path)
    header: dict[str, Any] = {}
    count = depth = 0
    key: str | None = None
    builder: Any = None  # the header member being read
    seen_components = in_components = False
    declares = False
    item_key: str | None = None  # the component's member being read (depth 3 keys) and, in checksum, its key
    inner_key: str | None = None
    hashed = checksum_file = False  # of the component being read
    try:
        with f:
            events = ijson.basic_parse(hashing, use_float=True, buf_size=READ_BYTES)
            first = next(events, None)
            if first is None or first[0] != "start_map":
                raise NotStreamable("top level is not an object")
            depth = 1
            for event, value in events:
                if in_components:  # count the items, hold none of them; note whether any declares a checksum
                    if event in _START:
                        depth += 1
                        if depth == 3:
                            count += 1
                            hashed = checksum_file = False
                        elif depth > MAX_JSON_DEPTH:
                            raise NotStreamable("nested too deep")
                    elif event in _END:
                        depth -= 1
                        if depth == 2 and event == "end_map":
                            declares = declares or (hashed and not checksum_file)
                        in_components = depth > 1
                    elif depth == 2:
                        count += 1
                    elif event == "map_key" and depth == 3:
                        item_key = value
                    elif event == "map_key" and depth == 4:
                        inner_key = value
                    elif depth == 4 and item_key == "@type" and value == "nrdp:ChecksumFile":
                        checksum_file = True
                    elif depth == 3 and item_key == "@type" and value == "nrdp:ChecksumFile":
                        checksum_file = True  # a bare string @type: the in-memory rule reads it as a sequence
                    elif depth == 4 and item_key == "checksum" and inner_key == "hash" and value:
                        hashed = True
                    continue
                if builder is not None:
                    builder.event(event, value)
                    if event in _START:
                        depth += 1
                        if depth > MAX_JSON_DEPTH:
                            raise NotStreamable("nested too deep")
                    elif event in _END:
                        depth -= 1
                        if depth == 1:
                            header[str(key)] = builder.value  # a repeated key: the last one, as json.loads
                            builder = None
                    continue
                if event == "map_key":
                    key = value
                    if key.startswith("components."):  # ijson's prefix of the components' items
                        raise NotStreamable(f"a top-level key {key!r}")
                    if key == "components":
                        if seen_components:
                            raise NotStreamable("two components members")
                        seen_components = True
                elif event == "end_map":
                    depth = 0
                elif key == "components":
                    if event != "start_array":
                        raise NotStreamable("components is not a list")
                    in_components, depth = True, 2
                elif event in _START:
                    builder = ijson.ObjectBuilder()
                    builder.event(event, value)
                    depth = 2
                else:
                    header[str(key)] = value
    except (ijson.JSONError, UnicodeDecodeError) as exc:
        raise NotStreamable(str(exc).splitlines()[0]) from exc
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror or exc}", path=str(path)) from exc
    if hashing.odd_space:
        raise NotStreamable("a vertical tab or form feed, which json.loads does not take as whitespace")
    if not seen_components:
        raise NotStreamable("no components member")  # a small record; its whole-file span has no components
    if hashing.surrogates and _lone_surrogate_escape(path):
        raise NotStreamable("a surrogate escape (\\uD800-\\uDFFF), which yajl does not keep")
    return Scan(header, count, hashing.sha.hexdigest(), hashing.size, declares)


def _key(nerdm_id: str) -> bytes:
    # 16 bytes per component instead of its @id: a million of them fit in tens of MB
    return hashlib.blake2b(nerdm_id.encode("utf-8", "surrogatepass"), digest_size=16).digest()


_HEX = frozenset("0123456789abcdefABCDEF")


def _pack(i: int, checksum_hash: str | None, filepath: str | None) -> int | bytes:
    """What the index keeps of a component: its position, and for a sidecar that describes it its declared digest
    and path, in one bytes value (about 100 bytes a component where objects took 250; a 64-hex digest as its 32
    bytes, since sidecars compare digests lowercased)."""
    if not checksum_hash and filepath is None:
        return i
    out = bytearray(i.to_bytes(5, "little"))
    flags = 0
    if checksum_hash:
        if len(checksum_hash) == 64 and _HEX.issuperset(checksum_hash):
            flags |= 3
            digest = bytes.fromhex(checksum_hash)
        else:
            flags |= 1
            text = checksum_hash.encode("utf-8", "surrogatepass")
            digest = len(text).to_bytes(4, "little") + text
    if filepath is not None:
        flags |= 4
    out.append(flags)
    if checksum_hash:
        out += digest
    if filepath is not None:
        out += filepath.encode("utf-8", "surrogatepass")
    return bytes(out)


def _unpack(value: int | bytes) -> tuple[int, str | None, str | None]:
    """(position, declared digest, filepath) of `_pack`."""
    if isinstance(value, int):
        return value, None, None
    i, flags, at = int.from_bytes(value[:5], "little"), value[5], 6
    checksum_hash = None
    if flags & 3 == 3:
        checksum_hash, at = value[at : at + 32].hex(), at + 32
    elif flags & 1:
        n = int.from_bytes(value[at : at + 4], "little")
        checksum_hash, at = value[at + 4 : at + 4 + n].decode("utf-8", "surrogatepass"), at + 4 + n
    filepath = value[at:].decode("utf-8", "surrogatepass") if flags & 4 else None
    return i, checksum_hash, filepath


class _Targets:
    """`by_nerdm_id` of NerdmBuilder._sidecar, from the first pass's index: (index, component, id)."""

    def __init__(self, stream: NerdmStream) -> None:
        self.stream = stream
        self._filepaths: set[str] | None = None

    def filepaths(self) -> set[str]:
        """Every component's filepath (read from the index once, when a checksum file names no component)."""
        if self._filepaths is None:
            self._filepaths = {fp for value in self.stream._index.values() if (fp := _unpack(value)[2]) is not None}
        return self._filepaths

    def get(self, nerdm_id: str) -> tuple[int, NerdmComponent, str] | None:
        found = self.stream._index.get(_key(nerdm_id))
        if found is None:
            return None
        index, checksum_hash, filepath = _unpack(found)
        comp = NerdmComponent.model_validate({"@id": nerdm_id, "filepath": filepath, "checksum": {"hash": checksum_hash}})
        tid = ids.component_id(self.stream.rec_id, nerdm_id)
        self.stream._later[tid] = index
        return index, comp, tid


class NerdmStream(NerdmBuilder):
    """A NERDm record folder whose record file is read in passes (module docstring). Use: `prepare()`, then
    `head()`, each of `chunks()`, `deferred()`; `g` holds the counters (its node and edge lists only the rows of
    the latest step)."""

    def __init__(self, record_file: Path, scanned: Scan, schemas: NerdmSchemas | None,
                 chunk_components: int | None = None) -> None:
        self.scanned = scanned
        self.count = scanned.count
        self.chunk_components = chunk_components or CHUNK_COMPONENTS
        self._check = schemas.checker() if schemas is not None else None
        self._shell_found: list[Violation] = []
        # the components list is as long as the record's, filled with the current chunk's components only, so
        # JSON pointers into them resolve as in the whole document (8 bytes per component)
        self._window: list[Any] = [None] * scanned.count
        header = scanned.header
        try:  # read_record's test, to the letter
            looks_nerdm = "nerdm" in str(header.get("_schema", "")) or any(
                str(t).startswith(("nrd:", "nrdp:")) for t in (header.get("@type") or []))
        except TypeError:
            looks_nerdm = False
        if not isinstance(header.get("@id"), str) or not looks_nerdm:
            raise NotStreamable("not a NERDm record")  # read_record says which check failed
        if storable(record_file.name)[1]:
            raise NotStreamable("a file name Neo4j cannot store as it is")  # its defect is located at the root
        self._open(record_file, {**header, "components": self._window}, scanned.sha256, scanned.size,
                   schemas is not None)
        self._declares_checksums = scanned.declares_checksums  # what build() learns from the whole list
        self._index: dict[bytes, int | bytes] = {}
        self._folders: dict[str, str] = {}
        self._folder_index: dict[str, int] = {}
        self._direct_files: Counter[str] = Counter()
        self._holdings: dict[str, Holding] = {}
        self._to_parse: list[str] = []  # held data files, in component order (ingest/payloads/parse_ahead.py)
        self._later: dict[str, int] = {}
        self._deferred: list[EdgeRow] = []
        # the span hash of the whole record file, RFC 8785 built from its parts as the chunks pass (the header's
        # canonical form around the components' own)
        self._whole: Any = None
        self._whole_after = b""
        self._whole_span = ""
        self._canonical: dict[str, bytes] = {}  # the current chunk's components, by JSON pointer
        self._first: list[Any] = []  # the first five components: the archive is named by their download host
        self.kinds: Counter[str] = Counter()  # components by kind, from the first pass

    def _read_header(self, doc: dict[str, Any]) -> tuple[NerdmHeader, dict[str, Any]]:
        try:
            return lenient(NerdmHeader, doc)
        except Exception as exc:  # noqa: BLE001 - the in-memory path names the field (pipeline falls back)
            raise NotStreamable(f"header: {exc}") from exc

    # -- pass 2 ----------------------------------------------------------------------------------
    def _items(self) -> Iterator[Any]:
        """The components, in order, from a fresh read of the file; the file must still be the one scanned."""
        f, hashing = _open(self.record_file)
        with f:
            try:
                for i, item in enumerate(ijson.items(hashing, "components.item", use_float=True, buf_size=READ_BYTES)):
                    if i >= self.count:
                        raise InputError("changed while it was read (more components than the first read found); "
                                         "run again", path=str(self.record_file))
                    yield item
                while hashing.read(READ_BYTES):
                    pass
            except (ijson.JSONError, UnicodeDecodeError, OSError) as exc:
                raise InputError(f"changed or became unreadable while it was read ({exc}); run again",
                                 path=str(self.record_file)) from exc
        if hashing.sha.hexdigest() != self.file_sha:
            raise InputError("changed while it was read (its sha256 differs between two reads); run again",
                             path=str(self.record_file))

    def prepare(self) -> str:
        """Pass 2: the index, the folder's payloads, the stamp and the whole file's span hash. Returns the stamp."""
        stamp = hashlib.sha256()
        parts = self._stamp_parts
        stamp.update(b"\0".join(parts))
        held_bytes = {self.file_sha}
        for i, raw in enumerate(self._items()):
            if i < 5:
                self._first.append(raw)
            read = parse_component(raw)
            if read is None:
                continue
            comp = read[0]
            key = _key(comp.nerdm_id)
            if key in self._index:
                continue  # a duplicate @id: reported and skipped by the build, as NerdmBuilder does
            cid = ids.component_id(self.rec_id, comp.nerdm_id)
            declared = comp.checksum.hash if comp.checksum else None
            self._index[key] = _pack(i, declared, comp.filepath)
            kind = comp.kind
            self.kinds[kind.value] += 1
            if kind is Label.SUBCOLLECTION and comp.filepath:
                self._folders[comp.filepath] = cid  # the last of a filepath, as the in-memory dict
                self._folder_index[cid] = i
            if comp.filepath and kind is Label.DATA_FILE:
                self._direct_files[posixpath.dirname(comp.filepath.rstrip("/"))] += 1
            part = None
            if kind in (Label.DATA_FILE, Label.CHECKSUM_FILE) and comp.filepath:
                h = probe_holding(self, comp.filepath)
                part = h.stamp_part(comp.filepath)
                if h.state not in ("special", "absent"):
                    self._holdings[cid] = h
                if h.local is not None:
                    if kind is Label.DATA_FILE:
                        self._to_parse.append(comp.filepath)
                    # the same bytes twice: the in-memory build keeps the first File row and facts' locations
                    # (its name and paths), which chunks written apart would not; such a record is read whole
                    if h.local.sha256 in held_bytes:
                        raise NotStreamable(f"{comp.filepath} holds the same bytes as another file of the record")
                    held_bytes.add(h.local.sha256)
            elif kind is Label.SUBCOLLECTION and comp.filepath:
                special = self._special_entry(comp.filepath)
                if special is not None:
                    part = f"special:{comp.filepath}:{special[1]}".encode("utf-8", "surrogatepass")
            if part is not None:
                stamp.update(b"\0" + part)
        self.g.stamp = stamp.hexdigest()[:16]
        return self.g.stamp

    def _holding(self, filepath: str, cid: str) -> Holding:
        held = self._holdings.pop(cid, None)
        return held if held is not None else probe_holding(self, filepath)

    def _span(self, pointer: str, value: Any) -> str:
        if pointer == "":
            if self._whole is not None:
                raise AssertionError("the whole record's span is known after the last chunk")  # pragma: no cover
            return self._whole_span
        text = self._canonical.get(pointer)
        return hashlib.sha256(text).hexdigest() if text is not None else super()._span(pointer, value)

    # -- pass 3 ----------------------------------------------------------------------------------
    def _fresh_rows(self) -> None:
        """Rows and per-row state start again for each step (what later steps need is in the index)."""
        self.g.nodes, self.g.edges = [], []
        self._locations, self._files, self._file_rows = set(), set(), {}
        self._origins, self._located, self._doc_info = {}, None, {}
        self._unread, self._absent_status = {}, {}
        self._canonical = {}
        self._stamp_parts = []  # the stamp was taken in the first pass

    def _finish_rows(self, first: bool) -> tuple[list[NodeRow], list[EdgeRow]]:
        self._seal(first=first)
        stamp_rows(self.g.nodes, self.g.edges, self.g.stamp)
        nodes, edges = self.g.nodes, self.g.edges
        self.g.nodes, self.g.edges = [], []
        return nodes, edges

    def head(self) -> tuple[list[NodeRow], list[EdgeRow]]:
        """The Record, its file and archive."""
        self._fresh_rows()
        self._record_rows(self._first, self.count, located=False)  # its location comes last (deferred)
        sentinel = f"\0voe-components-{self.file_sha}"
        marker = b'"components":' + canonical(sentinel)
        before, found, self._whole_after = canonical({**self.scanned.header, "components": sentinel}).partition(marker)
        if not found:  # pragma: no cover - a key `components` at the top level is canonical as written
            raise NotStreamable("the record's canonical form has no components member")
        self._whole = hashlib.sha256(before + b'"components":[')
        if self._check is not None:
            self._check.shell({**self.scanned.header, "components": []})
            # a finding may be at the record's root, located at the whole file, whose span is known at the end
            self._shell_found = self._check.take()
        return self._finish_rows(first=True)

    def chunks(self) -> Generator[tuple[list[NodeRow], list[EdgeRow]], None, None]:
        """Each chunk of components as sealed, stamped rows; edges to later components are held back."""
        batch: list[tuple[int, Any]] = []
        with self._parsing_ahead(self._to_parse):
            for i, raw in enumerate(self._items()):
                batch.append((i, raw))
                if len(batch) >= self.chunk_components:
                    yield self._chunk(batch)
                    batch = []
            if batch:
                yield self._chunk(batch)

    def _chunk(self, batch: list[tuple[int, Any]]) -> tuple[list[NodeRow], list[EdgeRow]]:
        self._fresh_rows()
        self._later = {}
        window = self._window
        for i, raw in batch:
            window[i] = raw
            # one canonical form per component: the whole file's span, the component's location, uniqueness
            text = self._canonical[f"/components/{i}"] = canonical(raw)
            self._whole.update(b"," + text if i else text)
        targets = _Targets(self)
        for i, raw in batch:
            read = parse_component(raw)
            if read is None:
                if not self.validated:
                    self.defect("nerdm.schema", self.rec_id, Label.RECORD, f"/components/{i}",
                                "component has no string @id")
            else:
                comp, unread = read
                if unread:
                    self._unread[i] = unread
                cid = ids.component_id(self.rec_id, comp.nerdm_id)
                if self._first_index(comp.nerdm_id) != i:
                    self.defect("nerdm.schema", self.rec_id, Label.RECORD, f"/components/{i}/@id",
                                f"duplicate component @id {comp.nerdm_id!r}")
                else:
                    self._component(i, comp, cid, self._folders, targets)  # type: ignore[arg-type]
                    self._one_evidence(i, comp, cid, self._direct_files)  # DataFiles per folder: first pass
            if self._check is not None:
                self._check.component(i, raw, self._canonical[f"/components/{i}"])
        if self._check is not None:
            self._schema_found(self._check.take())
        end = batch[-1][0]
        ahead = {id(e) for e in self.g.edges if e.rel in (Rel.PART_OF, Rel.DESCRIBES)
                 and (self._folder_index.get(e.dst, -1) if e.rel == Rel.PART_OF else self._later.get(e.dst, -1)) > end}
        nodes, edges = self._finish_rows(first=False)
        for i, _ in batch:
            window[i] = None
        if ahead:
            self._deferred += [e for e in edges if id(e) in ahead]
            edges = [e for e in edges if id(e) not in ahead]
        return nodes, edges

    def deferred(self) -> tuple[list[NodeRow], list[EdgeRow]]:
        """After every chunk: the Record's location in its file (its span hash covers every component), its
        references, the schema's findings on the record itself (one may be located there) and the edges to
        components of a later chunk, sealed and stamped."""
        self._fresh_rows()
        self._whole.update(b"]" + self._whole_after)
        self._whole_span, self._whole = self._whole.hexdigest(), None
        self.g.edges.append(EdgeRow(Rel.LOCATED_AT, self.rec_id, Label.RECORD, self.location("", self.doc),
                                    Label.SOURCE_LOCATION))
        self._references()  # last, as in the in-memory build: a reference's evidence id may be a folder's too
        self._schema_found(self._shell_found)
        nodes, edges = self._finish_rows(first=False)
        edges += self._deferred
        self._deferred = []
        return nodes, edges

    def _schema_found(self, violations: list[Violation]) -> None:
        """Schema findings as defects (NerdmBuilder.schema_defects, one chunk at a time)."""
        for v in violations:
            subject, label = self.rec_id, Label.RECORD
            parts = v.pointer.split("/")
            if len(parts) > 2 and parts[1] == "components" and parts[2].isdigit():
                raw_comp = self._window[int(parts[2])]
                nid = raw_comp.get("@id") if isinstance(raw_comp, dict) else None
                if isinstance(nid, str) and self._first_index(nid) == int(parts[2]):
                    subject, label = ids.component_id(self.rec_id, nid), Label.COMPONENT
            self.defect("nerdm.schema", subject, label, v.pointer, f"{v.message} (schema {v.schema})")

    def _first_index(self, nerdm_id: str) -> int | None:
        found = self._index.get(_key(nerdm_id))
        return None if found is None else found if isinstance(found, int) else int.from_bytes(found[:5], "little")


def open_streamed(record_file: Path, schemas: NerdmSchemas | None,
                  chunk_components: int | None = None) -> NerdmStream:
    """Passes 1 and 2 and the builder; raises NotStreamable when the in-memory path should read the file."""
    stream = NerdmStream(record_file, scan(record_file), schemas, chunk_components)
    stream.prepare()
    return stream
