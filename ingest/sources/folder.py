"""A plain folder of files with no NERDm record (e.g. the AM Bench 2025 challenge repository): every file
becomes a DataFile component held locally and parsed by content, every sub-folder a Subcollection.

The record's identity is the folder name (`folder:<name>`); the Record keeps the resolved absolute path as
`source_root`. A second folder with the same name, ingested while the graph holds a complete record of
the first, is a record of its own: `folder:<name>~<first 8 hex of sha256(resolved path)>` (chosen by
ingest/pipeline.py, which asks the graph; a record written before `source_root` existed counts as the
same folder). Its components have no declared checksums (nothing declares them), so the NERDm checksum
rules do not apply. A file's component is located at the file itself (SourceLocation `file`, span = the
file's sha256); a folder has no bytes and no location.

A `<target>.sha256` file is a ChecksumFile, never evidence, not parsed; it DESCRIBES the target's
component when `<target>` is a file of the folder and its content is checked against the target's
recomputed sha256 (rules `folder.sidecar.*` in ingest/rules/defects.py).

Ingest reads only what the folder holds: a symlink (to a file or a folder, inside or outside) is not
followed and a FIFO, socket or device is not opened. Each such entry is a DataFile component that is not
held (`status: "not_a_regular_file"`, `entry_type` what it is) with a `not_a_regular_file` defect (rule
`file.special`); the defect has no SourceLocation (there are no bytes at that path to point into).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from voe.errors import InputError
from voe.graph import EdgeRow, NodeRow
from voe.ingest.builder import BuilderCore, Origin, RecordGraph, stamp_rows
from voe.ingest.payloads.files import SPECIAL_NAMES, LocalBytes, NotRegularFile, hash_file, list_entries, walk_order
from voe.ingest.rules import ids
from voe.ingest.rules.evidence import evidence_kind
from voe.ingest.sources.releases import ParsedFile, is_changelog, release_evidence
from voe.ontology import Label, Rel

SKIP = frozenset({".git", "__pycache__", ".DS_Store"})
SIDECAR_SUFFIX = ".sha256"


def folder_ark(root: Path) -> str:
    """The identity of the first folder with this name: `folder:<name>`."""
    return f"folder:{root.resolve().name}"


def distinct_folder_ark(root: Path) -> str:
    """The identity of a folder whose name another folder's record already holds."""
    resolved = root.resolve()
    digest = hashlib.sha256(str(resolved).encode("utf-8", "surrogatepass")).hexdigest()
    return f"folder:{resolved.name}~{digest[:8]}"


def is_sidecar(relpath: str) -> bool:
    return relpath.lower().endswith(SIDECAR_SUFFIX)


