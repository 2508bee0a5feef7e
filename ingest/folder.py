"""A plain folder of files with no NERDm record (e.g. the AM Bench 2025 challenge repository): every file
becomes a DataFile component held locally and parsed by content, every sub-folder a Subcollection.

The record's identity is the folder name (`folder:<name>`); its components have no declared checksums
(nothing declares them), so the NERDm checksum rules do not apply. A file's component is located at the
file itself (SourceLocation `file`, span = the file's sha256); a folder has no bytes and no location.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from ingest import ids
from ingest.evidence import evidence_kind
from ingest.files import LocalBytes, hash_file
from ingest.nerdm import RecordBuilder, RecordGraph, _stamp
from voe.errors import InputError
from voe.graph import EdgeRow, NodeRow
from voe.ontology import Label, Rel

SKIP = {".git", "__pycache__", ".DS_Store"}


class FolderBuilder(RecordBuilder):
    def __init__(self, root: Path) -> None:  # noqa: D107 - RecordBuilder's NERDm header does not apply
        self.root = root
        self.record_file = root
        self.doc = {}
        self.validated = True
        self.provenance = "local_files"
        self._by_nerdm_id = {}
        name = root.resolve().name
        self._start(f"folder:{name}", ids.record_id(f"folder:{name}", None), None, name, [b"folder"])

    def build(self) -> RecordGraph:
        arch = ids.archive_id("local")
        self.g.nodes.append(NodeRow(arch, (Label.ARCHIVE,), {"host": "local", "name": "Local files"}))
        files: list[str] = []
        dirs: list[str] = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP)
            rel = os.path.relpath(dirpath, self.root)
            prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            dirs.extend(prefix + d for d in dirnames)
            files.extend(prefix + f for f in sorted(filenames) if f not in SKIP)
        self.g.nodes.append(NodeRow(self.rec_id, (Label.RECORD,), self._owned({
            "ark": self.ark, "title": self.g.title, "provenance": self.provenance, "source_path": str(self.root.name),
            "component_count": len(files) + len(dirs), "ingest_state": "writing",
        })))
        self.g.edges.append(EdgeRow(Rel.CONTAINS, arch, Label.ARCHIVE, self.rec_id, Label.RECORD))
        folder_ids = {d: ids.component_id(self.rec_id, d) for d in dirs}
        for d in dirs:
            self._component_row(d, folder_ids[d], Label.SUBCOLLECTION, folder_ids)
        for f in files:
            cid = ids.component_id(self.rec_id, f)
            local = self._hold_file(f, cid)
            self._component_row(f, cid, Label.DATA_FILE, folder_ids, local)
            if local is not None:
                loc = ids.location_id(local.sha256, "file")
                if loc not in self._locations:
                    self._locations.add(loc)
                    self.g.nodes.append(NodeRow(loc, (Label.SOURCE_LOCATION,), self._owned({
                        "kind": "file_region", "path": f, "file_sha256": local.sha256, "locator": "file",
                        "span_sha256": local.sha256})))
                    self.g.edges.append(EdgeRow(Rel.IN_FILE, loc, Label.SOURCE_LOCATION, ids.file_id(local.sha256),
                                                Label.FILE))
                self.g.edges.append(EdgeRow(Rel.LOCATED_AT, cid, Label.COMPONENT, loc, Label.SOURCE_LOCATION))
                info = self._doc_info.get(cid)
                kind, rule = evidence_kind(f, None, None, info[1].format if info else None)
                self.add_evidence(f, kind, rule, Path(f).name, cid, [loc], provenance=self.provenance)
        self.g.stamp = hashlib.sha256(b"\0".join(self._stamp_parts)).hexdigest()[:16]
        _stamp(self.g.nodes, self.g.edges, self.g.stamp)
        return self.g

    def _component_row(self, rel: str, cid: str, kind: Label, folder_ids: dict[str, str],
                       local: LocalBytes | None = None) -> None:
        self.g.components[kind.value] += 1
        props: dict[str, Any] = {"filepath": rel, "name": Path(rel).name, "component_type": kind.value, "nerdm_id": rel}
        if local is not None:
            props.update({"held": True, "status": "held", "sha256": local.sha256, "size": local.size})
        elif kind is Label.DATA_FILE:
            props.update({"held": False, "status": "unreadable"})
        self.g.nodes.append(NodeRow(cid, (Label.COMPONENT, kind), self._owned(props)))
        self.g.edges.append(EdgeRow(Rel.HAS_COMPONENT, self.rec_id, Label.RECORD, cid, Label.COMPONENT))
        parent = rel.rsplit("/", 1)[0] if "/" in rel else None
        if parent and parent in folder_ids:
            self.g.edges.append(EdgeRow(Rel.PART_OF, cid, Label.COMPONENT, folder_ids[parent], Label.SUBCOLLECTION))

    def _hold_file(self, rel: str, cid: str) -> LocalBytes | None:
        path = self.root / rel
        try:
            local = hash_file(path)
        except OSError as exc:
            self.g.problems.append(InputError(f"cannot be read ({exc.strerror or exc})", path=str(path)))
            self._stamp_parts.append(f"unreadable:{rel}".encode())
            return None
        self.held(path, rel, local, cid)
        return local
