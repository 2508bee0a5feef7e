"""Every real file type in the shared archives ingests into facts whose locations re-resolve to the same
bytes; evidence objects and the reconstructed catalog land in the graph with the right provenance."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
from pathlib import Path

import openpyxl

from tests.ingest.helpers import defects_by_kind, rows
from voe.graph import Graph
from voe.ingest import ingest_paths
from voe.ingest.payloads.files import resolve_pointer, span_sha256
from voe.ingest.payloads.parsers.encoding import decode_text
from voe.ingest.payloads.parsers.tabular import cell_text


def _resolve(root: Path, loc: dict) -> str:
    """Walk a SourceLocation back to the file and return the text found there."""
    path = root / loc["path"]
    kind = loc["kind"]
    if kind in ("line", "step_header"):
        lines = decode_text(path.read_bytes()).splitlines()
        return "\n".join(lines[loc["line"] - 1 : loc.get("end_line", loc["line"])])
    if kind == "csv_cell":
        table = list(csv.reader(io.StringIO(decode_text(path.read_bytes()), newline="")))
        return table[loc["line"] - 1][loc["column"] - 1]
    if kind == "cell":
        return cell_text(openpyxl.load_workbook(path)[loc["sheet"]][loc["cell"]].value)
    raise AssertionError(kind)


def test_every_file_type_resolves_back_to_its_bytes(graph: Graph, archives: Path) -> None:
    report = ingest_paths([archives / "amb2025-template", archives / "mds2-2525"], graph)
    assert report.errors == []
    assert report.formats == {"csv": 9, "nc": 5, "printtracker_xlsx": 3, "step": 2, "text": 1, "thermocouple_xlsx": 2}
    locs = rows(graph, "MATCH (l:SourceLocation)-[:IN_FILE]->(f:File) WHERE l.text IS NOT NULL "
                       "RETURN properties(l) AS l, f.sha256 AS sha")
    by_kind: dict[str, list[dict]] = {}
    for r in locs:
        by_kind.setdefault(r["l"]["kind"], []).append(r)
    assert set(by_kind) == {"csv_cell", "cell", "line", "step_header"}
    roots = {"folder": archives / "amb2025-template", "nerdm": archives / "mds2-2525"}
    checked = 0
    for kind, items in by_kind.items():
        for r in items[:: max(1, len(items) // 40)]:
            loc = r["l"]
            root = roots["nerdm"] if (roots["nerdm"] / loc["path"]).exists() else roots["folder"]
            assert hashlib.sha256((root / loc["path"]).read_bytes()).hexdigest() == loc["file_sha256"] == r["sha"]
            text = _resolve(root, loc)
            assert text == loc["text"], (kind, loc["locator"])
            assert hashlib.sha256(text.encode()).hexdigest() == loc["span_sha256"]
            checked += 1
    assert checked > 100
    # JSON pointers into the record file resolve too
    doc = json.loads((archives / "mds2-2525" / "nerdm.json").read_text(encoding="utf-8-sig"))
    for r in rows(graph, "MATCH (l:SourceLocation {kind: 'json_pointer'}) RETURN l.pointer AS p, l.span_sha256 AS s"):
        assert span_sha256(resolve_pointer(doc, r["p"])) == r["s"]


def test_evidence_objects_and_their_kinds(graph: Graph, archives: Path) -> None:
    ingest_paths([archives / "amb2025-template", archives / "mds2-4103"], graph)
    ev = {r["f"]: r for r in rows(
        graph, "MATCH (e:Evidence)-[:EVIDENCED_BY]->(c:Component) OPTIONAL MATCH (e)-[:LOCATED_AT]->(l) "
               "RETURN e.filepath AS f, e.kind AS kind, e.canonical_id AS id, c.filepath AS c, count(l) AS locs")}
    assert ev["04/BuildInfo/NIST_Bench_S5_P1.eia"]["kind"] == "process_record"
    assert ev["04/BuildInfo/AMB_g-code.txt"]["kind"] == "process_record"  # by content, not by .txt
    assert ev["05/Bead_Print_Temperature_Info/AMB2025-05-SB-1-Thermocouple.xlsx"]["kind"] == "calibration_artifact"
    assert ev["04/SubmissionTemplates/CHAL-AMB2025-04-RS01.csv"]["kind"] == "source_document"
    assert ev["4103_ReadMe.txt"]["kind"] == "source_document"
    assert ev["Cross_Sections/Micrographs"]["kind"] == "characterization"
    assert all(r["locs"] >= 1 and r["f"] == r["c"] for r in ev.values())
    sidecars = rows(graph, "MATCH (e:Evidence)-[:EVIDENCED_BY]->(:ChecksumFile) RETURN count(e) AS n")
    assert sidecars[0]["n"] == 0


def test_reconstructed_catalog_is_never_nist_bytes(graph: Graph, archives: Path) -> None:
    report = ingest_paths([archives / "FACTS.md"], graph)
    assert report.records == 2 and report.errors == []
    recs = rows(graph, "MATCH (r:Record) RETURN r.ark AS ark, r.provenance AS p, r.id AS id ORDER BY ark")
    assert [(r["ark"], r["p"]) for r in recs] == [("ark:/88434/mds2-3734", "reconstructed"),
                                                  ("ark:/88434/mds2-3735", "reconstructed")]
    assert all(r["id"].endswith("@reconstructed") for r in recs)
    ev = rows(graph, "MATCH (e:Evidence) RETURN e.provenance AS p, e.kind AS k, e.filepath AS f")
    assert {e["p"] for e in ev} == {"reconstructed"}
    kinds = {e["f"]: e["k"] for e in ev}
    assert kinds["calibration data.zip"] == "calibration_artifact"
    assert kinds["calibration_data/fatigue_testing/fatigue_800hip.xlsx"] == "calibration_artifact"
    assert kinds["answers_data/fatigue_both_conditions.xlsx"] == "characterization"
    held = rows(graph, "MATCH (r:Record)-[:HAS_COMPONENT]->(c) RETURN collect(DISTINCT c.held) AS h")
    assert held[0]["h"] == [False]
    lines = (archives / "FACTS.md").read_text().splitlines()
    for r in rows(graph, "MATCH (c:Component)-[:LOCATED_AT]->(l) RETURN c.filepath AS f, l.line AS n, l.text AS t"):
        assert lines[r["n"] - 1] == r["t"] and r["f"] in r["t"]


def test_file_defects_reach_the_graph_with_their_location(graph: Graph, tmp_path: Path) -> None:
    folder = tmp_path / "bench"
    folder.mkdir()
    (folder / "results.xlsx").write_text("x (mm),y (mm)\n1,2\n3,4\n")  # an .xlsx that is really CSV
    (folder / "ragged.csv").write_text("a,b,c\n1,2,3\n4,5\n")
    (folder / "meta.xml").write_text("<AMDoc>\n<Title>x</Titel>\n</AMDoc>\n")
    report = ingest_paths([folder], graph)
    assert report.defects == {"format_mismatch": 1, "ragged_rows": 1, "xml_not_well_formed": 1}
    found = {r["kind"]: r for r in rows(
        graph, "MATCH (c:Component)-[:HAS_DEFECT]->(d:Defect)-[:LOCATED_AT]->(l:SourceLocation) "
               "RETURN d.kind AS kind, c.filepath AS f, l.locator AS loc, d.detail AS detail")}
    assert found["format_mismatch"]["f"] == "results.xlsx"
    assert (found["ragged_rows"]["f"], found["ragged_rows"]["loc"]) == ("ragged.csv", "L3")
    assert (found["xml_not_well_formed"]["f"], found["xml_not_well_formed"]["loc"]) == ("meta.xml", "L2")
    before = graph.counts()
    again = ingest_paths([folder], graph)
    assert graph.counts() == before and again.graph["nodes_created"] == 0
    shutil.rmtree(folder)
    assert defects_by_kind(graph)["ragged_rows"] == 1
