"""BagIt bags (RFC 8493), zipped or as folders, multibag members grouped: the bag's own statements (its payload
manifests, tag manifests, `Payload-Oxum`, `fetch.txt`, `bag-info.txt`) checked against the bytes it holds.

A bag is a folder with `bagit.txt` (in a zip, the top folder of the members that holds it). The bags one call reads
are grouped into one Record when their multibag tag files name each other (`multibag/member-bags.tsv`; NIST's
preservation bags split one dataset over members `NAME.mbag0_3-0`, `-1`, ...), else each bag is a Record:
`bag:<name>` (the name before `.mbag`), version the highest `Multibag-Head-Version` (else none), the dataset's
`External-Identifier` kept. Each member is a Subcollection and an Evidence item; each payload file (`data/...`) a
DataFile, held, hashed and parsed by content, and an Evidence item; tag files are components, never evidence.

Findings, each located at the manifest line, the bag-info line or the bytes:
- a payload file whose bytes do not have the digest its manifest lists (`checksum_mismatch`, rule `bag.manifest`);
  a tag file against its tag manifest likewise (rule `bag.tagmanifest`);
- a manifest line for a file the bag does not hold, not listed in `fetch.txt` and not in another member (the
  multibag file lookup): `described_not_held` (rule `bag.manifest.absent`), an unavailable Evidence;
- a payload file no manifest lists: `undescribed_member` (rule `bag.payload.undescribed`);
- `Payload-Oxum` (octets.files) that is not what the bag holds: `payload_oxum_mismatch` (rule `bag.oxum`), on the
  member;
- a zipped bag beside a `.sha256` sidecar that does not hold the zip's digest: `checksum_mismatch` (rule
  `bag.zip.sha256`), on the member;
- the bag's second statement: NIST's NERDm metadata of a file (`metadata/<file>/nerdm.json`) declaring a digest
  its bytes do not have (`checksum_mismatch`, rule `bag.nerdm.sha256`); resolved when the payload manifest agrees
  with the bytes (the stale declaration reported, the file stands).
Member paths are checked before anything is read: an absolute path or one that climbs out of the bag is refused
(`id_escapes_root`, rule `bag.member.escapes`) and never extracted.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from voe.errors import InputError
from voe.graph import EdgeRow, NodeRow
from voe.ingest.builder import BuilderCore, Origin, RecordGraph, stamp_rows
from voe.ingest.payloads.files import LocalBytes, hash_file, span_sha256
from voe.ingest.payloads.parsers.model import Fact
from voe.ingest.rules import ids
from voe.ingest.rules.evidence import evidence_kind
from voe.ontology import Label, Rel

MAX_MEMBERS = 100_000
MAX_MEMBER_BYTES = 1 << 30
MBAG = re.compile(r"^(?P<base>.+?)\.mbag[\d_]+-(?P<n>\d+)$")
MANIFEST = re.compile(r"^(tag)?manifest-(?P<alg>sha256|sha512|sha1|md5)\.txt$")
ALGS = {"sha256": hashlib.sha256, "sha512": hashlib.sha512, "sha1": hashlib.sha1, "md5": hashlib.md5}


@dataclass
class Bag:
    """One bag: where it is, its name, its members' paths and sizes (relative to the bag folder)."""

    source: Path  # the zip or the folder
    name: str
    prefix: str  # a zipped bag's top folder ("NAME/"); "" for a folder bag
    files: dict[str, int]
    escapes: list[str] = field(default_factory=list)

    def read(self, rel: str) -> bytes:
        if self.source.is_dir():
            return (self.source / rel).read_bytes()
        with zipfile.ZipFile(self.source) as z:
            return z.read(self.prefix + rel)

    def text(self, rel: str) -> str:
        return self.read(rel).decode("utf-8", errors="replace") if rel in self.files else ""

    @property
    def base(self) -> str:
        m = MBAG.match(self.name)
        return m.group("base") if m else self.name

    def info(self) -> list[tuple[int, str, str]]:
        """bag-info.txt as (line, label, value), continuation lines folded into their value."""
        out: list[tuple[int, str, str]] = []
        for n, line in enumerate(self.text("bag-info.txt").splitlines(), start=1):
            if line[:1] in (" ", "\t") and out:
                ln, k, v = out[-1]
                out[-1] = (ln, k, f"{v} {line.strip()}")
            elif ":" in line:
                k, v = line.split(":", 1)
                out.append((n, k.strip(), v.strip()))
        return out

    def members(self) -> list[str]:
        """The member bags this bag's multibag tag files name (itself included)."""
        names = [x.strip().split("\t")[0] for x in self.text("multibag/member-bags.tsv").splitlines() if x.strip()]
        return sorted(set(names) | {self.name})


