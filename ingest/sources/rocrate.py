"""An RO-Crate, as a folder holding `ro-crate-metadata.json` or as a zip of one (`.eln`, the ELN Consortium's
export of a lab notebook; `.zip`): the crate's File entities checked against what the container holds.

The crate root is the folder of its `ro-crate-metadata.json` (in a zip, the member folder that holds it). Every
File entity whose `@id` is a path (not an address) is resolved against the root, never leaving it: an `@id` that
climbs out (`../x`) is refused as such (`id_escapes_root`), and nothing outside the root is read. What is checked,
each fact located by JSON pointer into the metadata file (`/@graph/5`) or at the member's bytes:

- the entity's path is a member: its bytes are the item (`contentSize` and `sha256`, when declared, checked
  against them: `size_mismatch`, `checksum_mismatch`; `encodingFormat` against the file name:
  `media_type_mismatch`, platform aliases allowed);
- it is not, but a member of the same name is elsewhere in the root (a doubled root folder, `//` in the member
  name): the entity misnames its file (`entity_path_mismatch`), and that member is the item;
- no member of that name: the crate describes an item its container does not hold (`described_not_held`: an
  unavailable Evidence, like a file a checksum file attests);
- a member no entity describes (`undescribed_member`), except the packaging of the crate itself (its metadata,
  preview, signature and public key, and the digest lists below).

A digest list inside the crate is a second statement of its files' digests (ingest/sources/digest_lists.py: BagIt
manifests, where the crate is the `data/` folder of a bag, the bag's own `manifest-<alg>.txt` and
`tagmanifest-<alg>.txt`; `SHA256SUMS`-style lists and `<file>.sha256` sidecars anywhere in the root). Each line's
path is resolved against the list's folder as an `@id` is against the root, never leaving it, and each line is a
fact located at its line. Three statements meet per file, the crate's `sha256`, the list's digest and the bytes:

- the line disagrees with the bytes: `checksum_mismatch` (rule `crate.manifest`) on the file, at the line;
  resolved when the crate's own `sha256` agrees with the bytes (the line is stale);
- the crate's `sha256` disagrees with the bytes (`crate.sha256`) and a list agrees with them: resolved by the list
  (the crate's declaration is stale; cypher/compiler/resolved_defects.cypher);
- a line for a path the container does not hold: `described_not_held` (rule `crate.manifest.absent`), an
  unavailable Evidence located at the line (unless an entity already describes that path);
- a line whose path climbs out of the root (or is absolute): refused as such (`id_escapes_root`, rule
  `crate.manifest.escapes`, on the Record) and nothing is read. A bag's manifest lines for its own tag files
  (beside `data/`, not in the crate) are the bag's, not the crate's: left alone.

Identity: `crate:<name>` where name is the archive the crate is a version of: the folder that holds it when that
folder is named `<name>@<version>` (the same export at successive commits), else the file's stem; version the part
after `@`, else the crate's own `version`. Successive (dated) versions of one crate read in one call are compared
as a record's versions are (ingest/rules/versions.py): every file the crate holds, described or not, by its path
in the crate root and its bytes: changed, renamed (an entity whose path changed over the same bytes, a doubled
root folder fixed), removed and added files. The statement is the commit message where the folder layout carries
one beside the export (`<name>@<version>/COMMIT_MSG`, `COMMIT_EDITMSG` or `commit-message.txt`); with none, no
statement covers a change (coverage `none`). Each change is on the later version's Evidence of the file (a removed
file: an Evidence of its own, `provenance: "version_notes"`, unavailable), located at the earlier version's entity
(or member) and at the message. Zip members are extracted into a private temporary folder, bounded in number and
size, and parsed by content like any held file.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import shutil
import tempfile
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voe.errors import InputError
from voe.graph import EdgeRow, NodeRow
from voe.ingest.builder import BuilderCore, Origin, RecordGraph, stamp_rows
from voe.ingest.payloads.files import LocalBytes, hash_file, span_sha256
from voe.ingest.payloads.parsers.model import Fact
from voe.ingest.payloads.parsers.release import version_key
from voe.ingest.rules import ids, media_types, versions
from voe.ingest.rules.evidence import evidence_kind
from voe.ingest.sources.digest_lists import MAX_LIST_BYTES, Listed, digest_of, list_kind, read_list
from voe.ontology import Label, Rel

METADATA = "ro-crate-metadata.json"
CRATE_SUFFIXES = (".eln", ".zip")
PACKAGING = re.compile(r"(^|/)(ro-crate-metadata\.json(\.minisig)?|ro-crate-preview\.html|ro-crate\.pubkey)$", re.I)
ADDRESS = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # http:, https:, doi:, a URL with one slash ("https:/x")
MAX_MEMBERS = 20_000
MAX_MEMBER_BYTES = 1 << 30  # a member larger than this is not extracted (its size is still compared)
MAX_TOTAL_BYTES = 4 << 30
VERSIONED = re.compile(r"^(?P<name>[^@]+)@(?P<version>[^@]+)$")
BAG_PAYLOAD = "data"  # "RO-Crate in a BagIt bag": the bag's payload folder is the crate root
# a version's commit message, where the folder of the version carries one beside the export
MESSAGE = re.compile(r"^(COMMIT_EDITMSG|COMMIT_MSG|commit[-_]message(\.txt|\.md)?)$", re.I)
MAX_MESSAGE_BYTES = 64 << 10


def is_crate_file(path: Path) -> bool:
    """A zip (by its bytes) whose members hold an ro-crate-metadata.json."""
    if not path.is_file() or path.suffix.lower() not in CRATE_SUFFIXES:
        return False
    try:
        with zipfile.ZipFile(path) as z:
            return any(n.rsplit("/", 1)[-1] == METADATA for n in z.namelist()[:MAX_MEMBERS])
    except (zipfile.BadZipFile, OSError):
        return False


def is_crate_folder(path: Path) -> bool:
    """A folder holding ro-crate-metadata.json, or a BagIt bag whose payload is a crate."""
    return (path / METADATA).is_file() or is_bagged_crate(path)


def is_bagged_crate(path: Path) -> bool:
    """"RO-Crate in a BagIt bag": a bag folder whose payload folder (`data/`) is the crate root, the bag's manifests
    a second statement of the crate's digests."""
    return (path / "bagit.txt").is_file() and (path / BAG_PAYLOAD / METADATA).is_file()


