"""A file or folder of NERDm records in the shapes NIST saves them: single records, arrays of records, RMM
`/rmm/records` search results (`ResultCount`/`ResultData`), and an RMM archive of `records/`, `releasesets/` and
`versions/` (ingest/sources/nerdm/build.py reads one record folder; this reads many records at once).

- Every NERDm record found (a JSON object with a string `@id` and a NERDm `_schema` or `nrd`/`nrdp` `@type`, at
  the top of a file, in an array or in `ResultData`) is a snapshot of one identifier (its `@id` without a
  `/pdr:v/<version>` suffix) and version (`version`, else the suffix). Snapshots of one identifier and version
  that agree (the same header and components, `voe` reading them) are one Record, built from the first (by path
  and pointer); snapshots that do not agree are kept apart, each a Record of its own (`<id>@<version>~<8 hex>`),
  with `snapshot_conflict` naming the others. A release collection (`nrdr:ReleaseCollection`) is no dataset: it
  is read for the release statements it holds.
- Every fact is located as in a record folder, by JSON pointer into the file that holds the snapshot (the
  pointer starts at the record: `/ResultData/3/components/2`), the file named by its path in the collection.
  Snapshots hold no payloads: a collection's files are never looked up as a record's payloads.
- Versions as evidence: the versions of one identifier the call reads are compared in order (added, removed and
  changed files: another declared digest or size), with the statement the release history gives the later one
  (`description` of its `hasRelease` entry). A change under a statement that speaks of data ("data update") is a
  stated change; under a statement that denies it ("metadata update") or none it is not (coverage `denied`,
  `none`). A changed file's evidence item records the change; a removed file is an Evidence of the later version
  (`provenance: "version_notes"`, unavailable), located at the earlier version's component and at the statement.
  A release history whose dates go backwards is recorded on the Record (`release_dates_backwards`).
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voe.errors import InputError
from voe.graph import EdgeRow, NodeRow
from voe.ingest.payloads.files import LocalBytes, iter_entries, span_sha256
from voe.ingest.payloads.parsers.release import version_key
from voe.ingest.rules import ids
from voe.ingest.rules.evidence import evidence_kind
from voe.ingest.sources.nerdm.build import NerdmBuilder, NerdmComponent, check_record, load_json, looks_nerdm
from voe.ontology import Label, Rel

VERSION_SUFFIX = re.compile(r"/pdr:v(?:/(?P<version>[^/]+))?$")
# a release statement speaks of data (covers a change of the files) or only of metadata (denies one)
DATA_WORDS = re.compile(r"(?<!meta)\bdata\b|\bfiles?\b|\bchecksums?\b|\bsizes?\b", re.I)
METADATA_ONLY = re.compile(r"\bmetadata\b|\btags?\b|\bcollection\b|\bkeywords?\b|\btitle\b", re.I)
MAX_FILES = 10_000  # files of a collection folder read at most (a folder of more is refused, naming the limit)


@dataclass
class Snapshot:
    """One NERDm record at `pointer` of the file `relpath` of a collection."""

    file: Path
    relpath: str
    raw: bytes
    pointer: str
    doc: dict[str, Any]

    @property
    def identifier(self) -> str:
        return VERSION_SUFFIX.sub("", str(self.doc["@id"]))

    @property
    def version(self) -> str | None:
        v = self.doc.get("version")
        if isinstance(v, str) and v.strip():
            return v.strip()
        m = VERSION_SUFFIX.search(str(self.doc["@id"]))
        return m.group("version") if m and m.group("version") else None

    @property
    def is_release_set(self) -> bool:
        return "nrdr:ReleaseCollection" in (self.doc.get("@type") or [])

    def content_key(self) -> str:
        """What two snapshots of one version must share to be one record: the header fields voe reads and every
        component as voe reads it (key order and whitespace of the saved file do not count)."""
        head = {k: self.doc.get(k) for k in ("title", "version", "doi", "ediid", "license", "modified", "issued")}
        comps = [{k: c.get(k) for k in ("@id", "@type", "filepath", "mediaType", "size", "checksum", "describes",
                                         "valid", "downloadURL")}
                 for c in self.doc.get("components") or [] if isinstance(c, dict)]
        return hashlib.sha256(json.dumps([head, comps], sort_keys=True, default=str).encode()).hexdigest()


def looks_like_collection(path: Path) -> bool:
    """A JSON file holding an array of records or search results, or a folder (no nerdm.json) whose files are JSON
    and hold at least one NERDm record."""
    if path.is_file():
        try:
            doc, _ = load_json(path)
        except InputError:
            return False
        return isinstance(doc, list) or (isinstance(doc, dict) and isinstance(doc.get("ResultData"), list))
    files = _json_files(path)
    return bool(files) and any(_records_in(p) for p in files[:50])


def _json_files(root: Path) -> list[Path]:
    out: list[Path] = []
    for rel, kind in iter_entries(root):
        if kind == "file":
            out.append(root / rel)
            if len(out) > MAX_FILES:
                raise InputError(f"holds more than {MAX_FILES} files; read it in parts", path=str(root))
    return sorted(p for p in out if p.suffix.lower() == ".json")


def _records_in(path: Path) -> list[tuple[str, Any]]:
    try:
        doc, _ = load_json(path)
    except InputError:
        return []
    return [(ptr, d) for ptr, d in _candidates(doc) if looks_nerdm(d)]


def _candidates(doc: Any) -> list[tuple[str, Any]]:
    if isinstance(doc, list):
        return [(f"/{i}", d) for i, d in enumerate(doc)]
    if isinstance(doc, dict) and isinstance(doc.get("ResultData"), list):
        return [(f"/ResultData/{i}", d) for i, d in enumerate(doc["ResultData"])]
    return [("", doc)]


def snapshots(path: Path) -> tuple[list[Snapshot], list[InputError]]:
    """Every NERDm record of the collection, and the files or entries that are not one (each an InputError)."""
    root = path if path.is_dir() else path.parent
    files = _json_files(path) if path.is_dir() else [path]
    found: list[Snapshot] = []
    problems: list[InputError] = []
    for f in files:
        rel = f.relative_to(root).as_posix()
        try:
            doc, raw = load_json(f)
        except InputError as exc:
            problems.append(exc)
            continue
        for ptr, d in _candidates(doc):
            if not looks_nerdm(d):
                problems.append(InputError("is not a NERDm record (no string @id and NERDm _schema or @type); "
                                           "left out", path=str(f), pointer=ptr))
                continue
            try:
                check_record(d, f, ptr)
            except InputError as exc:
                problems.append(exc)
                continue
            found.append(Snapshot(f, rel, raw, ptr, d))
    return found, problems


@dataclass
class Statement:
    """What a release history says of one version: its description and date, and where it says it."""

    version: str
    text: str
    issued: str | None
    snapshot: Snapshot
    pointer: str


@dataclass
class Prior:
    """The version before a record's, as the collection holds it: its files by path, and where each sits."""

    version: str
    snapshot: Snapshot
    files: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)


