"""CSV and spreadsheets: real shared files, and small ones written in the test for each defect."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import openpyxl

from voe.ingest.payloads.documents import parse_file
from voe.ingest.payloads.parsers.encoding import decode_text
from voe.ingest.payloads.parsers.instruments import parse_workbook
from voe.ingest.payloads.parsers.tabular import cell_text, parse_csv, split_unit


def test_units_are_parsed_from_headers() -> None:
    assert split_unit("diameter (mm)") == ("diameter", "mm")
    assert split_unit("Time(s)") == ("Time", "s")
    assert split_unit("Thermocouple 1 (°C)") == ("Thermocouple 1", "°C")
    assert split_unit("specimen ID #") == ("specimen ID #", None)


def _csv_cell(path: Path, line: int, column: int) -> str:
    rows = list(csv.reader(io.StringIO(decode_text(path.read_bytes()), newline="")))
    # rows and physical lines coincide in these files (no quoted newlines)
    return rows[line - 1][column - 1]


def test_real_csv_with_bom_and_crlf(archives: Path) -> None:
    path = archives / "mds2-2525" / "Al_Spot_TDW_Results.csv"
    parsed = parse_csv(path, path.read_bytes())
    assert parsed.summary["bom"] and parsed.summary["crlf"] and parsed.summary["header_line"] == 1
    assert parsed.summary["units"] == ["s", "um"]
    header = [f for f in parsed.facts if f.extra["header"]]
    assert [f.text for f in header] == ["Time(s)", "MeltPoolWidth(um)"]  # the BOM is not part of the text
    values = [f for f in parsed.facts if not f.extra["header"]]
    assert {(f.name, f.unit) for f in values} == {("Time", "s"), ("MeltPoolWidth", "um")}
    for fact in parsed.facts[::17]:
        assert _csv_cell(path, fact.extra["line"], fact.extra["column"]) == fact.text


def test_cp1252_template_keeps_micro_sign(archives: Path) -> None:
    path = archives / "amb2025-template" / "05" / "SubmissionTemplates" / "CHAL-AMB2025-05-MS01.csv"
    parsed = parse_csv(path, path.read_bytes())
    assert parsed.summary["encoding"] == "cp1252" and parsed.summary["units"] == ["µm"]
    assert parsed.summary["header_line"] == 2


def test_ragged_rows_are_a_defect(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("a (mm),b (mm),c\n1,2,3\n4,5\n6,7,8,9\n")
    parsed = parse_csv(path, path.read_bytes())
    [defect] = parsed.defects
    assert defect.rule == "csv.ragged" and defect.locator == "L3" and "[3, 4]" in defect.detail


def test_xlsx_that_is_really_csv(tmp_path: Path) -> None:
    path = tmp_path / "results.xlsx"
    path.write_text("x (mm),y (mm)\n1,2\n3,4\n")
    parsed = parse_file(path, "results.xlsx")
    assert parsed is not None and parsed.format == "csv"
    assert parsed.defects[0].rule == "format.mismatch" and "the bytes are csv" in parsed.defects[0].detail
    assert len(parsed.facts) == 6


def test_formulas_are_kept_with_cached_values_and_uncached_ones_flagged(tmp_path: Path) -> None:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "data"
    ws.append(["800HIP12C/min"])
    ws.append(["specimen ID #", "diameter (mm)", "desired stress (MPa)", "desired load (N)"])
    ws.append(["S1", 4.0, 500, "=C3*PI()*(B3/2)^2"])
    path = tmp_path / "fatigue.xlsx"
    wb.save(path)  # openpyxl writes no cached values: the formula was never calculated
    parsed = parse_workbook(path)
    d3 = next(f for f in parsed.facts if f.locator == "data!D3")
    assert d3.text == "=C3*PI()*(B3/2)^2" and d3.extra["formula"] and d3.name == "desired load" and d3.unit == "N"
    assert [(d.rule, d.locator) for d in parsed.defects] == [("xlsx.formula_without_cache", "data!D3")]
    b3 = next(f for f in parsed.facts if f.locator == "data!B3")
    assert (b3.name, b3.unit, b3.value) == ("diameter", "mm", 4.0)


def test_real_thermocouple_export(archives: Path) -> None:
    path = archives / "amb2025-template" / "05" / "Bead_Print_Temperature_Info" / "AMB2025-05-SB-1-Thermocouple.xlsx"
    parsed = parse_workbook(path)
    [logger] = parsed.summary["loggers"]
    assert parsed.format == "thermocouple_xlsx" and parsed.role.value == "characterization"
    assert logger["device"] == "TCTempX8" and logger["serial"] == "S51592"
    assert logger["channels"] == ["Channel 2", "Channel 4", "Channel 6", "Channel 8", "Channel 14", "Channel 16"]
    ws = openpyxl.load_workbook(path).worksheets[0]
    stamps = [r[0] for r in ws.iter_rows(values_only=True) if hasattr(r[0], "year")]
    assert logger["samples"] == len(stamps) and logger["start"] == cell_text(min(stamps))
    for fact in parsed.facts[::97]:  # locations re-resolve to the same cell text
        assert cell_text(ws[fact.extra["cell"]].value) == fact.text


def test_real_printtracker_events_and_laser_power_checks(archives: Path) -> None:
    path = archives / "amb2025-template" / "04" / "BuildInfo" / "AMB2025-04-LHWDED-02-PrintTracker.xlsx"
    parsed = parse_workbook(path)
    assert parsed.format == "printtracker_xlsx" and parsed.role.value == "process_record"
    checks = {c["check"]: c["watts"] for c in parsed.summary["laser_power_checks"]}
    assert checks == {"Pre-print": 2547.0, "Post-print": 2471.0}
    assert parsed.summary["laser_power_change_pct"] == round((2471 - 2547) / 2547 * 100, 2)
    first = parsed.summary["events"][0]
    assert first == {"program": "NIST_Bench_Section1_Part1", "iterator": 2, "event": "door opened to fix camera",
                     "cell": "BuildInfo!C4"}


def test_broken_workbook_is_a_defect_naming_it(tmp_path: Path) -> None:
    import zipfile

    path = tmp_path / "broken.xlsx"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("xl/workbook.xml", "<not really a workbook")
    parsed = parse_file(path, "broken.xlsx")
    assert parsed is not None and [d.rule for d in parsed.defects] == ["xlsx.read"]
    assert "workbook cannot be opened" in parsed.defects[0].detail


def test_one_column_numeric_csv_is_a_csv(tmp_path: Path) -> None:
    path = tmp_path / "widths.csv"
    path.write_text("1.5\n2\n-3e-2\n")  # no delimiter on any line, still a valid CSV
    parsed = parse_file(path, "widths.csv")
    assert parsed is not None and parsed.format == "csv" and parsed.defects == []
    assert [(f.locator, f.text, f.value) for f in parsed.facts] == [("L1:C1", "1.5", 1.5), ("L2:C1", "2", 2.0),
                                                                    ("L3:C1", "-3e-2", -0.03)]
    assert parsed.summary["columns"] == 1 and parsed.summary["header_line"] is None
    for fact in parsed.facts:
        assert _csv_cell(path, fact.extra["line"], fact.extra["column"]) == fact.text


def test_one_column_csv_with_a_header_line(tmp_path: Path) -> None:
    path = tmp_path / "width.csv"
    path.write_bytes(b"MeltPoolWidth(um)\r\n101.5\r\n99\r\n")
    parsed = parse_file(path, "width.csv")
    assert parsed is not None and parsed.format == "csv" and parsed.defects == []
    assert parsed.summary["header_line"] == 1 and parsed.summary["columns"] == 1 and parsed.summary["units"] == ["um"]
    header, *values = parsed.facts
    assert (header.locator, header.text, header.extra["header"]) == ("L1:C1", "MeltPoolWidth(um)", True)
    assert [(f.locator, f.name, f.unit, f.value) for f in values] == [("L2:C1", "MeltPoolWidth", "um", 101.5),
                                                                      ("L3:C1", "MeltPoolWidth", "um", 99.0)]


def test_one_column_lookalikes_are_still_flagged(tmp_path: Path) -> None:
    prose = tmp_path / "notes.csv"
    prose.write_text("these are notes\nnot a table\n")
    parsed = parse_file(prose, "notes.csv")
    assert parsed is not None and parsed.format == "text"
    assert [d.rule for d in parsed.defects] == ["format.mismatch"]
    fake = tmp_path / "numbers.xlsx"  # one column of numbers behind an .xlsx name: really CSV, still flagged
    fake.write_text("1\n2\n3\n")
    parsed = parse_file(fake, "numbers.xlsx")
    assert parsed is not None and parsed.format == "csv" and [f.locator for f in parsed.facts] == ["L1:C1", "L2:C1", "L3:C1"]
    assert parsed.defects[0].rule == "format.mismatch" and "the bytes are csv" in parsed.defects[0].detail
    pdf = tmp_path / "report.csv"
    pdf.write_bytes(b"%PDF-1.4\n1\n2\n")
    parsed = parse_file(pdf, "report.csv")
    assert parsed is not None and parsed.defects[0].rule == "format.mismatch"
    assert "the bytes are pdf" in parsed.defects[0].detail
    numbers_txt = tmp_path / "numbers.txt"  # the extension settles the ambiguity: a .txt of numbers is text
    numbers_txt.write_text("1\n2\n")
    parsed = parse_file(numbers_txt, "numbers.txt")
    assert parsed is not None and parsed.format == "text" and parsed.defects == []