def crate_files(path: Path) -> list[Path]:
    """The crates a path holds: the path itself, a folder with ro-crate-metadata.json (or a bag of one), or the
    crate files of a folder and its subfolders (a folder of exports)."""
    if path.is_file():
        return [path] if is_crate_file(path) else []
    if is_crate_folder(path):
        return [path]
    return sorted(p for p in path.rglob("*") if not p.is_symlink() and is_crate_file(p))


@dataclass
class Crate:
    """One crate read: its members (relative to the container), the metadata, where it came from."""

    source: Path  # the .eln/.zip file or the folder
    name: str
    version: str | None
    root: str  # the crate root inside the container ("" for a folder crate)
    metadata_member: str
    raw: bytes
    doc: dict[str, Any]
    members: dict[str, int]  # member path -> size in the container
    dated: str = ""
    message: Message | None = None

    @property
    def label(self) -> str:
        """How the crate's files are named in locations: `export.eln!root/ro-crate-metadata.json`."""
        return f"{self.source.name}!{self.metadata_member}" if self.source.is_file() else self.metadata_member

    @property
    def ark(self) -> str:
        return f"crate:{self.name}"


@dataclass
class Message:
    """A version's commit message: the file beside the export, and its text."""

    path: Path
    raw: bytes
    text: str


def commit_message(source: Path) -> Message | None:
    """The commit message the folder layout carries for an exported version (`<name>@<version>/COMMIT_MSG`), or
    None; one that is not UTF-8 text, or larger than 64 KiB, is none."""
    if not source.is_file() or not VERSIONED.match(source.parent.name):
        return None
    for f in sorted(source.parent.iterdir()):
        if not MESSAGE.match(f.name) or f.is_symlink() or not f.is_file():
            continue
        try:
            raw = f.read_bytes()[:MAX_MESSAGE_BYTES + 1]
            text = raw.decode("utf-8-sig").strip()
        except (OSError, UnicodeDecodeError):
            return None
        return Message(f, raw, text) if text and len(raw) <= MAX_MESSAGE_BYTES else None
    return None


def _identity(source: Path, doc: dict[str, Any]) -> tuple[str, str | None]:
    holder = source.parent.name if source.is_file() else source.name
    m = VERSIONED.match(holder)
    if m:
        return m.group("name"), m.group("version")
    stem = source.stem if source.is_file() else source.name
    meta = _entity(doc, METADATA) or {}
    version = meta.get("version") if isinstance(meta.get("version"), str) else None
    return stem, version


def _entity(doc: dict[str, Any], eid: str) -> dict[str, Any] | None:
    graph = doc.get("@graph") if isinstance(doc, dict) else None
    return next((e for e in graph or [] if isinstance(e, dict) and e.get("@id") == eid), None)


def _types(e: dict[str, Any]) -> list[str]:
    t = e.get("@type")
    return [str(x) for x in t] if isinstance(t, list) else [str(t)] if t else []


