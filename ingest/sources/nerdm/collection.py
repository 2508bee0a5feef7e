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
- Versions as evidence: the versions of one identifier the call reads are compared in order, data file by data
  file (ingest/rules/versions.py: changed, renamed, removed and added files), with the statements the release
  history gives the versions since the earlier one (`description` of their `hasRelease` entries). A change under a
  statement that speaks of data ("data update") is a stated change; under statements that deny it ("metadata
  update") or none it is not (coverage `denied`, `none`). Each change is recorded on the evidence item that holds
  the file in the later version (the file itself at the root, else its folder): `version_status`, the statements,
  and what the earlier version lists of each file, located at its component (for a file it did not list, at its
  list of components) and at the statements. A removed file nothing of the later version holds is an Evidence of
  its own (`provenance: "version_notes"`, unavailable), located at the earlier version's component and at the
  statement.
  A release history whose dates go backwards is recorded on the Record (`release_dates_backwards`).
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from collections.abc import Container
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voe.errors import InputError
from voe.graph import EdgeRow, NodeRow
from voe.ingest.payloads.files import LocalBytes, iter_entries, span_sha256
from voe.ingest.payloads.parsers.release import version_key
from voe.ingest.rules import ids, versions
from voe.ingest.rules.evidence import evidence_kind
from voe.ingest.sources.nerdm.build import NerdmBuilder, NerdmComponent, check_record, load_json, looks_nerdm
from voe.ontology import Label, Rel

VERSION_SUFFIX = re.compile(r"/pdr:v(?:/(?P<version>[^/]+))?$")
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


class SnapshotBuilder(NerdmBuilder):
    """One record of a collection: a NERDm record at a pointer of a shared file, with no payloads."""

    SOURCE_FORMAT = "nerdm_collection"

    def __init__(self, snap: Snapshot, validated: bool, rec_id: str | None, prior: Prior | None,
                 statement: Statement | None, conflict: list[str], between: list[Statement | None]) -> None:
        self.snap, self.base = snap, snap.pointer
        self._record_name = snap.relpath
        self.prior, self.statement, self.conflict, self.between = prior, statement, conflict, between
        # the version it is compared with, and what the histories say since, are part of what the record says
        compared = json.dumps([prior.version if prior else None,
                               hashlib.sha256(prior.snapshot.raw).hexdigest() if prior else None,
                               [st.text if st else None for st in between]])
        self._open(snap.file, snap.doc, hashlib.sha256(snap.raw).hexdigest(), len(snap.raw), validated,
                   rec_id=rec_id, stamp=f"snapshot:{snap.relpath}#{snap.pointer}\0{compared}".encode())
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
        """This version's data files against the prior version's (ingest/rules/versions.py): each change on the
        evidence item that holds the file now (a file that is gone and held by nothing: an Evidence of its own,
        `_removed`), located at what the earlier version lists (or at its list, for a file it does not list) and
        at the statements of the versions since."""
        if self.prior is None:
            return
        after = {c.filepath: (c.checksum.hash.lower() if c.checksum and c.checksum.hash else None, c.size)
                 for _, c, _ in parsed if c.filepath and c.kind is Label.DATA_FILE}
        found = versions.compare({p: _declared(c) for p, (_, c) in self.prior.files.items()}, after)
        cover = span_coverage(self.between)
        said = [self._statement_location(st) for st in self.between if st is not None]
        held: dict[str, list[tuple[str, str, dict[str, Any], str]]] = {}  # holder -> (status, path, before, where)
        rows = {r.id: r for r in self.g.nodes if Label.EVIDENCE in r.labels}

        def note(status: str, path: str, before: dict[str, Any], where: str) -> bool:
            """On the item that holds `path` now; False when nothing does (a file in a folder the record does not
            list as a subcollection: nothing to hang the change on)."""
            holder = self._holder(path, rows)
            if holder is not None:
                held.setdefault(holder, []).append((status, path, {**before, "status": status}, where))
            return holder is not None

        for path in found.changed:
            note("changed", path, self._before(path), self._prior_location(*self.prior.files[path]))
        for old, new in found.renamed:
            note("renamed", new, {**self._before(old), "renamed_to": new}, self._prior_location(*self.prior.files[old]))
        for path in found.added:
            note("added", path, self._unlisted(path), self._prior_list_location())
        for path in found.removed:
            j, old_comp = self.prior.files[path]
            # a file of a folder this version still has: the folder stands for it
            if "/" in path.strip("/") and note("removed", path, self._before(path), self._prior_location(j, old_comp)):
                continue
            self._removed(path, j, old_comp, cover, said)
        for eid, changes in held.items():
            row = rows[eid]
            row.props.update({"version_status": versions.status_of(c[0] for c in changes),
                              "version_from": self.prior.version, "version_to": self.header.version,
                              "version_statement": self._said(), "version_coverage": cover,
                              "version_changed": sorted(c[1] for c in changes),
                              "version_before_json": json.dumps(sorted((c[2] for c in changes),
                                                                       key=lambda b: (b["path"], b["status"])),
                                                                sort_keys=True)})
            for loc in dict.fromkeys([*(c[3] for c in changes), *said]):
                self.g.edges.append(EdgeRow(Rel.LOCATED_AT, eid, Label.EVIDENCE, loc, Label.SOURCE_LOCATION))

    def _said(self) -> str | None:
        """What the release histories say of the versions since the prior one ("1.0.3: metadata update; ...")."""
        return "; ".join(f"{st.version}: {st.text}" for st in self.between if st is not None) or None

    def _holder(self, filepath: str, evidence: Container[str]) -> str | None:
        """The evidence item (of `evidence`, by id) holding a file: itself at the root, else its top folder's
        nearest subcollection."""
        parts = filepath.strip("/").split("/")
        for k in range(len(parts), 0, -1):
            eid = ids.evidence_id(self.rec_id, "/".join(parts[:k]))
            if eid in evidence:
                return eid
        return None

    def _prior_location(self, j: int, comp: dict[str, Any]) -> str:
        """The earlier version's component, located in the file that holds that version (another snapshot)."""
        return self._prior_at(f"/components/{j}", comp)

    def _prior_list_location(self) -> str:
        """The earlier version's list of components: where a file it does not list is not listed."""
        snap = self.prior.snapshot if self.prior else self.snap
        return self._prior_at("/components", snap.doc.get("components"))

    def _prior_at(self, pointer: str, value: Any) -> str:
        snap = self.prior.snapshot if self.prior else self.snap
        file_sha = hashlib.sha256(snap.raw).hexdigest()
        pointer = f"{snap.pointer}{pointer}"
        loc = ids.location_id(file_sha, pointer)
        if loc not in self._locations:
            self._locations.add(loc)
            fid = self.file_of(snap)
            self.g.nodes.append(NodeRow(loc, (Label.SOURCE_LOCATION,), self._owned({
                "kind": "json_pointer", "path": snap.relpath, "file_sha256": file_sha, "pointer": pointer,
                "span_sha256": span_sha256(value)})))
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

    def _unlisted(self, path: str) -> dict[str, Any]:
        """A file the earlier version does not list: its list of components is where that is read."""
        assert self.prior is not None
        snap = self.prior.snapshot
        return {"path": path, "sha256": None, "size": None, "listed": False, "source": {
            "path": snap.relpath, "locator": f"{snap.pointer}/components",
            "sha256": span_sha256(snap.doc.get("components"))}}

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
        """A file the earlier version lists, this one does not, and nothing of this one holds: an Evidence of this
        version that answers `unavailable`, located at the earlier version's component and at the statement."""
        kind, rule = evidence_kind(path, old.get("title"), old.get("mediaType"), None)
        eid = ids.evidence_id(self.rec_id, path)
        self.g.nodes.append(NodeRow(eid, (Label.EVIDENCE,), self._owned({
            "canonical_id": eid, "kind": kind, "kind_rule": rule, "title": old.get("title") or posixpath.basename(path),
            "filepath": path, "record_ark": self.ark, "provenance": "version_notes", "available": False,
            "held": False, "version_status": "removed", "version_from": self.prior.version if self.prior else None,
            "version_to": self.header.version, "version_statement": self._said(), "version_coverage": cover,
            "version_changed": [path],
            "version_before_json": json.dumps([{**self._before(path), "status": "removed"}], sort_keys=True)})))
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
    """How the statements of the versions since the prior one cover its changes (ingest/rules/versions.py)."""
    return versions.span_coverage(s.text if s else None for s in statements)


def _files(s: Snapshot) -> dict[str, tuple[int, dict[str, Any]]]:
    return {str(c["filepath"]): (j, c) for j, c in enumerate(s.doc.get("components") or [])
            if isinstance(c, dict) and isinstance(c.get("filepath"), str)
            and "nrdp:DataFile" in (c.get("@type") or []) and "nrdp:ChecksumFile" not in (c.get("@type") or [])}