def coverage(statement: str | None) -> str:
    """`stated`: the statement speaks of data or files; `denied`: it speaks only of metadata; `none`: no statement."""
    if not statement:
        return "none"
    if DATA_WORDS.search(statement):
        return "stated"
    return "denied" if METADATA_ONLY.search(statement) else "none"


class SnapshotBuilder(NerdmBuilder):
    """One record of a collection: a NERDm record at a pointer of a shared file, with no payloads."""

    SOURCE_FORMAT = "nerdm_collection"

    def __init__(self, snap: Snapshot, validated: bool, rec_id: str | None, prior: Prior | None,
                 statement: Statement | None, conflict: list[str], between: list[Statement | None]) -> None:
        self.snap, self.base = snap, snap.pointer
        self._record_name = snap.relpath
        self.prior, self.statement, self.conflict, self.between = prior, statement, conflict, between
        self._open(snap.file, snap.doc, hashlib.sha256(snap.raw).hexdigest(), len(snap.raw), validated,
                   rec_id=rec_id, stamp=f"snapshot:{snap.relpath}#{snap.pointer}".encode())
        self._entries = {}  # a collection holds records, not their payloads
        self._any_special = False

    def _read_header(self, doc: dict[str, Any]) -> Any:
        header, unread = super()._read_header(doc)
        header.ark = VERSION_SUFFIX.sub("", header.ark)  # a version's own @id names its identifier
        if not header.version and self.snap.version:
            header.version = self.snap.version
        return header, unread

    def location(self, pointer: str, value: Any) -> str:
        return super().location(self.base + pointer, value)

    def _record_rows(self, first_components: list[Any], count: int, located: bool = True) -> None:
        super()._record_rows(first_components, count, located)
        row = next(r for r in reversed(self.g.nodes) if r.id == self.rec_id)
        row.props["snapshot"] = f"{self.snap.relpath}#{self.snap.pointer}"
        if self.conflict:
            row.props["snapshot_conflict"] = self.conflict
        if (backwards := dates_backwards(self.doc)) is not None:  # located with the history (NerdmBuilder)
            row.props["release_dates_backwards"] = backwards

    def _after_evidence(self, parsed: list[tuple[int, NerdmComponent, str]]) -> None:
        if self.prior is None:
            return
        now = {c.filepath: (i, c) for i, c, _ in parsed if c.filepath and c.kind is Label.DATA_FILE}
        cover = span_coverage(self.between)
        said = [loc for st in self.between if st is not None for loc in [self._statement_location(st)]]
        touched: dict[str, list[str]] = {}
        for path, (j, old) in sorted(self.prior.files.items()):
            before = _declared(old)
            if path not in now:
                self._removed(path, j, old, cover, said)
                continue
            i, comp = now[path]
            after = (comp.checksum.hash.lower() if comp.checksum and comp.checksum.hash else None, comp.size)
            if before[0] and after[0] and before[0] != after[0] or (
                    before[1] is not None and after[1] is not None and before[1] != after[1]):
                holder = self._holder(path)
                if holder is not None:
                    touched.setdefault(holder, []).append(path)
        for eid, paths in touched.items():
            row = next((r for r in self.g.nodes if r.id == eid), None)
            if row is None:
                continue
            row.props.update({"version_status": "changed", "version_from": self.prior.version,
                              "version_to": self.header.version, "version_statement": self._said(),
                              "version_coverage": cover, "version_changed": sorted(paths)})
            for path in paths:
                j, old = self.prior.files[path]
                self.g.edges.append(EdgeRow(Rel.LOCATED_AT, eid, Label.EVIDENCE, self._prior_location(j, old),
                                            Label.SOURCE_LOCATION))
            for loc in said:
                self.g.edges.append(EdgeRow(Rel.LOCATED_AT, eid, Label.EVIDENCE, loc, Label.SOURCE_LOCATION))
            row.props["version_before_json"] = json.dumps([self._before(p) for p in sorted(paths)], sort_keys=True)

    def _said(self) -> str | None:
        """What the release histories say of the versions since the prior one ("1.0.3: metadata update; ...")."""
        return "; ".join(f"{st.version}: {st.text}" for st in self.between if st is not None) or None

    def _holder(self, filepath: str) -> str | None:
        """The evidence item holding a file: itself at the root, else its top folder's nearest subcollection."""
        parts = filepath.strip("/").split("/")
        for k in range(len(parts), 0, -1):
            eid = ids.evidence_id(self.rec_id, "/".join(parts[:k]))
            if any(r.id == eid for r in self.g.nodes):
                return eid
        return None

    def _prior_location(self, j: int, comp: dict[str, Any]) -> str:
        """The earlier version's component, located in the file that holds that version (another snapshot)."""
        snap = self.prior.snapshot if self.prior else self.snap
        file_sha = hashlib.sha256(snap.raw).hexdigest()
        pointer = f"{snap.pointer}/components/{j}"
        loc = ids.location_id(file_sha, pointer)
        if loc not in self._locations:
            self._locations.add(loc)
            fid = self.file_of(snap)
            self.g.nodes.append(NodeRow(loc, (Label.SOURCE_LOCATION,), self._owned({
                "kind": "json_pointer", "path": snap.relpath, "file_sha256": file_sha, "pointer": pointer,
                "span_sha256": span_sha256(comp)})))
            self.g.edges.append(EdgeRow(Rel.IN_FILE, loc, Label.SOURCE_LOCATION, fid, Label.FILE))
        return loc

    def _before(self, path: str) -> dict[str, Any]:
        """What the earlier version declares of a file, and where (a fact's source: file, pointer, span digest)."""
        assert self.prior is not None
        j, comp = self.prior.files[path]
        digest, size = _declared(comp)
        return {"path": path, "sha256": digest, "size": size, "source": {
            "path": self.prior.snapshot.relpath, "locator": f"{self.prior.snapshot.pointer}/components/{j}",
            "sha256": span_sha256(comp)}}

    def file_of(self, snap: Snapshot) -> str:
        return self.file(LocalBytes(snap.file, hashlib.sha256(snap.raw).hexdigest(), len(snap.raw)), origin="nerdm")

    def _statement_location(self, st: Statement) -> str:
        if st.snapshot is self.snap:
            return self.location(st.pointer.removeprefix(self.base), _value_at(self.doc, st.pointer.removeprefix(
                self.base)))
        file_sha = hashlib.sha256(st.snapshot.raw).hexdigest()
        loc = ids.location_id(file_sha, st.pointer)
        if loc not in self._locations:
            self._locations.add(loc)
            value = _value_at(st.snapshot.doc, st.pointer.removeprefix(st.snapshot.pointer))
            self.g.nodes.append(NodeRow(loc, (Label.SOURCE_LOCATION,), self._owned({
                "kind": "json_pointer", "path": st.snapshot.relpath, "file_sha256": file_sha, "pointer": st.pointer,
                "span_sha256": span_sha256(value), "text": st.text})))
            self.g.edges.append(EdgeRow(Rel.IN_FILE, loc, Label.SOURCE_LOCATION, self.file_of(st.snapshot),
                                        Label.FILE))
        return loc

    def _removed(self, path: str, j: int, old: dict[str, Any], cover: str, said: list[str]) -> None:
        """A file the earlier version lists and this one does not: an Evidence of this version that answers
        `unavailable`, located at the earlier version's component and at the statement."""
        if "/" in path.strip("/") and self._holder(path) is not None:
            return  # a file of a folder this version still has: the folder stands for it
        kind, rule = evidence_kind(path, old.get("title"), old.get("mediaType"), None)
        eid = ids.evidence_id(self.rec_id, path)
        self.g.nodes.append(NodeRow(eid, (Label.EVIDENCE,), self._owned({
            "canonical_id": eid, "kind": kind, "kind_rule": rule, "title": old.get("title") or posixpath.basename(path),
            "filepath": path, "record_ark": self.ark, "provenance": "version_notes", "available": False,
            "held": False, "version_status": "removed", "version_from": self.prior.version if self.prior else None,
            "version_to": self.header.version, "version_statement": self._said(), "version_coverage": cover,
            "version_changed": [path], "version_before_json": json.dumps([self._before(path)], sort_keys=True)})))
        self.g.edges.append(EdgeRow(Rel.LOCATED_AT, eid, Label.EVIDENCE, self._prior_location(j, old),
                                    Label.SOURCE_LOCATION))
        for loc in said:
            self.g.edges.append(EdgeRow(Rel.LOCATED_AT, eid, Label.EVIDENCE, loc, Label.SOURCE_LOCATION))
        self.g.evidence[kind] += 1