def read_crate(source: Path) -> Crate:
    """The crate's listing and metadata; InputError names the file and what is wrong with it."""
    if source.is_dir():
        root = BAG_PAYLOAD if is_bagged_crate(source) else ""
        member = posixpath.join(root, METADATA)
        raw = (source / member).read_bytes()
        members = {p.relative_to(source).as_posix(): p.stat().st_size for p in source.rglob("*")
                   if p.is_file() and not p.is_symlink()}
    else:
        try:
            with zipfile.ZipFile(source) as z:
                infos = z.infolist()
                if len(infos) > MAX_MEMBERS:
                    raise InputError(f"holds more than {MAX_MEMBERS} members; not read", path=str(source))
                members = {i.filename: i.file_size for i in infos if not i.is_dir()}
                metas = sorted((n for n in members if n.rsplit("/", 1)[-1] == METADATA), key=lambda n: (n.count("/"), n))
                if not metas:
                    raise InputError(f"holds no {METADATA}: not an RO-Crate", path=str(source))
                member = metas[0]
                if members[member] > 64 << 20:
                    raise InputError(f"{member} is larger than 64 MiB; not read", path=str(source))
                raw = z.read(member)
        except zipfile.BadZipFile as exc:
            raise InputError(f"is not a readable zip ({exc})", path=str(source)) from exc
        root = posixpath.dirname(member)
    try:
        doc = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise InputError(f"{member}: is not JSON ({type(exc).__name__})", path=str(source)) from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("@graph"), list):
        raise InputError(f"{member}: has no @graph; not an RO-Crate", path=str(source), pointer="/@graph")
    name, version = _identity(source, doc)
    meta_entity = _entity(doc, METADATA) or {}
    root_entity = _entity(doc, "./") or {}
    dated = str(meta_entity.get("dateCreated") or meta_entity.get("datePublished")
                or root_entity.get("datePublished") or "")
    return Crate(source, name, version, root, member, raw, doc, members, dated, commit_message(source))


def _inside(root: str, eid: str) -> str | None:
    """The member path an entity's @id names, resolved against the crate root; None when it climbs out."""
    return _resolve(root, root, eid[2:] if eid.startswith("./") else eid.lstrip("/"))


def _resolve(root: str, base: str, rel: str) -> str | None:
    """The member path `rel` names from the folder `base`; None when it leaves `root` (a folder of the container,
    "" for all of it)."""
    joined = posixpath.normpath(posixpath.join(base, rel)) if rel else base
    if joined.startswith("../") or joined == ".." or (root and joined != root and not joined.startswith(root + "/")):
        return None
    return joined


def _same_name(eid: str, in_root: set[str] | dict[str, int]) -> str | None:
    """A member whose path, slashes collapsed, ends with the entity's path, or whose name is the entity's."""
    want = re.sub(r"/+", "/", eid.lstrip("./").strip("/"))
    name = posixpath.basename(want)
    collapsed = {m: re.sub(r"/+", "/", m) for m in in_root}
    ends = sorted(m for m, flat in collapsed.items() if flat.endswith("/" + want) or flat == want)
    if ends:
        return ends[0]
    same = sorted(m for m in in_root if posixpath.basename(m) == name)
    return same[0] if len(same) == 1 else None


@dataclass
class PriorFile:
    """A file an earlier version holds: its bytes, and its entity (graph index) or, undescribed, its member."""

    sha256: str
    size: int
    entity: int | None
    member: str


@dataclass
class DigestList:
    """A digest list the crate carries: its member, its path as locations name it, the folder its paths are relative
    to and the folder they must stay inside, its bytes and its lines."""

    member: str
    path: str
    base: str
    bound: str
    local: LocalBytes
    lines: list[Listed]


@dataclass
class PriorCrate:
    version: str
    crate: Crate
    files: dict[str, PriorFile] = field(default_factory=dict)  # path in the crate root -> what it held there