def _safe(rel: str) -> bool:
    norm = posixpath.normpath(rel)
    return bool(rel) and not rel.startswith("/") and not norm.startswith("../") and norm != ".."


def read_bag(source: Path) -> Bag:
    if source.is_dir():
        files = {p.relative_to(source).as_posix(): p.stat().st_size for p in source.rglob("*")
                 if p.is_file() and not p.is_symlink()}
        if "bagit.txt" not in files:
            raise InputError("holds no bagit.txt: not a BagIt bag", path=str(source))
        return Bag(source, source.name, "", files)
    try:
        with zipfile.ZipFile(source) as z:
            infos = z.infolist()
    except zipfile.BadZipFile as exc:
        raise InputError(f"is not a readable zip ({exc})", path=str(source)) from exc
    if len(infos) > MAX_MEMBERS:
        raise InputError(f"holds more than {MAX_MEMBERS} members; not read", path=str(source))
    tops = sorted(i.filename for i in infos if i.filename.count("/") == 1 and i.filename.endswith("/bagit.txt"))
    if not tops:
        raise InputError("holds no NAME/bagit.txt: not a zipped BagIt bag", path=str(source))
    prefix = tops[0][: -len("bagit.txt")]
    files = {}
    escapes: list[str] = []
    for i in infos:
        if i.is_dir() or not i.filename.startswith(prefix):
            continue
        rel = i.filename[len(prefix):]
        if not _safe(rel):
            escapes.append(i.filename)
            continue
        files[rel] = i.file_size
    escapes += [i.filename for i in infos if not i.is_dir() and not i.filename.startswith(prefix)]
    return Bag(source, prefix.rstrip("/"), prefix, files, escapes)


def is_bag(path: Path) -> bool:
    if path.is_dir():
        return (path / "bagit.txt").is_file()
    if path.suffix.lower() != ".zip" or not path.is_file():
        return False
    try:
        with zipfile.ZipFile(path) as z:
            return any(n.count("/") == 1 and n.endswith("/bagit.txt") for n in z.namelist()[:MAX_MEMBERS])
    except (zipfile.BadZipFile, OSError):
        return False


def bag_paths(path: Path) -> list[Path]:
    if is_bag(path):
        return [path]
    if not path.is_dir():
        return []
    return sorted(p for p in path.iterdir() if not p.is_symlink() and is_bag(p))