def _value_at(doc: Any, pointer: str) -> Any:
    cur = doc
    for part in pointer.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        cur = cur[int(part)] if isinstance(cur, list) else cur.get(part) if isinstance(cur, dict) else None
    return cur


def _declared(comp: dict[str, Any]) -> tuple[str | None, int | None]:
    checksum = comp.get("checksum")
    digest = checksum.get("hash") if isinstance(checksum, dict) else None
    size = comp.get("size")
    return (digest.lower() if isinstance(digest, str) else None, size if isinstance(size, int) else None)


def _history(doc: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    rh = doc.get("releaseHistory") if isinstance(doc.get("releaseHistory"), dict) else doc
    releases = rh.get("hasRelease") if isinstance(rh, dict) else None
    return [(i, r) for i, r in enumerate(releases or []) if isinstance(r, dict)]


def dates_backwards(doc: dict[str, Any]) -> str | None:
    """The record's own version dated before a version it follows, in the record's own release history (an
    older pair out of order does not make this version's place unclear)."""
    entries = [(str(r.get("version") or ""), str(r.get("issued") or "")[:10]) for _, r in _history(doc)]
    entries = [(v, d) for v, d in entries if v and re.match(r"\d{4}-\d{2}-\d{2}$", d)]
    own = next((d for v, d in entries if v == doc.get("version")), None)
    if own is None:
        return None
    later = [(v, d) for v, d in entries if version_key(v) < version_key(str(doc["version"])) and d > own]
    if not later:
        return None
    v0, d0 = max(later, key=lambda e: e[1])
    return f"{doc['version']} is dated {own}, before {v0} ({d0}), a version it follows"


def statements(snaps: list[Snapshot]) -> dict[tuple[str, str], Statement]:
    """(identifier, version) -> what the release histories say of it (the first snapshot that says it)."""
    out: dict[tuple[str, str], Statement] = {}
    for s in snaps:
        hist = s.doc.get("releaseHistory")
        base = f"{s.pointer}/releaseHistory/hasRelease" if isinstance(hist, dict) else f"{s.pointer}/hasRelease"
        for i, r in _history(s.doc):
            v, text = r.get("version"), r.get("description")
            if isinstance(v, str) and isinstance(text, str):
                out.setdefault((s.identifier, v), Statement(v, text, r.get("issued"), s, f"{base}/{i}/description"))
    return out


def collection_builders(path: Path, validated: bool) -> tuple[list[SnapshotBuilder], list[InputError]]:
    """One builder per record (identifier and version) of the collection, agreeing snapshots merged, others
    kept apart; each version told what the version before it held and what its release history says of it."""
    snaps, problems = snapshots(path)
    said = statements(snaps)
    groups: dict[tuple[str, str | None], list[Snapshot]] = {}
    for s in sorted((s for s in snaps if not s.is_release_set), key=lambda s: (s.relpath, s.pointer)):
        groups.setdefault((s.identifier, s.version), []).append(s)
    builders: list[SnapshotBuilder] = []
    by_ident: dict[str, list[tuple[str | None, Snapshot]]] = {}
    chosen: dict[tuple[str, str | None], list[Snapshot]] = {}
    for key, group in groups.items():
        distinct: dict[str, Snapshot] = {}
        for s in group:
            distinct.setdefault(s.content_key(), s)
        chosen[key] = list(distinct.values())
        by_ident.setdefault(key[0], []).append((key[1], chosen[key][0]))
    for (ident, version), kept in sorted(chosen.items(), key=lambda kv: (kv[0][0], version_key(kv[0][1] or "0"))):
        versions = sorted((v for v in by_ident[ident] if v[0]), key=lambda v: version_key(v[0] or "0"))
        prior = next((Prior(v, s, _files(s)) for v, s in reversed(versions)
                      if version and v and version_key(v) < version_key(version)), None)
        statement = said.get((ident, version)) if version else None
        between = _between(said, ident, prior.version if prior else None, version)
        for s in kept:
            rec_id = None
            others = [f"{o.relpath}#{o.pointer}" for o in kept if o is not s]
            if len(kept) > 1:
                tag = hashlib.sha256(f"{s.relpath}#{s.pointer}".encode()).hexdigest()[:8]
                rec_id = f"{ids.record_id(ident, version)}~{tag}"
            builders.append(SnapshotBuilder(s, validated, rec_id, prior, statement, others, between))
    return builders, problems


def _between(said: dict[tuple[str, str], Statement], ident: str, after: str | None,
             upto: str | None) -> list[Statement | None]:
    """What the release histories say of each version after `after` up to `upto` (None: a version no history
    describes), in order: a change between two versions the collection holds happened in one of them."""
    if after is None or upto is None:
        return []
    known = sorted({v for (i, v) in said if i == ident and version_key(after) < version_key(v) <= version_key(upto)},
                   key=version_key)
    if upto not in known:
        known.append(upto)
    return [said.get((ident, v)) for v in known]


def span_coverage(statements: list[Statement | None]) -> str:
    """A change over several versions is stated when one of their statements speaks of data, denied when every one
    of them is known and denies it, else no statement covers it."""
    kinds = [coverage(s.text if s else None) for s in statements]
    if "stated" in kinds:
        return "stated"
    return "denied" if kinds and all(k == "denied" for k in kinds) else "none"


def _files(s: Snapshot) -> dict[str, tuple[int, dict[str, Any]]]:
    return {str(c["filepath"]): (j, c) for j, c in enumerate(s.doc.get("components") or [])
            if isinstance(c, dict) and isinstance(c.get("filepath"), str)
            and "nrdp:DataFile" in (c.get("@type") or []) and "nrdp:ChecksumFile" not in (c.get("@type") or [])}