class CrateBuilder(BuilderCore):
    """One crate version: a Record, a Component and an Evidence per File entity and per undescribed member."""

    SOURCE_FORMAT = "ro-crate"

    POINTER_LOCATED = True

    def __init__(self, crate: Crate, prior: PriorCrate | None = None) -> None:
        self.crate = crate
        self.prior = prior
        self.doc = crate.doc
        self.file_sha = hashlib.sha256(crate.raw).hexdigest()
        self.provenance = "crate"
        self.validated = True
        self._record_name = crate.label
        self._tmp = Path(tempfile.mkdtemp(prefix="voe-crate-"))
        self.root = self._tmp
        self.record_file = self._tmp / crate.metadata_member
        # what the version is compared with is part of what the record says: another earlier export, or another
        # commit message, is another record
        compared = [hashlib.sha256(prior.crate.raw).hexdigest().encode() if prior else b"first",
                    hashlib.sha256(crate.message.raw).hexdigest().encode() if crate.message else b"no-message"]
        self._start(crate.ark, ids.record_id(crate.ark, crate.version), crate.version,
                    str((_entity(crate.doc, "./") or {}).get("name") or crate.name),
                    [self.file_sha.encode(), f"crate:{crate.source.name}:{crate.version}".encode(), *compared])
        self._entries = {}
        self._any_special = False
        self.hashes: dict[str, tuple[str, int]] = {}  # member path in root -> (sha256, size), for later versions
        self._by_member: dict[str, str] = {}  # member -> the component whose bytes it is
        self._by_rel: dict[str, str] = {}  # path in root -> its component
        self._bytes: dict[str, LocalBytes] = {}  # component -> the bytes it holds
        self._evidence_rows: dict[str, NodeRow] = {}  # this version's Evidence rows by id, once they are all built
        self._zip: zipfile.ZipFile | None = None

    def _fallback_origin(self) -> Origin:
        return Origin("", self.rec_id, Label.RECORD)

    def build(self) -> RecordGraph:
        self._zip = None if self.crate.source.is_dir() else zipfile.ZipFile(self.crate.source)  # one open, many reads
        try:
            return self._build()
        finally:
            if self._zip is not None:
                self._zip.close()
            shutil.rmtree(self._tmp, ignore_errors=True)

    def _build(self) -> RecordGraph:
        c = self.crate
        arch = ids.archive_id("local")
        self.g.nodes.append(NodeRow(arch, (Label.ARCHIVE,), {"host": "local", "name": "Local files"}))
        meta_local = self._extract(c.metadata_member)
        fid = self.file(meta_local, origin="crate") if meta_local else None
        root_entity = _entity(c.doc, "./") or {}
        self.g.nodes.append(NodeRow(self.rec_id, (Label.RECORD,), self._owned({
            "ark": self.ark, "title": self.g.title, "version": c.version, "provenance": "crate",
            "source_path": c.source.name, "ingest_state": "writing", "crate_root": c.root, "dated": c.dated or None,
            "description": str(root_entity.get("description") or "")[:2000] or None,
            "component_count": len(c.members)})))
        self.g.edges.append(EdgeRow(Rel.CONTAINS, arch, Label.ARCHIVE, self.rec_id, Label.RECORD))
        if fid is not None:
            self.g.edges.append(EdgeRow(Rel.STORED_AS, self.rec_id, Label.RECORD, fid, Label.FILE,
                                        {"path": self._record_name}))
        self.g.edges.append(EdgeRow(Rel.LOCATED_AT, self.rec_id, Label.RECORD, self.location("", c.doc),
                                    Label.SOURCE_LOCATION))
        graph = c.doc["@graph"]
        in_root = {m for m in c.members if not c.root or m.startswith(c.root + "/")}
        described: set[str] = set()
        for i, e in enumerate(graph):
            if not isinstance(e, dict) or "File" not in _types(e) or not isinstance(e.get("@id"), str):
                continue
            eid = e["@id"]
            if ADDRESS.match(eid) and "://" in eid:
                continue  # a web resource the crate names: held elsewhere, like a record reference
            described |= self._file_entity(i, e, in_root)
        lists = self._digest_lists(in_root)
        for m in sorted(in_root - described - {d.member for d in lists}):
            if PACKAGING.search(m):
                continue
            self._undescribed(m)
        for dl in lists:
            self._check_list(dl, in_root)
        self._versions()
        self.g.stamp = hashlib.sha256(b"\0".join(self._stamp_parts)).hexdigest()[:16]
        self._seal()
        stamp_rows(self.g.nodes, self.g.edges, self.g.stamp)
        return self.g

    # -- members ------------------------------------------------------------------------------------------
    def _extract(self, member: str) -> LocalBytes | None:
        """The member's bytes in the private folder (a folder crate: read in place), hashed; None when it is too
        large to extract."""
        c = self.crate
        if c.source.is_dir():
            return hash_file(c.source / member)
        if c.members.get(member, 0) > MAX_MEMBER_BYTES:
            return None
        target = self._tmp / member
        if member.startswith("/") or _resolve("", "", member) is None:
            return None  # a member name that climbs out of the private folder is never written, nor read
        target.parent.mkdir(parents=True, exist_ok=True)
        z = self._zip or zipfile.ZipFile(c.source)
        with z.open(member) as src, target.open("wb") as dst:
            copied = 0
            while chunk := src.read(1 << 20):
                copied += len(chunk)
                if copied > MAX_MEMBER_BYTES:
                    break
                dst.write(chunk)
        return hash_file(target)

    def _rel(self, member: str) -> str:
        """A member's path inside the crate root."""
        return _relative(self.crate.root, member)

    def _component(self, rel: str, props: dict[str, Any], pointer: str | None) -> str:
        cid = ids.component_id(self.rec_id, rel)
        self.g.components[Label.DATA_FILE.value] += 1
        self.g.nodes.append(NodeRow(cid, (Label.COMPONENT, Label.DATA_FILE), self._owned(
            {k: v for k, v in {"filepath": rel, "name": posixpath.basename(rel), "component_type": "DataFile",
                               "nerdm_id": rel, **props}.items() if v is not None})))
        self.g.edges.append(EdgeRow(Rel.HAS_COMPONENT, self.rec_id, Label.RECORD, cid, Label.COMPONENT))
        self._by_rel.setdefault(rel, cid)
        if pointer is not None:
            self.g.edges.append(EdgeRow(Rel.LOCATED_AT, cid, Label.COMPONENT, self.location(pointer, _at(self.doc, pointer)),
                                        Label.SOURCE_LOCATION))
        self._origins[cid] = Origin(pointer or "", cid, Label.COMPONENT)
        return cid

    def _hold(self, member: str, rel: str, cid: str) -> LocalBytes | None:
        local = self._extract(member)
        if local is None:
            return None
        self.hashes[rel] = (local.sha256, local.size)
        self._by_member[member] = cid
        self._bytes[cid] = local
        self.held(local.path, rel, local, cid, parse=True)
        return local

    def _file_entity(self, i: int, e: dict[str, Any], in_root: set[str]) -> set[str]:
        """The entity's component, evidence and findings; the members it accounts for."""
        c, eid, ptr = self.crate, str(e["@id"]), f"/@graph/{i}"
        member = _inside(c.root, eid)
        declared_sha = str(e.get("sha256")).lower() if isinstance(e.get("sha256"), str) else None
        size = e.get("contentSize")
        declared_size = int(size) if isinstance(size, int) or (isinstance(size, str) and size.isdigit()) else None
        media = e.get("encodingFormat") if isinstance(e.get("encodingFormat"), str) else None
        base = {"entity_id": eid, "media_type": media, "declared_size": declared_size, "declared_sha256": declared_sha,
                "title": e.get("name") if isinstance(e.get("name"), str) else None,
                "description": str(e.get("description"))[:300] if e.get("description") else None}
        if member is None:
            rel = eid
            cid = self._component(rel, {**base, "held": False, "status": "outside_root"}, ptr)
            self.defect("crate.file.escapes", cid, Label.COMPONENT, ptr,
                        f"the entity {eid!r} resolves outside the crate root; nothing outside it is read")
            found = _same_name(eid, in_root)
            self._evidence(rel, cid, ptr, e, available=False)
            return {found} if found else set()
        rel = self._rel(member)
        if member in in_root:
            cid = self._component(rel, {**base, "held": True, "member": member}, ptr)
            local = self._hold(member, rel, cid)
            self._checks(cid, ptr, rel, local, declared_size, declared_sha, media)
            self._evidence(rel, cid, ptr, e, available=True)
            return {member}
        found = _same_name(eid, in_root)
        if found is not None:
            cid = self._component(rel, {**base, "held": False, "found_at": found}, ptr)
            local = self._hold(found, rel, cid)
            self.defect("crate.file.misnamed", cid, Label.COMPONENT, ptr,
                        f"the entity {eid!r} names {member!r}, which the container does not hold; a member of that "
                        f"name is at {found!r}")
            self._checks(cid, ptr, rel, local, declared_size, declared_sha, media)
            self._evidence(rel, cid, ptr, e, available=True)
            return {found}
        cid = self._component(rel, {**base, "held": False}, ptr)
        self.defect("crate.file.absent", cid, Label.COMPONENT, ptr,
                    f"the entity {eid!r} names {member!r}; the container holds no member of that name")
        self._attested(rel, ptr, e)
        return set()

    def _checks(self, cid: str, ptr: str, rel: str, local: LocalBytes | None, size: int | None, sha: str | None,
                media: str | None) -> None:
        if local is not None and size is not None and local.size != size:
            self.defect("crate.size", cid, Label.COMPONENT, f"{ptr}/contentSize",
                        f"{rel}: the crate declares {size} bytes, the container holds {local.size}")
        if local is not None and sha and len(sha) == 64 and local.sha256 != sha:
            self.defect("crate.sha256", cid, Label.COMPONENT, f"{ptr}/sha256",
                        f"{rel}: the crate declares sha256 {sha}, the bytes have {local.sha256}")
        if media and (reason := media_types.mismatch(rel, media)):
            self.defect("crate.encoding_format", cid, Label.COMPONENT, f"{ptr}/encodingFormat", reason)

    def _evidence(self, rel: str, cid: str, ptr: str, e: dict[str, Any], available: bool) -> None:
        info = self._doc_info.get(cid)
        kind, rule = evidence_kind(rel, e.get("name") if isinstance(e.get("name"), str) else None,
                                   e.get("encodingFormat") if isinstance(e.get("encodingFormat"), str) else None,
                                   info[1].format if info else None)
        title = posixpath.basename(rel.rstrip("/")) or rel
        eid = self.add_evidence(rel, kind, rule, title, cid, [self.location(ptr, _at(self.doc, ptr))],
                                provenance="crate")
        if not available:
            row = next(r for r in reversed(self.g.nodes) if r.id == eid)
            row.props["available"] = False

    def _attested(self, rel: str, ptr: str, e: dict[str, Any]) -> None:
        eid = self.add_attested(rel, [self.location(ptr, _at(self.doc, ptr))])
        row = next(r for r in reversed(self.g.nodes) if r.id == eid)
        row.props["crate_entity"] = str(e.get("@id"))

    def _undescribed(self, member: str) -> None:
        rel = self._rel(member)
        cid = self._component(rel, {"held": True, "member": member, "described": False}, None)
        local = self._hold(member, rel, cid)
        loc = ids.location_id(local.sha256, "file") if local else None
        if local is not None and loc is not None and loc not in self._locations:
            self._locations.add(loc)
            self.g.nodes.append(NodeRow(loc, (Label.SOURCE_LOCATION,), self._owned({
                "kind": "file_region", "path": rel, "file_sha256": local.sha256, "locator": "file",
                "span_sha256": local.sha256})))
            self.g.edges.append(EdgeRow(Rel.IN_FILE, loc, Label.SOURCE_LOCATION, ids.file_id(local.sha256), Label.FILE))
        self.defect("crate.member.undescribed", cid, Label.COMPONENT, f"{rel}#member",
                    f"{rel}: the container holds it; no entity of the crate describes it", path=rel, location=loc)
        kind, rule = evidence_kind(rel, None, None, None)
        self.add_evidence(rel, kind, rule, posixpath.basename(rel), cid, [loc] if loc else [], provenance="crate")

    # -- digest lists: the crate's second statement -------------------------------------------------------
    def _digest_lists(self, in_root: set[str]) -> list[DigestList]:
        """The digest lists the crate carries, read: every list in the root, and a bag's manifests when the crate
        is the bag's payload folder (their paths then start at the bag's folder, which they must not leave)."""
        c = self.crate
        found: list[tuple[str, str]] = [(m, c.root) for m in sorted(in_root) if list_kind(posixpath.basename(m))]
        bag = posixpath.dirname(c.root)
        if posixpath.basename(c.root) == BAG_PAYLOAD and posixpath.join(bag, "bagit.txt") in c.members:
            found += [(m, bag) for m in sorted(c.members) if posixpath.dirname(m) == bag
                      and (k := list_kind(posixpath.basename(m))) is not None and k[0] == "manifest"]
        out: list[DigestList] = []
        for member, bound in found:
            if c.members[member] > MAX_LIST_BYTES:
                continue
            local = self._extract(member)
            if local is None:
                continue
            lines = read_list(posixpath.basename(member), local.path.read_bytes())
            if not lines:
                continue  # a name of that shape holding no digest (RSpace's schemas/manifest.txt) is not a list
            self.file(local, origin="crate")
            self._stamp_parts.append(f"list:{member}:{local.sha256}".encode("utf-8", "surrogatepass"))
            out.append(DigestList(member, self._rel(member), posixpath.dirname(member), bound, local, lines))
        return out

    def _check_list(self, dl: DigestList, in_root: set[str]) -> None:
        """Each line of the list against the bytes it names (see the module docstring)."""
        root = self.crate.root
        for x in dl.lines:
            where = self.fact_location(Fact("line", f"L{x.line}", x.text, extra={"line": x.line}), dl.path, dl.local)
            at = f"{dl.path}#L{x.line}"
            member = None if x.path.startswith("/") else _resolve(dl.bound, dl.base, x.path)
            if member is None:
                self.defect("crate.manifest.escapes", self.rec_id, Label.RECORD, at,
                            f"{dl.path} line {x.line} lists {x.path!r}, which resolves outside the crate root; "
                            "nothing outside it is read", path=dl.path, location=where)
                continue
            if member in (".", dl.bound) or (root and not member.startswith(root + "/")):
                continue  # a folder, not a file; or one of the bag's own tag files, beside the crate
            rel = self._rel(member)
            # the member's component, else the entity of that path (its bytes found elsewhere, or none)
            cid = self._by_member.get(member) or self._by_rel.get(rel)
            local = self._bytes.get(cid) if cid is not None else None
            if local is None and cid is None and member in in_root:
                local = self._extract(member)  # the crate's packaging (its metadata), held by no component
            if local is not None:
                got = local.sha256 if x.alg == "sha256" else digest_of(local.path, x.alg)
                if got != x.digest:
                    self.defect("crate.manifest", cid or self.rec_id, Label.COMPONENT if cid else Label.RECORD, at,
                                f"{dl.path} line {x.line} lists {rel} with {x.alg} {x.digest}; its bytes have {got}",
                                path=dl.path, location=where)
                if cid is not None:  # the file, where the list states its digest
                    self.g.edges.append(EdgeRow(Rel.LOCATED_AT, cid, Label.COMPONENT, where, Label.SOURCE_LOCATION))
                continue
            if cid is not None or member in self.crate.members:
                continue  # an entity describes it and the crate already says what is wrong (absent, too large)
            cid = self._component(rel, {"held": False, "listed_in": dl.path,
                                        "declared_sha256": x.digest if x.alg == "sha256" else None}, None)
            self.g.edges.append(EdgeRow(Rel.LOCATED_AT, cid, Label.COMPONENT, where, Label.SOURCE_LOCATION))
            self.defect("crate.manifest.absent", cid, Label.COMPONENT, at,
                        f"{dl.path} line {x.line} lists {rel}; the container holds no member of that name",
                        path=dl.path, location=where)
            self.add_attested(rel, [where])

    # -- versions -----------------------------------------------------------------------------------------
    def _versions(self) -> None:
        """This version's files against the previous version's (ingest/rules/versions.py), with the commit message
        the folder layout carries, if any: each change on this version's Evidence of the file, located at what
        the earlier version held there (its entity, or its member when no entity described it; for a file it did
        not hold, its graph) and at the message."""
        if self.prior is None:
            return
        p = self.prior
        self._evidence_rows = {r.id: r for r in self.g.nodes if Label.EVIDENCE in r.labels}
        found = versions.compare({rel: (f.sha256, f.size) for rel, f in p.files.items()}, self.hashes)
        message = self.crate.message
        cover = versions.coverage(message.text if message else None)
        said = [self._message_location(message)] if message else []
        for rel in found.changed:
            self._version_item(rel, "changed", {**self._before(rel)}, self._prior_location(rel), cover, said)
        for old, new in found.renamed:
            self._version_item(new, "renamed", {**self._before(old), "renamed_to": new}, self._prior_location(old),
                               cover, said)
        for rel in found.added:
            graph = p.crate.doc.get("@graph")
            self._version_item(rel, "added", {"path": rel, "sha256": None, "size": None, "listed": False, "source": {
                "path": p.crate.label, "locator": "/@graph", "sha256": span_sha256(graph)}},
                self._prior_at("/@graph", graph), cover, said)
        for rel in found.removed:
            self._removed(rel, cover, said)

    def _version_props(self, status: str, rel: str, before: dict[str, Any], cover: str) -> dict[str, Any]:
        assert self.prior is not None
        message = self.crate.message
        return {"version_status": status, "version_from": self.prior.version, "version_to": self.crate.version,
                "version_statement": message.text if message else None, "version_coverage": cover,
                "version_changed": [rel], "version_before_json": json.dumps([{**before, "status": status}],
                                                                            sort_keys=True)}

    def _version_item(self, rel: str, status: str, before: dict[str, Any], where: str, cover: str,
                      said: list[str]) -> None:
        eid = ids.evidence_id(self.rec_id, rel)
        row = self._evidence_rows.get(eid)
        if row is None:
            return
        row.props.update(self._version_props(status, rel, before, cover))
        for loc in [where, *said]:
            self.g.edges.append(EdgeRow(Rel.LOCATED_AT, eid, Label.EVIDENCE, loc, Label.SOURCE_LOCATION))

    def _removed(self, rel: str, cover: str, said: list[str]) -> None:
        """A file the earlier version held and this one does not: an Evidence of this version that answers
        `unavailable` (the one an entity of this version still names, if any), located at what the earlier
        version held and at the message."""
        eid = ids.evidence_id(self.rec_id, rel)
        props = self._version_props("removed", rel, self._before(rel), cover)
        row = self._evidence_rows.get(eid)
        if row is not None:  # this version describes it and does not hold it (absent, or outside the root)
            row.props.update(props)
        else:
            kind, rule = evidence_kind(rel, None, None, None)
            self.g.nodes.append(NodeRow(eid, (Label.EVIDENCE,), self._owned({
                "canonical_id": eid, "kind": kind, "kind_rule": rule, "title": posixpath.basename(rel) or rel,
                "filepath": rel, "record_ark": self.ark, "provenance": "version_notes", "available": False,
                "held": False, **props})))
            self.g.evidence[kind] += 1
        for loc in [self._prior_location(rel), *said]:
            self.g.edges.append(EdgeRow(Rel.LOCATED_AT, eid, Label.EVIDENCE, loc, Label.SOURCE_LOCATION))

    def _before(self, rel: str) -> dict[str, Any]:
        """What the earlier version held at a path, and where it says so (its entity, else the member's bytes)."""
        assert self.prior is not None
        f, c = self.prior.files[rel], self.prior.crate
        if f.entity is not None:
            source = {"path": c.label, "locator": f"/@graph/{f.entity}", "sha256": span_sha256(c.doc["@graph"][f.entity])}
        else:
            source = {"path": f"{c.source.name}!{f.member}" if c.source.is_file() else f.member, "locator": "file",
                      "sha256": f.sha256}
        return {"path": rel, "sha256": f.sha256, "size": f.size, "source": source}

    def _prior_location(self, rel: str) -> str:
        """The earlier version's entity of a file (in its metadata file), or the bytes of a member it held and no
        entity described."""
        assert self.prior is not None
        f, c = self.prior.files[rel], self.prior.crate
        if f.entity is not None:
            return self._prior_at(f"/@graph/{f.entity}", c.doc["@graph"][f.entity])
        loc = ids.location_id(f.sha256, "file")
        if loc not in self._locations:
            self._locations.add(loc)
            name = f"{c.source.name}!{f.member}" if c.source.is_file() else f.member
            fid = self.file(LocalBytes(Path(f.member), f.sha256, f.size), origin="crate")
            self.g.nodes.append(NodeRow(loc, (Label.SOURCE_LOCATION,), self._owned({
                "kind": "file_region", "path": name, "file_sha256": f.sha256, "locator": "file",
                "span_sha256": f.sha256})))
            self.g.edges.append(EdgeRow(Rel.IN_FILE, loc, Label.SOURCE_LOCATION, fid, Label.FILE))
        return loc

    def _prior_at(self, pointer: str, value: Any) -> str:
        """A JSON pointer into the earlier version's metadata file."""
        assert self.prior is not None
        c = self.prior.crate
        file_sha = hashlib.sha256(c.raw).hexdigest()
        loc = ids.location_id(file_sha, pointer)
        if loc not in self._locations:
            self._locations.add(loc)
            fid = self.file(LocalBytes(Path(c.metadata_member), file_sha, len(c.raw)), origin="crate")
            self.g.nodes.append(NodeRow(loc, (Label.SOURCE_LOCATION,), self._owned({
                "kind": "json_pointer", "path": c.label, "file_sha256": file_sha, "pointer": pointer,
                "span_sha256": span_sha256(value)})))
            self.g.edges.append(EdgeRow(Rel.IN_FILE, loc, Label.SOURCE_LOCATION, fid, Label.FILE))
        return loc

    def _message_location(self, message: Message) -> str:
        """The commit message, located at its file beside the export (its whole text, lines 1 to n)."""
        sha = hashlib.sha256(message.raw).hexdigest()
        lines = max(1, message.raw.decode("utf-8-sig").rstrip().count("\n") + 1)
        loc = ids.location_id(sha, f"L1-L{lines}")
        if loc not in self._locations:
            self._locations.add(loc)
            fid = self.file(LocalBytes(message.path, sha, len(message.raw)), origin="crate")
            self.g.nodes.append(NodeRow(loc, (Label.SOURCE_LOCATION,), self._owned({
                "kind": "commit_message", "path": f"{message.path.parent.name}/{message.path.name}",
                "file_sha256": sha, "locator": f"L1-L{lines}", "line": 1, "end_line": lines,
                "text": message.text[:4000], "span_sha256": sha})))
            self.g.edges.append(EdgeRow(Rel.IN_FILE, loc, Label.SOURCE_LOCATION, fid, Label.FILE))
        return loc


