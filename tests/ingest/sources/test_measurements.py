"""The measurements of the real `AM-Bench 2022 Measurements.xlsx` (read in place) become evidence located at
their cells, with CALIBRATED_BY what their calibration cells name: another row, or a named calibration the archive
does not hold; claims stay on the measurement; the template's guidance and sheets are no measurements."""

from __future__ import annotations

from pathlib import Path

from tests.ingest.helpers import rows
from voe.graph import Graph
from voe.ingest import ingest_paths

BOOK = "AMBench2022/MetadataModel/Model/XLSX/AM-Bench 2022 Measurements.xlsx"


def test_measurement_rows_name_their_calibrations(graph: Graph, archives: Path) -> None:
    assert ingest_paths([archives / "ambench-releases"], graph).errors == []
    edges = rows(graph, "MATCH (m:Evidence {provenance: 'measurement'})-[c:CALIBRATED_BY]->(t:Evidence) "
                        "RETURN m.sheet AS sheet, m.measurement_id AS m, t.provenance AS kind, t.title AS target, "
                        "t.available AS available, c.statement AS statement, c.cell AS cell")
    by_statement: dict[str, set[str]] = {}
    for e in edges:
        by_statement.setdefault(e["statement"], set()).add(e["kind"])
    # a row's identifier resolves to another row of the workbook (DIC, the D0 calibration of the ED sheets)
    dic = [e for e in edges if e["m"] == "AMB2022_DIC_44519001"]
    assert [(e["kind"], e["target"], e["cell"]) for e in dic] == [
        ("measurement", "AMB2022_DIC_44519000 (Digital_image_correlation)", "Digital_image_correlation!N6")]
    assert by_statement["D0_calibration"] == {"measurement"}
    # a named calibration nothing holds: its own Evidence, unavailable, one per sheet that names it
    for rr in (25, 50, 100, 150, 200, 250, 300, 500):
        assert by_statement[f"RR {rr} beam profile and power meter measurements"] == {"named"}
    assert by_statement["ACCS Force Calibration S/N: 105749"] == {"named"}
    assert all(e["available"] is False for e in edges if e["kind"] == "named")
    named = rows(graph, "MATCH (n:Evidence {provenance: 'named'}) OPTIONAL MATCH (n)-[:LOCATED_AT]->(l) "
                        "RETURN n.sheet AS sheet, n.title AS title, n.kind AS kind, count(l) AS cells")
    assert {(n["sheet"], n["title"]) for n in named if n["title"].startswith("RR 25 ")} == {
        ("CaliperVP", "RR 25 beam profile and power meter measurements"),
        ("LSCMVP", "RR 25 beam profile and power meter measurements")}
    assert all(n["kind"] == "calibration_artifact" and 1 <= n["cells"] <= 8 for n in named)
    # what is not a statement of which calibration: types, addresses, guidance, placeholders
    assert not {"Force", "Displacement", "DigitalImageCorrelation", "NA", "Link", "text"} & set(by_statement)
    assert not any(s.startswith(("https://", "Provide", "is this")) for s in by_statement)
    # claims stay on the measurement, located at their cells
    claims = rows(graph, "MATCH (m:Evidence {provenance: 'measurement'}) WHERE size(m.calibration_claims) > 0 "
                         "RETURN m.measurement_id AS m, m.calibration_claims AS claims, m.sheet AS sheet")
    assert {c["sheet"] for c in claims} == {"Mechanical_testing"} and len(claims) == 94
    both = next(c for c in claims if c["m"] == "AMB2022_Mech-Testing_625-CBM-B2-0-X.01-1")
    assert both["claims"] == ["calibrated 2021-02-03", "calibration of the extensometer was checked before testing "
                              "using an Epsilon Model 3590VHR Displacement Calibrator calibrated 8/3/2020"]
    # no measurement of a template sheet or the template's guidance rows
    sheets = {r["s"] for r in rows(graph, "MATCH (m:Evidence {provenance: 'measurement'}) RETURN DISTINCT m.sheet AS s")}
    assert not sheets & {"Template", "Example", "DOCUMENTATION"}
    cells = rows(graph, "MATCH (m:Evidence {measurement_id: 'AMB2022_DIC_44519001'})-[:LOCATED_AT]->(l:SourceLocation) "
                        "RETURN l.locator AS at, l.path AS path ORDER BY at")
    assert {c["path"] for c in cells} == {BOOK} and "Digital_image_correlation!N6" in {c["at"] for c in cells}
    before = rows(graph, "MATCH (e:Evidence) RETURN count(e) AS n")[0]["n"]
    assert ingest_paths([archives / "ambench-releases"], graph).errors == []  # re-ingest: nothing changes
    assert rows(graph, "MATCH (e:Evidence) RETURN count(e) AS n")[0]["n"] == before