class BagBuilder(BuilderCore):
    """One dataset's bags (one bag, or the members of a multibag): a Record, a Subcollection and Evidence per
    member, a DataFile and Evidence per payload file, tag files as components."""

    SOURCE_FORMAT = "bagit"

    POINTER_LOCATED = False

    def __init__(self, bags: list[Bag]) -> None:
        self.bags = sorted(bags, key=lambda b: b.name)
        head = self.bags[-1]
        info = {k: v for b in self.bags for _, k, v in b.info()}
        self.info = info
        heads = [v for b in self.bags for _, k, v in b.info() if k == "Multibag-Head-Version"]
        self.version = max(heads, default=None)
        self.doc = {}
        self.provenance = "bag"
        self._tmp = Path(tempfile.mkdtemp(prefix="voe-bag-"))
        self.root = self._tmp
        self.record_file = head.source
        self.file_sha = hashlib.sha256(head.name.encode()).hexdigest()
        name = head.base
        self.external = [v for _, k, v in head.info() if k == "External-Identifier"]
        self._start(f"bag:{name}", ids.record_id(f"bag:{name}", self.version), self.version,
                    info.get("External-Description", name)[:300],
                    [f"bag:{b.source.name}:{b.source.stat().st_size}:{b.source.stat().st_mtime_ns}".encode()
                     for b in self.bags])
        self._entries = {}
        self._any_special = False
        self._zips: dict[str, zipfile.ZipFile] = {}

    def _fallback_origin(self) -> Origin:
        return Origin("", self.rec_id, Label.RECORD)

    def build(self) -> RecordGraph:
        self._zips = {b.name: zipfile.ZipFile(b.source) for b in self.bags if not b.source.is_dir()}
        try:
            return self._build()
        finally:
            for z in self._zips.values():
                z.close()
            shutil.rmtree(self._tmp, ignore_errors=True)

    def _build(self) -> RecordGraph:
        arch = ids.archive_id("local")
        self.g.nodes.append(NodeRow(arch, (Label.ARCHIVE,), {"host": "local", "name": "Local files"}))
        self.g.nodes.append(NodeRow(self.rec_id, (Label.RECORD,), self._owned({
            "ark": self.ark, "title": self.g.title, "version": self.version, "provenance": "bag",
            "source_path": self.bags[-1].source.name, "ingest_state": "writing",
            "external_identifiers": self.external or None, "component_count": sum(len(b.files) for b in self.bags),
            "contact_name": self.info.get("Contact-Name"), "contact_email": self.info.get("Contact-Email")})))
        self.g.edges.append(EdgeRow(Rel.CONTAINS, arch, Label.ARCHIVE, self.rec_id, Label.RECORD))
        lookup = self._lookup()
        for bag in self.bags:
            self._bag(bag, lookup)
        self.g.stamp = hashlib.sha256(b"\0".join(self._stamp_parts)).hexdigest()[:16]
        self._seal()
        stamp_rows(self.g.nodes, self.g.edges, self.g.stamp)
        return self.g

    def _lookup(self) -> dict[str, str]:
        """Payload path -> the member bag that holds it, as the multibag file lookup of the head says."""
        out: dict[str, str] = {}
        for b in self.bags:
            for line in b.text("multibag/file-lookup.tsv").splitlines():
                parts = line.strip().split("\t")
                if len(parts) == 2:
                    out[parts[0]] = parts[1]
        return out

    # -- one bag ------------------------------------------------------------------------------------------
    def _local(self, bag: Bag, rel: str) -> LocalBytes | None:
        if bag.source.is_dir():
            return hash_file(bag.source / rel)
        if bag.files.get(rel, 0) > MAX_MEMBER_BYTES:
            return None
        target = self._tmp / bag.name / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        z = self._zips.get(bag.name) or zipfile.ZipFile(bag.source)
        with z.open(bag.prefix + rel) as src, target.open("wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        return hash_file(target)

    def _line(self, bag: Bag, rel: str, local: LocalBytes, n: int, text: str) -> str:
        fact = Fact("line", f"L{n}", text, extra={"line": n})
        return self.fact_location(fact, f"{bag.name}/{rel}", local)

    def _bag(self, bag: Bag, lookup: dict[str, str]) -> None:
        mid = ids.component_id(self.rec_id, bag.name)
        self.g.components[Label.SUBCOLLECTION.value] += 1
        self.g.nodes.append(NodeRow(mid, (Label.COMPONENT, Label.SUBCOLLECTION), self._owned({
            "filepath": bag.name, "name": bag.name, "component_type": "Subcollection", "nerdm_id": bag.name})))
        self.g.edges.append(EdgeRow(Rel.HAS_COMPONENT, self.rec_id, Label.RECORD, mid, Label.COMPONENT))
        self._origins[mid] = Origin(bag.name, mid, Label.COMPONENT)
        for escaped in bag.escapes:
            self.defect("bag.member.escapes", mid, Label.COMPONENT, f"{bag.name}#{escaped}",
                        f"the zip member {escaped!r} lies outside the bag's folder; it is not read", path=bag.name)
        locals_: dict[str, LocalBytes] = {}
        comps: dict[str, str] = {}
        for rel in sorted(bag.files):
            cid = ids.component_id(self.rec_id, f"{bag.name}/{rel}")
            comps[rel] = cid
            payload = rel.startswith("data/")
            self.g.components[Label.DATA_FILE.value] += 1
            self.g.nodes.append(NodeRow(cid, (Label.COMPONENT, Label.DATA_FILE), self._owned({
                "filepath": f"{bag.name}/{rel}", "name": posixpath.basename(rel), "component_type": "DataFile",
                "nerdm_id": rel, "held": True, "bag_role": "payload" if payload else "tag"})))
            self.g.edges.append(EdgeRow(Rel.HAS_COMPONENT, self.rec_id, Label.RECORD, cid, Label.COMPONENT))
            self.g.edges.append(EdgeRow(Rel.PART_OF, cid, Label.COMPONENT, mid, Label.SUBCOLLECTION))
            self._origins[cid] = Origin(f"{bag.name}/{rel}", cid, Label.COMPONENT)
            local = self._local(bag, rel)
            if local is None:
                continue
            locals_[rel] = local
            loc = self._file_location(f"{bag.name}/{rel}", local)
            self.g.edges.append(EdgeRow(Rel.LOCATED_AT, cid, Label.COMPONENT, loc, Label.SOURCE_LOCATION))
            self.held(local.path, f"{bag.name}/{rel}", local, cid, parse=payload)
        listed = self._manifests(bag, locals_, comps, mid, lookup)
        for rel in sorted(r for r in bag.files if r.startswith("data/") and r not in listed):
            at = self._file_location(f"{bag.name}/{rel}", locals_[rel]) if rel in locals_ else None
            self.defect("bag.payload.undescribed", comps[rel], Label.COMPONENT, f"{bag.name}/{rel}#manifest",
                        f"{bag.name}/{rel}: the bag holds it; no payload manifest lists it", path=f"{bag.name}/{rel}",
                        location=at)
        self._oxum(bag, locals_, mid)
        self._zip_sidecar(bag, mid)
        self._nerdm(bag, locals_, comps)
        info_at = [self._file_location(f"{bag.name}/bag-info.txt", locals_["bag-info.txt"])] \
            if "bag-info.txt" in locals_ else []
        self.add_evidence(bag.name, "characterization", "bag_member", bag.name, mid, info_at, provenance="bag",
                          members=sum(1 for r in bag.files if r.startswith("data/")))
        for rel in sorted(r for r in bag.files if r.startswith("data/")):
            if rel.endswith(".sha256"):
                continue  # a sidecar beside its file: integrity metadata, never evidence
            info = self._doc_info.get(comps[rel])
            kind, rule = evidence_kind(rel, None, None, info[1].format if info else None)
            locs = [self._file_location(f"{bag.name}/{rel}", locals_[rel])] if rel in locals_ else []
            self.add_evidence(f"{bag.name}/{rel}", kind, rule, posixpath.basename(rel), comps[rel], locs,
                              provenance="bag")

    def _file_location(self, path: str, local: LocalBytes) -> str:
        loc = ids.location_id(local.sha256, "file")
        if loc not in self._locations:
            self._locations.add(loc)
            self.g.nodes.append(NodeRow(loc, (Label.SOURCE_LOCATION,), self._owned({
                "kind": "file_region", "path": path, "file_sha256": local.sha256, "locator": "file",
                "span_sha256": local.sha256})))
            self.g.edges.append(EdgeRow(Rel.IN_FILE, loc, Label.SOURCE_LOCATION, ids.file_id(local.sha256), Label.FILE))
        return loc

    def _manifests(self, bag: Bag, locals_: dict[str, LocalBytes], comps: dict[str, str], mid: str,
                   lookup: dict[str, str]) -> set[str]:
        """Every manifest line checked; the payload paths the payload manifests list."""
        fetched = {parts[-1] for line in bag.text("fetch.txt").splitlines() if len(parts := line.split()) >= 3}
        listed: set[str] = set()
        for name in sorted(r for r in bag.files if MANIFEST.match(r)):
            m = MANIFEST.match(name)
            assert m is not None
            tag, alg = bool(m.group(1)), m.group("alg")
            mlocal: LocalBytes | None = locals_.get(name)
            for n, line in enumerate(bag.text(name).splitlines(), start=1):
                parts = line.strip().split(None, 1)
                if len(parts) != 2:
                    continue
                digest, rel = parts[0].lower(), parts[1].strip()
                if not tag:
                    listed.add(rel)
                where: str | None = self._line(bag, name, mlocal, n, line) if mlocal else None
                if rel in locals_:
                    got = locals_[rel].sha256 if alg == "sha256" else _digest(bag, rel, alg)
                    if got != digest:
                        self.defect("bag.tagmanifest" if tag else "bag.manifest", comps[rel], Label.COMPONENT,
                                    f"{bag.name}/{name}#L{n}", f"{bag.name}/{name} line {n} lists {rel} with {alg} "
                                    f"{digest}; its bytes have {got}", path=f"{bag.name}/{name}", location=where)
                elif rel not in bag.files and rel not in fetched and lookup.get(rel, bag.name) == bag.name and not tag:
                    cid = ids.component_id(self.rec_id, f"{bag.name}/{rel}")
                    self.g.nodes.append(NodeRow(cid, (Label.COMPONENT, Label.DATA_FILE), self._owned({
                        "filepath": f"{bag.name}/{rel}", "name": posixpath.basename(rel), "held": False,
                        "component_type": "DataFile", "nerdm_id": rel, "declared_sha256": digest if alg == "sha256"
                        else None, "bag_role": "payload"})))
                    self.g.edges.append(EdgeRow(Rel.HAS_COMPONENT, self.rec_id, Label.RECORD, cid, Label.COMPONENT))
                    self.g.edges.append(EdgeRow(Rel.PART_OF, cid, Label.COMPONENT, mid, Label.SUBCOLLECTION))
                    self.defect("bag.manifest.absent", cid, Label.COMPONENT, f"{bag.name}/{name}#L{n}",
                                f"{bag.name}/{name} line {n} lists {rel}; the bag does not hold it, fetch.txt does not "
                                "list it, and no other member holds it", path=f"{bag.name}/{name}", location=where)
                    self.add_attested(f"{bag.name}/{rel}", [where] if where else [])
                if rel in comps and not tag and where is not None:  # the payload file, where its manifest lists it
                    self.g.edges.append(EdgeRow(Rel.LOCATED_AT, comps[rel], Label.COMPONENT, where, Label.SOURCE_LOCATION))
        return listed

    def _nerdm(self, bag: Bag, locals_: dict[str, LocalBytes], comps: dict[str, str]) -> None:
        """A NIST preservation bag's second statement: the NERDm metadata of each file (metadata/<file>/nerdm.json)
        declares its size and digest; one that disagrees with the bytes is a finding on the file, which its payload
        manifest resolves when that agrees (the stale declaration is the curator's to fix)."""
        for rel in sorted(r for r in bag.files if r.startswith("metadata/") and r.endswith("/nerdm.json")
                          and r.count("/") >= 2):
            try:
                comp = json.loads(bag.read(rel))
            except (ValueError, UnicodeDecodeError):
                continue
            if not isinstance(comp, dict) or not isinstance(comp.get("filepath"), str):
                continue
            target = f"data/{comp['filepath']}"
            checksum = comp.get("checksum")
            declared = str(checksum.get("hash") or "").lower() if isinstance(checksum, dict) else ""
            held = locals_.get(target)
            meta = locals_.get(rel)
            if held is None or meta is None or not declared or declared == held.sha256:
                continue
            where = self._json_location(f"{bag.name}/{rel}", meta, "/checksum/hash", declared)
            self.defect("bag.nerdm.sha256", comps[target], Label.COMPONENT, f"{bag.name}/{rel}#/checksum/hash",
                        f"{bag.name}/{rel} declares sha256 {declared} for {target}; its bytes have {held.sha256}",
                        path=f"{bag.name}/{rel}", location=where)

    def _json_location(self, path: str, local: LocalBytes, pointer: str, value: object) -> str:
        loc = ids.location_id(local.sha256, pointer)
        if loc not in self._locations:
            self._locations.add(loc)
            self.g.nodes.append(NodeRow(loc, (Label.SOURCE_LOCATION,), self._owned({
                "kind": "json_pointer", "path": path, "file_sha256": local.sha256, "pointer": pointer,
                "span_sha256": span_sha256(value)})))
            self.g.edges.append(EdgeRow(Rel.IN_FILE, loc, Label.SOURCE_LOCATION, ids.file_id(local.sha256), Label.FILE))
        return loc

    def _oxum(self, bag: Bag, locals_: dict[str, LocalBytes], mid: str) -> None:
        info = [(n, k, v) for n, k, v in bag.info() if k == "Payload-Oxum"]
        if not info:
            return
        n, _, value = info[0]
        m = re.match(r"^(\d+)\.(\d+)$", value)
        payload = [r for r in bag.files if r.startswith("data/")]
        octets, count = sum(bag.files[r] for r in payload), len(payload)
        if m and (int(m.group(1)), int(m.group(2))) != (octets, count):
            local = locals_.get("bag-info.txt")
            where = self._line(bag, "bag-info.txt", local, n, f"Payload-Oxum: {value}") if local else None
            self.defect("bag.oxum", mid, Label.COMPONENT, f"{bag.name}/bag-info.txt#L{n}",
                        f"{bag.name}/bag-info.txt line {n} states Payload-Oxum {value}; the bag holds {octets} octets "
                        f"in {count} payload files", path=f"{bag.name}/bag-info.txt", location=where)

    def _zip_sidecar(self, bag: Bag, mid: str) -> None:
        if bag.source.is_dir():
            return
        sidecar = bag.source.with_name(bag.source.name + ".sha256")
        if not sidecar.is_file():
            return
        declared = sidecar.read_text(errors="replace").strip().split()[0].lower() if sidecar.stat().st_size else ""
        actual = hash_file(bag.source).sha256
        if declared != actual:
            self.defect("bag.zip.sha256", mid, Label.COMPONENT, f"{bag.source.name}#sha256",
                        f"{sidecar.name} holds {declared[:64]!r}; {bag.source.name} has sha256 {actual}",
                        path=sidecar.name)


def _digest(bag: Bag, rel: str, alg: str) -> str:
    h = ALGS[alg]()
    h.update(bag.read(rel))
    return h.hexdigest()


def bag_builders(path: Path) -> tuple[list[BagBuilder], list[InputError]]:
    """One builder per dataset: multibag members that name each other grouped, every other bag alone."""
    bags: list[Bag] = []
    problems: list[InputError] = []
    for p in bag_paths(path):
        try:
            bags.append(read_bag(p))
        except InputError as exc:
            problems.append(exc)
        except OSError as exc:
            problems.append(InputError(f"cannot be read: {exc.strerror or exc}", path=str(p)))
    groups: dict[str, list[Bag]] = {}
    for b in bags:
        groups.setdefault(b.base, []).append(b)
    return [BagBuilder(g) for _, g in sorted(groups.items())], problems