def _at(doc: Any, pointer: str) -> Any:
    cur = doc
    for part in pointer.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        cur = cur[int(part)] if isinstance(cur, list) else cur.get(part) if isinstance(cur, dict) else None
    return cur


def crate_builders(path: Path) -> tuple[list[CrateBuilder], list[InputError]]:
    """One builder per crate the path holds, each version told what the version before it held."""
    crates: list[Crate] = []
    problems: list[InputError] = []
    for f in crate_files(path):
        try:
            crates.append(read_crate(f))
        except InputError as exc:
            problems.append(exc)
        except OSError as exc:
            problems.append(InputError(f"cannot be read: {exc.strerror or exc}", path=str(f)))
    by_name: dict[str, list[Crate]] = {}
    for c in crates:
        by_name.setdefault(c.name, []).append(c)
    builders: list[CrateBuilder] = []
    for _name, exports in sorted(by_name.items()):
        # only dated versions have an order: an undated one is compared with nothing
        exports.sort(key=lambda c: (c.dated, version_key(c.version or "")))
        prior: PriorCrate | None = None
        for c in exports:
            b = CrateBuilder(c, prior if c.dated else None)
            builders.append(b)
            if c.dated:
                prior = PriorCrate(c.version or "", c, _prior_files(c))
    return builders, problems


