"""A catalog of records whose NIST bytes we do not hold, written from a facts file (FACTS.md).

Each `## ...` section naming `Record: ark:/88434/mds2-N` becomes a Record with `provenance:
"reconstructed"`; each file it lists (a Markdown table row or a line of a code block: path, optional
size) becomes a DataFile component that is not held, and one Evidence per top-level item. Every fact is
located at its line in the facts file, so nothing downstream can mistake it for NIST bytes.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from voe.errors import InputError
from voe.graph import EdgeRow, NodeRow
from voe.ingest.builder import BuilderCore, Origin, RecordGraph, stamp_rows
from voe.ingest.payloads.files import LocalBytes
from voe.ingest.rules import ids
from voe.ingest.rules.evidence import evidence_kind
from voe.ontology import Label, Rel

RECORD_RE = re.compile(r"Record:\s*(ark:/\d+/(mds[\w-]+))(?:\s*,\s*(doi:\S+?))?[\s.(]")
TABLE_ROW_RE = re.compile(r"^\|\s*`(?P<path>[^`]+)`\s*\|\s*(?P<size>[^|]*)\|")
CODE_LINE_RE = re.compile(r"^(?P<path>[\w./ -]+?\.\w+)\s*(?:\((?P<size>[\d,]+) bytes\))?\s*$")


def looks_like_catalog(data: bytes) -> bool:
    return b"Record: ark:/" in data and b"## " in data


class CatalogBuilder(BuilderCore):
    """Builds one reconstructed record from one section of the facts file."""

    POINTER_LOCATED = False  # located at lines of the facts file
    SOURCE_FORMAT = "facts_catalog"

    def __init__(self, path: Path, local: LocalBytes, lines: list[str], start: int, end: int, ark: str,
                 doi: str | None) -> None:  # noqa: D107
        self.root = path.parent
        self.record_file = path
        self.doc = {}
        self.validated = True
        self.provenance = "reconstructed"
        self.local = local
        self.lines, self.start, self.end = lines, start, end
        heading = lines[start].lstrip("# ").strip()
        # A version mentioned as "plausible, unconfirmed" is not a version: the id says only "reconstructed".
        self.doi, self.title = doi, heading
        self._start(ark, ids.record_id(ark, "reconstructed"), None, heading,
                    [b"catalog", local.sha256.encode(), ark.encode("utf-8", "surrogatepass")])

    def line_location(self, n: int) -> str:
        text = self.lines[n - 1]
        loc = ids.location_id(self.local.sha256, f"L{n}")
        if loc not in self._locations:
            self._locations.add(loc)
            self.g.nodes.append(NodeRow(loc, (Label.SOURCE_LOCATION,), self._owned({
                "kind": "line", "path": self.record_file.name, "file_sha256": self.local.sha256, "locator": f"L{n}",
                "line": n, "text": text, "span_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
                "provenance": "reconstructed"})))
            self.g.edges.append(EdgeRow(Rel.IN_FILE, loc, Label.SOURCE_LOCATION, ids.file_id(self.local.sha256),
                                        Label.FILE))
        return loc

    def build(self) -> RecordGraph:
        fid = self.file(self.local, origin="facts")
        arch = ids.archive_id("data.nist.gov")
        self.g.nodes.append(NodeRow(arch, (Label.ARCHIVE,), {"host": "data.nist.gov", "name": "NIST Public Data Repository"}))
        self.g.nodes.append(NodeRow(self.rec_id, (Label.RECORD,), self._owned({
            "ark": self.ark, "doi": self.doi, "title": self.title, "provenance": "reconstructed",
            "source_path": self.record_file.name, "source_sha256": self.local.sha256, "ingest_state": "writing",
        })))
        self.g.edges.append(EdgeRow(Rel.CONTAINS, arch, Label.ARCHIVE, self.rec_id, Label.RECORD))
        self.g.edges.append(EdgeRow(Rel.STORED_AS, self.rec_id, Label.RECORD, fid, Label.FILE, {"path": self.record_file.name}))
        self.g.edges.append(EdgeRow(Rel.LOCATED_AT, self.rec_id, Label.RECORD, self.line_location(self.start + 1),
                                    Label.SOURCE_LOCATION))
        in_code = False
        seen: set[str] = set()
        for n in range(self.start + 1, self.end + 1):
            line = self.lines[n - 1]
            if line.strip().startswith("```"):
                in_code = not in_code
                continue
            m = TABLE_ROW_RE.match(line) if not in_code else CODE_LINE_RE.match(line.strip())
            if not m or m.group("path") in seen:
                continue
            path = m.group("path").strip()
            seen.add(path)
            size_text = (m.group("size") or "").strip() or None
            cid = ids.component_id(self.rec_id, f"cmps/{path}")
            self.g.components["DataFile"] += 1
            self.g.nodes.append(NodeRow(cid, (Label.COMPONENT, Label.DATA_FILE), self._owned({
                "filepath": path, "name": path.rsplit("/", 1)[-1], "component_type": "DataFile", "held": False,
                "status": "not_held", "listed_size": size_text, "provenance": "reconstructed",
            })))
            self.g.edges.append(EdgeRow(Rel.HAS_COMPONENT, self.rec_id, Label.RECORD, cid, Label.COMPONENT))
            loc = self.line_location(n)
            self.g.edges.append(EdgeRow(Rel.LOCATED_AT, cid, Label.COMPONENT, loc, Label.SOURCE_LOCATION))
            kind, rule = evidence_kind(path, None, None, None)
            eid = self.add_evidence(path, kind, rule, path, cid, [loc], provenance="reconstructed")
            self._origins[cid] = self._origins[eid] = Origin(f"L{n}", cid, Label.COMPONENT, location=loc)
        self.g.stamp = hashlib.sha256(b"\0".join(self._stamp_parts)).hexdigest()[:16]
        self._seal()
        stamp_rows(self.g.nodes, self.g.edges, self.g.stamp)
        return self.g

    def _fallback_origin(self) -> Origin:
        return Origin(f"L{self.start + 1}", self.rec_id, Label.RECORD, location=self.line_location(self.start + 1))


def catalog_builders(path: Path, local: LocalBytes, data: bytes) -> list[CatalogBuilder]:
    try:
        lines = data.decode("utf-8-sig").splitlines()
    except UnicodeDecodeError as exc:
        raise InputError(f"facts catalog is not UTF-8 text (byte {exc.start})", path=str(path)) from exc
    heads = [i for i, ln in enumerate(lines) if ln.startswith("## ")] + [len(lines)]
    out = []
    for a, b in zip(heads, heads[1:], strict=False):
        section = "\n".join(lines[a:b])
        m = RECORD_RE.search(section + "\n")
        if not m or not any(TABLE_ROW_RE.match(ln) or ln.strip().startswith("```") for ln in lines[a:b]):
            continue
        out.append(CatalogBuilder(path, local, lines, a, b, m.group(1), m.group(3)))
    if not out:
        raise InputError("no record sections (## heading with `Record: ark:/...` and a file list) found", path=str(path))
    return out