class FolderBuilder(BuilderCore):
    SOURCE_FORMAT = "folder"
    POINTER_LOCATED = False  # no record file: a defect is located at a file's bytes, or not at all

    def __init__(self, root: Path, ark: str | None = None,
                 shares_name_with: str | None = None) -> None:
        self.root = root
        self.record_file = root
        self.doc = {}
        self.validated = True
        self.provenance = "local_files"
        name = root.resolve().name
        ark = ark or folder_ark(root)
        self._start(ark, ids.record_id(ark, None), None, name, [b"folder"])
        self.g.source_root = str(root.resolve())
        self.g.shares_name_with = shares_name_with
        self._special: dict[str, str] = {}  # entries that are not regular files, by relative path

    def build(self) -> RecordGraph:
        arch = ids.archive_id("local")
        self.g.nodes.append(NodeRow(arch, (Label.ARCHIVE,), {"host": "local", "name": "Local files"}))
        entries = list_entries(self.root, SKIP)  # symlinked folders are listed as symlinks, never entered
        dirs = sorted((rel for rel, kind in entries.items() if kind == "dir"), key=walk_order)
        files = sorted((rel for rel, kind in entries.items() if kind != "dir"), key=walk_order)
        # symlinks (to files or folders), FIFOs, sockets, devices: never opened
        special = {rel: kind for rel, kind in entries.items() if kind not in ("file", "dir")}
        self.g.nodes.append(NodeRow(self.rec_id, (Label.RECORD,), self._owned({
            "ark": self.ark, "title": self.g.title, "provenance": self.provenance, "source_path": str(self.root.name),
            "source_root": self.g.source_root, "component_count": len(files) + len(dirs), "ingest_state": "writing",
        })))
        self.g.edges.append(EdgeRow(Rel.CONTAINS, arch, Label.ARCHIVE, self.rec_id, Label.RECORD))
        folder_ids = {d: ids.component_id(self.rec_id, d) for d in dirs}
        for d in dirs:
            self._component_row(d, folder_ids[d], Label.SUBCOLLECTION, folder_ids)
            self._origins[folder_ids[d]] = Origin(f"{d}#folder", folder_ids[d], Label.COMPONENT)
        held: dict[str, tuple[str, LocalBytes | None]] = {}
        summaries: list[ParsedFile] = []  # release notes (ingest/sources/releases.py)
        changelogs: list[ParsedFile] = []
        # a listed file (never a symlink, FIFO or device: `entries` says what each is) that is not a sidecar
        with self._parsing_ahead(f for f in files if entries[f] == "file" and not is_sidecar(f)):
            for f in files:
                cid = ids.component_id(self.rec_id, f)
                sidecar = is_sidecar(f)
                local = self._hold_file(f, cid, parse=not sidecar, special=special.get(f))
                held[f] = (cid, local)
                self._component_row(f, cid, Label.CHECKSUM_FILE if sidecar else Label.DATA_FILE, folder_ids, local,
                                    special=self._special.get(f))
                self._origins[cid] = Origin(f"{f}#file", cid, Label.COMPONENT)
                if local is not None:
                    loc = ids.location_id(local.sha256, "file")
                    self._origins[cid] = Origin(f"{f}#file", cid, Label.COMPONENT, location=loc)
                    if loc not in self._locations:
                        self._locations.add(loc)
                        self.g.nodes.append(NodeRow(loc, (Label.SOURCE_LOCATION,), self._owned({
                            "kind": "file_region", "path": f, "file_sha256": local.sha256, "locator": "file",
                            "span_sha256": local.sha256})))
                        self.g.edges.append(EdgeRow(Rel.IN_FILE, loc, Label.SOURCE_LOCATION, ids.file_id(local.sha256),
                                                    Label.FILE))
                    self.g.edges.append(EdgeRow(Rel.LOCATED_AT, cid, Label.COMPONENT, loc, Label.SOURCE_LOCATION))
                    if sidecar:
                        continue  # integrity metadata of its target, never evidence (ingest/rules/evidence.py)
                    info = self._doc_info.get(cid)
                    kind, rule = evidence_kind(f, None, None, info[1].format if info else None)
                    eid = self.add_evidence(f, kind, rule, Path(f).name, cid, [loc], provenance=self.provenance)
                    self._origins[eid] = self._origins[cid]
                    if info is not None and info[1].format == "release_summary":
                        summaries.append(ParsedFile(f, info[1], local))
                    elif info is not None and is_changelog(f, info[1]):
                        changelogs.append(ParsedFile(f, info[1], local))
        release_evidence(self, summaries, changelogs)  # once all files are parsed: the changelogs name files too
        self.measurement_tables(self._file_evidence(files))
        for f in files:
            if is_sidecar(f):
                self._check_sidecar(f, held)
        self.g.stamp = hashlib.sha256(b"\0".join(self._stamp_parts)).hexdigest()[:16]
        self._seal()
        stamp_rows(self.g.nodes, self.g.edges, self.g.stamp)
        return self.g

    def _file_evidence(self, files: list[str]) -> dict[str, str]:
        """Each file's name and stem -> its evidence id (a measurement's metadata may name a file)."""
        out: dict[str, str] = {}
        for f in files:
            if is_sidecar(f) or f in self._special:
                continue
            eid = ids.evidence_id(self.rec_id, f)
            name = Path(f).name
            out.setdefault(name, eid)
            out.setdefault(name.lower(), eid)
            out.setdefault(name.rsplit(".", 1)[0], eid)
        return out

    def _fallback_origin(self) -> Origin:
        return Origin("", self.rec_id, Label.RECORD)  # the folder's own name and path: no bytes to locate them in

    def _component_row(self, rel: str, cid: str, kind: Label, folder_ids: dict[str, str],
                       local: LocalBytes | None = None, special: str | None = None) -> None:
        self.g.components[kind.value] += 1
        props: dict[str, Any] = {"filepath": rel, "name": Path(rel).name, "component_type": kind.value, "nerdm_id": rel}
        if local is not None:
            props.update({"held": True, "status": "held", "sha256": local.sha256, "size": local.size})
        elif special is not None:
            props.update({"held": False, "status": "not_a_regular_file", "entry_type": special})
        elif kind in (Label.DATA_FILE, Label.CHECKSUM_FILE):
            props.update({"held": False, "status": "unreadable"})
        if kind is Label.CHECKSUM_FILE:
            props["describes"] = rel[: -len(SIDECAR_SUFFIX)]  # the target's path (its nerdm_id in a plain folder)
        self.g.nodes.append(NodeRow(cid, (Label.COMPONENT, kind), self._owned(props)))
        self.g.edges.append(EdgeRow(Rel.HAS_COMPONENT, self.rec_id, Label.RECORD, cid, Label.COMPONENT))
        parent = rel.rsplit("/", 1)[0] if "/" in rel else None
        if parent and parent in folder_ids:
            self.g.edges.append(EdgeRow(Rel.PART_OF, cid, Label.COMPONENT, folder_ids[parent], Label.SUBCOLLECTION))

    def _hold_file(self, rel: str, cid: str, parse: bool = True, special: str | None = None) -> LocalBytes | None:
        path = self.root / rel
        try:
            if special is not None:
                raise NotRegularFile(path, special)
            local = hash_file(path)
        except NotRegularFile as exc:  # listed as one, or replaced by one since: not followed, not opened
            self._special[rel] = exc.kind
            self.defect("file.special", cid, Label.COMPONENT, f"{rel}#entry",
                        f"{rel}: is {SPECIAL_NAMES.get(exc.kind, SPECIAL_NAMES['other'])}; nothing of it is read",
                        path=rel)
            self._stamp_parts.append(f"special:{rel}:{exc.kind}".encode("utf-8", "surrogatepass"))
            return None
        except OSError as exc:
            self.g.problems.append(InputError(f"cannot be read ({exc.strerror or exc})", path=str(path)))
            self._stamp_parts.append(f"unreadable:{rel}".encode("utf-8", "surrogatepass"))
            return None
        self.held(path, rel, local, cid, parse=parse)
        return local

    def _check_sidecar(self, rel: str, held: dict[str, tuple[str, LocalBytes | None]]) -> None:
        """DESCRIBES the target when the folder holds it; its content must be the target's recomputed sha256."""
        cid, local = held[rel]
        if local is None:
            return  # unreadable: reported as an input problem, nothing to locate a defect at
        loc = ids.location_id(local.sha256, "file")
        target_rel = rel[: -len(SIDECAR_SUFFIX)]
        if target_rel not in held:
            self.defect("folder.sidecar.describes", cid, Label.COMPONENT, f"{rel}#describes",
                        f"{rel}: describes {target_rel!r}, which is not a file of the folder", path=rel, location=loc)
            self.add_attested(target_rel, [loc])
            return
        tid, target = held[target_rel]
        self.g.edges.append(EdgeRow(Rel.DESCRIBES, cid, Label.CHECKSUM_FILE, tid, Label.COMPONENT))
        if target is None:
            return  # the target cannot be read: nothing to compare with
        try:
            with local.path.open("rb") as fh:
                text = fh.read(4096).decode("ascii", errors="replace").strip()  # a digest line, not a payload
        except OSError as exc:
            self.g.problems.append(InputError(f"cannot be read ({exc.strerror or exc})", path=str(local.path)))
            return
        content = text.split()[0].lower() if text else ""
        if content != target.sha256:
            self.defect("folder.sidecar.bytes", cid, Label.COMPONENT, f"{rel}#file",
                        f"{rel}: holds {content[:64]!r}, but {target_rel} has sha256 {target.sha256}",
                        path=rel, location=loc)