def _held_files(c: Crate) -> dict[str, tuple[int | None, str]]:
    """What the crate's builder holds, by path in the crate root: each File entity's member (at its path, else the
    member of that name it means) and each member no entity describes, with the entity's graph index (None for an
    undescribed member). An entity that climbs out of the root, or names nothing the container holds, holds
    nothing; neither does the crate's own packaging."""
    in_root = {m for m in c.members if not c.root or m.startswith(c.root + "/")}
    out: dict[str, tuple[int | None, str]] = {}
    described: set[str] = set()
    for i, e in enumerate(c.doc.get("@graph") or []):
        if not isinstance(e, dict) or "File" not in _types(e) or not isinstance(e.get("@id"), str):
            continue
        eid = e["@id"]
        if ADDRESS.match(eid) and "://" in eid:
            continue
        member = _inside(c.root, eid)
        found = member if member in in_root else _same_name(eid, in_root)
        if found is not None:
            described.add(found)
            if member is not None:
                out.setdefault(_relative(c.root, member), (i, found))
    for m in sorted(in_root - described):
        if not PACKAGING.search(m):
            out.setdefault(_relative(c.root, m), (None, m))
    return out


def _relative(root: str, member: str) -> str:
    return member[len(root) + 1:] if root and member.startswith(root + "/") else member


def _prior_files(c: Crate) -> dict[str, PriorFile]:
    """The files an earlier version holds, by path in its root, with their sha256 and size (read from the
    container): what its builder held, compared with what the next version holds."""
    out: dict[str, PriorFile] = {}
    opened = None if c.source.is_dir() else zipfile.ZipFile(c.source)
    try:
        for rel, (i, member) in sorted(_held_files(c).items()):
            if c.members.get(member, 0) > MAX_MEMBER_BYTES:
                continue
            h = hashlib.sha256()
            try:
                with (opened.open(member) if opened is not None else (c.source / member).open("rb")) as fh:
                    while chunk := fh.read(1 << 20):
                        h.update(chunk)
            except (OSError, zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError):
                continue  # bytes the earlier version's own ingest names as unreadable: nothing to compare
            out[rel] = PriorFile(h.hexdigest(), c.members[member], i, member)
    finally:
        if opened is not None:
            opened.close()
    return out
