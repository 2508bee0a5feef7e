"""NC programs, STEP headers and XML, each fact located so it re-resolves to the same text."""

from __future__ import annotations

from pathlib import Path

from lxml import etree

from voe.ingest.payloads.parsers.process import parse_nc, parse_step
from voe.ingest.payloads.parsers.xml import parse_xml

EIA = Path("amb2025-template/04/BuildInfo/NIST_Bench_S5_P1.eia")


def test_nc_parameters_and_commands_are_line_located(archives: Path) -> None:
    data = (archives / EIA).read_bytes()
    parsed = parse_nc(data)
    lines = data.decode().splitlines()
    power = next(p for p in parsed.summary["parameters"] if p["variable"] == "#901")
    assert (power["name"], power["value"], power["unit"]) == ("LASER POWER", 3025.0, "W")
    assert lines[power["line"] - 1].startswith("#901=3025.")
    for fact in parsed.facts:
        assert lines[fact.extra["line"] - 1] == fact.text
    assert parsed.summary["program"] == "NIST_Bench_S5_P1" and parsed.summary["command_counts"]["G0"] > 0


def test_step_header(archives: Path) -> None:
    data = (archives / "amb2025-template/04/BuildInfo/am_bench_ded-final-mm.STEP").read_bytes()
    parsed = parse_step(data)
    assert parsed.summary["originating_system"] == "SolidWorks 2022"
    assert parsed.summary["timestamp"] == "2024-10-11T15:40:39" and parsed.summary["schema"] == "AUTOMOTIVE_DESIGN"
    lines = data.decode().splitlines()
    for fact in parsed.facts:
        assert "\n".join(lines[fact.extra["line"] - 1 : fact.extra["end_line"]]) == fact.text
    assert parse_step(b"ISO-10303-21;\nDATA;\nENDSEC;\n").defects[0].rule == "step.header"


AMDOC = b"""<?xml version="1.0"?>
<AMDoc>
  <Title>not an element the schema knows</Title>
</AMDoc>
"""


def test_xml_facts_carry_xpath_and_line_and_schema_violations_their_line(tmp_path: Path, archives: Path) -> None:
    parsed = parse_xml(tmp_path / "doc.xml", AMDOC, archives / "schemas" / "ambench-xsd")
    assert parsed.summary["xsd"] == "AMDoc"
    fact = next(f for f in parsed.facts if f.name == "Title")
    assert fact.locator == "/AMDoc/Title" and fact.extra["line"] == 3
    tree = etree.fromstring(AMDOC).getroottree()
    assert tree.xpath(fact.locator)[0].text == fact.text
    assert parsed.defects and all(d.rule == "xml.schema" for d in parsed.defects)
    assert any(d.locator == "L3" for d in parsed.defects)


def test_xml_not_well_formed_names_the_line(tmp_path: Path) -> None:
    parsed = parse_xml(tmp_path / "bad.xml", b"<AMDoc>\n  <Title>x</Titel>\n</AMDoc>\n")
    [defect] = parsed.defects
    assert defect.rule == "xml.not_well_formed" and defect.locator == "L2" and "line 2" in defect.detail
