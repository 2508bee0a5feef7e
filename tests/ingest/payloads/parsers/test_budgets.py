"""Budgets (ingest/payloads/limits.py): each input that once ran away ends in a bounded, located outcome. Inputs are built
in the test; a small budget is set through VOE_LIMIT_* where the default would make the test slow."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
import zipfile
import zlib
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from lxml import etree
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from voe.ingest.payloads.documents import parse_file
from voe.ingest.payloads.limits import BudgetError, Budgets
from voe.ingest.payloads.parsers.instruments import parse_workbook
from voe.ingest.payloads.parsers.model import Parsed
from voe.ingest.payloads.parsers.pdf import parse_pdf
from voe.ingest.payloads.parsers.tabular import cell_text
from voe.ingest.payloads.parsers.xml import parse_xml

REPO = Path(__file__).resolve().parents[4]
MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"


def _budget(parsed: Parsed, name: str) -> list[Any]:
    return [d for d in parsed.defects if d.rule == "parse.budget" and f"budget {name}" in d.detail]


# -- budgets from the environment ---------------------------------------------------------------------------------

def test_budgets_come_from_the_environment_and_bad_values_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    default_pages = Budgets().pages_per_pdf
    monkeypatch.setenv("VOE_LIMIT_FACTS_PER_FILE", "100_000")
    monkeypatch.setenv("VOE_LIMIT_INFLATED_BYTES_PER_FILE", "64M")  # a bare suffix: powers of 1024, as always
    monkeypatch.setenv("VOE_LIMIT_PDF_DECODED_BYTES", "3MB")  # ByteSize's own units: MB is 10**6, MiB 2**20
    monkeypatch.setenv("VOE_LIMIT_JSONLD_BYTES", "1.5KiB")
    monkeypatch.setenv("VOE_LIMIT_PAGES_PER_PDF", "")  # empty counts as unset
    b = Budgets.from_env()
    assert b.facts_per_file == 100_000 and b.inflated_bytes_per_file == 64 << 20
    assert b.pdf_decoded_bytes == 3_000_000 and b.jsonld_bytes == 1536
    assert b.pages_per_pdf == default_pages == 2_000
    cases = {("VOE_LIMIT_FACTS_PER_FILE", "lots"): "VOE_LIMIT_FACTS_PER_FILE='lots' is not a whole number",
             ("VOE_LIMIT_JSONLD_BYTES", "big"): r"VOE_LIMIT_JSONLD_BYTES='big' is not a whole number \(e.g. .*=64M\)",
             ("VOE_LIMIT_PAGES_PER_PDF", "0"): "VOE_LIMIT_PAGES_PER_PDF='0' must be positive",
             ("VOE_LIMIT_PDF_TOKENS", "-5"): "VOE_LIMIT_PDF_TOKENS='-5' must be positive",
             ("VOE_LIMIT_FACT_PER_FILE", "5"): "VOE_LIMIT_FACT_PER_FILE is not a budget"}
    for (var, raw), message in cases.items():
        with monkeypatch.context() as m:
            m.setenv(var, raw)
            with pytest.raises(BudgetError, match=message):
                Budgets.from_env()


def test_a_bad_budget_value_is_an_error_not_a_file_defect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "r.csv"
    path.write_text("a,b\n1,2\n")
    monkeypatch.setenv("VOE_LIMIT_FACTS_PER_FILE", "-3")
    with pytest.raises(BudgetError):
        parse_file(path, "r.csv")


# -- workbooks ----------------------------------------------------------------------------------------------------

def _xlsx(path: Path, rows: str, strings: list[str] = (), big_string: int = 0, merges: str = "") -> Path:  # type: ignore[assignment]
    """A minimal workbook written by hand (openpyxl writes inline strings, never a shared-strings table)."""
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    pkg = "http://schemas.openxmlformats.org/package/2006"
    sml = "application/vnd.openxmlformats-officedocument.spreadsheetml"
    parts = {
        "[Content_Types].xml": f'<Types xmlns="{pkg}/content-types">'
        f'<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        f'<Default Extension="xml" ContentType="application/xml"/>'
        f'<Override PartName="/xl/workbook.xml" ContentType="{sml}.sheet.main+xml"/>'
        f'<Override PartName="/xl/worksheets/sheet1.xml" ContentType="{sml}.worksheet+xml"/>'
        f'<Override PartName="/xl/sharedStrings.xml" ContentType="{sml}.sharedStrings+xml"/>'
        f'</Types>',
        "_rels/.rels": f'<Relationships xmlns="{pkg}/relationships"><Relationship Id="rId1" '
        f'Type="{rel}/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        "xl/workbook.xml": f'<workbook xmlns="{MAIN_NS}" xmlns:r="{rel}"><sheets>'
        f'<sheet name="data" sheetId="1" r:id="rId1"/></sheets></workbook>',
        "xl/_rels/workbook.xml.rels": f'<Relationships xmlns="{pkg}/relationships">'
        f'<Relationship Id="rId1" Type="{rel}/worksheet" Target="worksheets/sheet1.xml"/>'
        f'<Relationship Id="rId2" Type="{rel}/sharedStrings" Target="sharedStrings.xml"/></Relationships>',
        "xl/worksheets/sheet1.xml": f'<worksheet xmlns="{MAIN_NS}"><sheetData>{rows}</sheetData>{merges}</worksheet>',
    }
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for name, text in parts.items():
            z.writestr(name, text)
        with z.open("xl/sharedStrings.xml", "w", force_zip64=True) as fh:
            fh.write(f'<sst xmlns="{MAIN_NS}">'.encode())
            if big_string:
                fh.write(b"<si><t>")
                for _ in range(big_string >> 20):
                    fh.write(b"a" * (1 << 20))
                fh.write(b"</t></si>")
            for s in strings:
                fh.write(f"<si><t>{s}</t></si>".encode())
            fh.write(b"</sst>")
    return path


@pytest.mark.timeout(60)
def test_one_far_away_cell_is_read_without_its_bounding_box(tmp_path: Path) -> None:
    wb = openpyxl.Workbook()
    wb.active["XFD1048576"] = "far away"
    path = tmp_path / "far.xlsx"
    wb.save(path)
    assert path.stat().st_size < 10_000
    start = time.monotonic()
    parsed = parse_file(path, "far.xlsx")
    assert time.monotonic() - start < 5
    assert parsed is not None and [(f.locator, f.text) for f in parsed.facts] == [("Sheet!XFD1048576", "far away")]
    assert parsed.defects == [] and parsed.cells == 1
    assert parsed.summary["sheet_details"][0]["dimensions"] == "XFD1048576:XFD1048576"


@pytest.mark.timeout(60)
def test_a_merged_range_over_the_whole_sheet_keeps_only_its_first_cell(tmp_path: Path) -> None:
    path = _xlsx(tmp_path / "m.xlsx", '<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row>',
                 ["first", "hidden by the merge"], merges='<mergeCells count="1"><mergeCell ref="A1:XFD1048576"/></mergeCells>')
    start = time.monotonic()
    parsed = parse_workbook(path)
    assert time.monotonic() - start < 5
    assert [(f.locator, f.text) for f in parsed.facts] == [("data!A1", "first")]


def test_a_huge_shared_string_is_truncated_with_a_defect(tmp_path: Path) -> None:
    size = 8 << 20  # 8 MiB of "a": 8 KiB compressed
    path = _xlsx(tmp_path / "s.xlsx", '<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row>'
                 '<row r="2"><c r="A2"><v>5</v></c></row>', ["next"], big_string=size)
    parsed = parse_file(path, "s.xlsx")
    assert parsed is not None
    width = Budgets().field_length
    cells = {f.locator: f for f in parsed.facts}
    assert cells["data!A1"].text == "a" * width and cells["data!A1"].value == "a" * width
    assert cells["data!B1"].text == "next" and cells["data!A2"].value == 5
    [defect] = _budget(parsed, "field_length")
    assert defect.locator == "data!A1" and f"a string of {size} characters" in defect.detail


def test_a_workbook_over_the_inflated_budget_keeps_the_cells_read_before(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    rows = "".join(f'<row r="{r}"><c r="A{r}"><v>{r}</v></c></row>' for r in range(1, 20001))
    path = _xlsx(tmp_path / "w.xlsx", rows)
    monkeypatch.setenv("VOE_LIMIT_INFLATED_BYTES_PER_FILE", "64K")
    parsed = parse_workbook(path)
    [defect] = _budget(parsed, "inflated_bytes_per_file")
    assert 0 < len(parsed.facts) < 20000 and defect.locator == parsed.facts[-1].locator
    assert [f.value for f in parsed.facts] == list(range(1, len(parsed.facts) + 1))


def test_streamed_workbooks_give_the_facts_the_full_loader_gave(archives: Path) -> None:
    """The real template workbooks: every cell, formula and cached value as openpyxl's full load (data_only off
    and on, iterating the bounding box) reads them."""
    paths = sorted((archives / "amb2025-template").rglob("*.xlsx")) + [
        archives / "ambench-releases" / "AMBench2022" / "MetadataModel" / "Model" / "XLSX" / "Contributors.xlsx"]
    assert len(paths) == 6
    for path in paths:
        formulas = openpyxl.load_workbook(path, data_only=False)
        cached = openpyxl.load_workbook(path, data_only=True)
        want = []
        for ws in formulas.worksheets:
            for row in ws.iter_rows():
                for c in row:
                    if c.value is None or (isinstance(c.value, str) and not c.value.strip()):
                        continue
                    cache = cached[ws.title][c.coordinate].value if c.data_type == "f" else None
                    want.append((f"{ws.title}!{c.coordinate}", cell_text(c.value), None if cache is None else cell_text(cache)))
        parsed = parse_workbook(path)
        got = [(f.locator, f.text, f.extra.get("cached_value")) for f in parsed.facts]
        assert got == want, path.name


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_largest_real_workbook_streams_in_seconds(archives: Path) -> None:
    path = archives / "ambench-releases/AMBench2022/MetadataModel/Model/XLSX/AM-Bench 2022 Measurements.xlsx"
    start = time.monotonic()
    parsed = parse_file(path, path.name)
    assert time.monotonic() - start < 40  # the full loader took 52 s on the 2-core machine, streaming about 7
    assert parsed is not None and len(parsed.facts) == 21131 and parsed.defects == []


# -- CSV ----------------------------------------------------------------------------------------------------------

def _x_line_csv(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "x.csv"
    path.write_bytes(b"a,b\n1,2\n" + b"x," * n + b"\n")
    return path


def test_a_csv_line_of_a_million_fields_stops_at_the_facts_budget(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOE_LIMIT_FACTS_PER_FILE", "1000")
    parsed = parse_file(_x_line_csv(tmp_path, 10**6), "x.csv")
    assert parsed is not None and len(parsed.facts) == 1000
    [defect] = _budget(parsed, "facts_per_file")
    assert "stopped after 1000 facts" in defect.detail and parsed.facts[-1].locator in defect.detail
    assert parsed.facts[-1].locator == "L3:C996"


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_csv_line_of_a_million_fields_finishes_under_the_default_budgets(tmp_path: Path) -> None:
    start = time.monotonic()
    parsed = parse_file(_x_line_csv(tmp_path, 10**6), "x.csv")
    assert time.monotonic() - start < 30
    assert parsed is not None and len(parsed.facts) == Budgets().facts_per_file
    assert len(_budget(parsed, "facts_per_file")) == 1


def test_a_csv_over_the_cells_budget_is_cut_in_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOE_LIMIT_CELLS_PER_WORKBOOK", "5000")
    parsed = parse_file(_x_line_csv(tmp_path, 10**6), "x.csv")
    assert parsed is not None
    [defect] = _budget(parsed, "cells_per_workbook")
    assert defect.locator == "L3" and "cut after column 4996" in defect.detail
    assert parsed.cells == 4 + 4996 and len(parsed.facts) == 4 + 4996


# -- PDF ----------------------------------------------------------------------------------------------------------

def _three_pages(path: Path) -> Path:
    c = canvas.Canvas(str(path), pagesize=A4, invariant=1)
    for n in (1, 2, 3):
        c.setFont("Helvetica", 12)
        c.drawString(72, 770, f"page {n} text")
        c.showPage()
    c.save()
    return path


@pytest.mark.parametrize("method", ["extract_words", "find_tables", "extract_text_lines"])
def test_an_error_inside_one_pdf_page_costs_that_page_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           method: str) -> None:
    import pdfplumber.page

    original = getattr(pdfplumber.page.Page, method)

    def failing(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.page_number == 2:
            raise KeyError("broken page")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pdfplumber.page.Page, method, failing)
    parsed = parse_file(_three_pages(tmp_path / "p.pdf"), "p.pdf")
    assert parsed is not None
    assert {f.extra["page"] for f in parsed.facts} == {1, 3}
    assert [f.text for f in parsed.facts if f.kind == "pdf_line"] == ["page 1 text", "page 3 text"]
    assert [(d.rule, d.locator) for d in parsed.defects] == [("pdf.corrupt", "p2")]
    assert "page 2 cannot be read (KeyError" in parsed.defects[0].detail and parsed.pages == 3


def _raw_pdf(path: Path, contents: list[bytes]) -> Path:
    """A PDF with one page per content stream (Flate-compressed), Helvetica as /F1."""
    objs: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]
    kids = []
    for content in contents:
        page_no, stream_no = len(objs) + 1, len(objs) + 2
        kids.append(b"%d 0 R" % page_no)
        objs.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R /Resources << /Font << /F1 "
                    b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>" % stream_no)
        objs.append(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(content) + content + b"\nendstream")
    objs[1] = b"<< /Type /Pages /Kids [" + b" ".join(kids) + b"] /Count %d >>" % len(contents)
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, obj in enumerate(objs, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1) + b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def _text(words: str) -> bytes:
    return zlib.compress(b"BT /F1 12 Tf 72 720 Td (" + words.encode() + b") Tj ET")


def _zeros(n: int) -> bytes:
    z = zlib.compressobj(9)
    chunk = b"\0" * (1 << 20)
    return b"".join(z.compress(chunk) for _ in range(n >> 20)) + z.flush()


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_pdf_stream_that_inflates_past_the_budget_is_not_decoded(tmp_path: Path) -> None:
    bomb = _zeros(200 << 20)  # 200 MiB of zeros: about 200 KB compressed
    assert len(bomb) < 300_000
    path = _raw_pdf(tmp_path / "bomb.pdf", [_text("before the bomb"), bomb, _text("after the bomb")])
    start = time.monotonic()
    parsed = parse_file(path, "bomb.pdf")
    assert time.monotonic() - start < 30
    assert parsed is not None
    assert [f.text for f in parsed.facts if f.kind == "pdf_line"] == ["before the bomb"]
    [defect] = _budget(parsed, "pdf_decoded_bytes")
    assert defect.locator == "p2" and "page 2 and later pages are not parsed" in defect.detail


def test_a_pdf_stream_under_the_budget_is_decoded_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOE_LIMIT_PDF_DECODED_BYTES", "1M")
    ops = zlib.compress(b"BT /F1 12 Tf 72 720 Td (kept) Tj ET " + b" " * (512 << 10))  # 0.5 MiB: under the budget
    parsed = parse_pdf(_raw_pdf(tmp_path / "ok.pdf", [ops]))
    assert [f.text for f in parsed.facts if f.kind == "pdf_line"] == ["kept"] and parsed.defects == []


@pytest.mark.slow
def test_pages_content_and_characters_are_budgeted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _raw_pdf(tmp_path / "many.pdf", [_text(f"page {n} " + "x" * 50) for n in range(1, 11)])
    monkeypatch.setenv("VOE_LIMIT_PAGES_PER_PDF", "4")
    parsed = parse_pdf(path)
    assert {f.extra["page"] for f in parsed.facts} == {1, 2, 3, 4}
    [defect] = _budget(parsed, "pages_per_pdf")
    assert defect.locator == "p5" and "of the 10 the file declares" in defect.detail
    monkeypatch.delenv("VOE_LIMIT_PAGES_PER_PDF")
    monkeypatch.setenv("VOE_LIMIT_CHARS_PER_PDF", "200")  # a page is 57 characters
    parsed = parse_pdf(path)
    assert {f.extra["page"] for f in parsed.facts} == {1, 2, 3} and _budget(parsed, "chars_per_pdf")[0].locator == "p4"
    monkeypatch.delenv("VOE_LIMIT_CHARS_PER_PDF")
    loops = zlib.compress(b"q Q " * 300_000)  # 600,000 operators and no text
    monkeypatch.setenv("VOE_LIMIT_PDF_TOKENS", "200000")
    parsed = parse_pdf(_raw_pdf(tmp_path / "ops.pdf", [_text("first"), loops, _text("third")]))
    assert [f.text for f in parsed.facts if f.kind == "pdf_line"] == ["first"]
    assert _budget(parsed, "pdf_tokens")[0].locator == "p2"


def test_a_damaged_pdf_whose_fallback_scan_passes_the_token_budget_is_not_opened(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = _raw_pdf(tmp_path / "g.pdf", [_text("x")]).read_bytes()
    arrays = b"9 0 obj\n[" + b"1 0 R " * 200_000 + b"]\nendobj\n"
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(good.replace(b"xref", b"xreF") + arrays)  # no xref: pdfminer reads every object
    monkeypatch.setenv("VOE_LIMIT_PDF_TOKENS", "100000")
    start = time.monotonic()
    parsed = parse_pdf(bad)
    assert time.monotonic() - start < 10 and parsed.facts == []
    [defect] = _budget(parsed, "pdf_tokens")
    assert "cannot be opened within its budgets" in defect.detail


@pytest.mark.slow
def test_pdf_table_cells_read_through_the_index_equal_text_in_box(tmp_path: Path) -> None:
    import pdfplumber

    from voe.ingest.payloads.parsers.pdf import text_in_box

    path = tmp_path / "grid.pdf"
    c = canvas.Canvas(str(path), pagesize=A4, invariant=1)
    c.setFont("Helvetica", 6)
    xs, ys = [40 + 50 * i for i in range(11)], [800 - 20 * i for i in range(21)]
    for y in ys:
        c.line(xs[0], y, xs[-1], y)
    for x in xs:
        c.line(x, ys[0], x, ys[-1])
    for r in range(20):
        for k in range(10):
            c.drawString(xs[k] + 2, ys[r] - 12, f"r{r}c{k} wide text")
    c.showPage()
    c.save()
    parsed = parse_pdf(path)
    cells = [f for f in parsed.facts if f.kind == "pdf_table_cell"]
    assert len(cells) == 200
    with pdfplumber.open(path) as pdf:
        for f in cells:
            assert text_in_box(pdf.pages[0], tuple(f.extra["bbox"])) == f.text, f.locator


WARNING_PDF = b"BT /F1 12 Tf 72 720 Td (shown) Tj ET /\xff\xfeRAW g"  # `g` with a name operand: pdfminer warns


def test_pdfminer_warnings_go_to_the_voe_logger(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = _raw_pdf(tmp_path / "w.pdf", [zlib.compress(WARNING_PDF)])
    with caplog.at_level("WARNING"):
        parsed = parse_file(path, "w.pdf")
    assert parsed is not None and [f.text for f in parsed.facts if f.kind == "pdf_line"] == ["shown"]
    mine = [r for r in caplog.records if r.name.startswith("voe.ingest")]
    assert mine and all(r.getMessage().isprintable() for r in mine)
    # pdfminer's own records stop at its logger (pytest attaches its capture to non-propagating loggers too)
    assert logging.getLogger("pdfminer").propagate is False


@pytest.mark.slow
def test_pdfminer_warnings_do_not_reach_stderr(tmp_path: Path) -> None:
    """In a fresh interpreter (pytest's own log capture would hide a library printing to stderr)."""
    path = _raw_pdf(tmp_path / "w.pdf", [zlib.compress(WARNING_PDF)])
    code = ("import sys; from pathlib import Path; from voe.ingest.payloads.documents import parse_file; "
            f"p = parse_file(Path({str(path)!r}), 'w.pdf'); print(len(p.facts))")
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, timeout=120, check=True)
    assert run.stderr == b"" and int(run.stdout) > 0
    shown = ("import logging, sys; logging.basicConfig(stream=sys.stderr); " + code)  # when the app does log:
    run = subprocess.run([sys.executable, "-c", shown], cwd=REPO, capture_output=True, timeout=120, check=True)
    assert b"voe.ingest.pdf" in run.stderr and b"\xff" not in run.stderr


# -- XML and text -------------------------------------------------------------------------------------------------

def test_xml_paths_equal_getpath_for_wide_and_namespaced_documents() -> None:
    doc = (b'<r xmlns:p="urn:p"><a>1</a>' + b"<b>2</b>" * 3000 + b'<p:a>3</p:a><c xmlns="urn:d"><x>4</x><y>5</y></c>'
           b"<!-- note --><a>6</a></r>")
    parsed = parse_xml(Path("w.xml"), doc)
    root = etree.fromstring(doc)
    want = [root.getroottree().getpath(el) for el in root.iter() if isinstance(el.tag, str) and (el.text or "").strip()]
    assert [f.locator for f in parsed.facts] == want and want[-1] == "/r/a[2]" and "/r/*[3003]/*[1]" in want


def test_xml_deeper_than_the_budget_and_longer_than_the_node_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    deep = b"<a>" * 100 + b"x" + b"</a>" * 100
    parsed = parse_xml(Path("d.xml"), deep)
    [defect] = _budget(parsed, "xml_depth")
    assert parsed.facts == [] and defect.locator == "/a" + "/a" * 63
    monkeypatch.setenv("VOE_LIMIT_XML_ELEMENTS", "100")
    parsed = parse_xml(Path("w.xml"), b"<r>\n" + b"<a>1</a>\n" * 1000 + b"</r>")
    [defect] = _budget(parsed, "xml_elements")
    assert len(parsed.facts) == 99 and parsed.facts[-1].locator == "/r/a[99]" and defect.locator == "L101"
    assert parsed.summary["xsd"] is None


@pytest.mark.timeout(120)  # lxml's attrib.items() over 100,000 attributes took minutes (n² lookups)
def test_an_element_with_more_attributes_than_the_budget_keeps_the_first_ones() -> None:
    doc = b'<r><e ' + b" ".join(b'a%d="v%d"' % (k, k) for k in range(100_000)) + b"/><f b=\"1\" c=\"2\"/></r>"
    parsed = parse_xml(Path("wide.xml"), doc)
    [defect] = _budget(parsed, "xml_attributes")
    assert defect.locator == "/r/e" and "has 100000" in defect.detail
    wide, narrow = parsed.facts
    assert list(wide.extra["attributes"]) == [f"a{k}" for k in range(1000)] and wide.extra["attributes"]["a999"] == "v999"
    assert narrow.extra["attributes"] == {"b": "1", "c": "2"} and narrow.text == 'b="1" c="2"'


def test_text_lines_stop_at_the_facts_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOE_LIMIT_FACTS_PER_FILE", "50")
    path = tmp_path / "notes.txt"
    path.write_text("".join(f"line {n}\n" for n in range(1, 1001)))
    parsed = parse_file(path, "notes.txt")
    assert parsed is not None and len(parsed.facts) == 50 and parsed.summary["lines"] == 1000
    [defect] = _budget(parsed, "facts_per_file")
    assert defect.locator == "L51" and "lines after L50 are not located" in defect.detail


def test_a_long_text_line_is_truncated_with_a_defect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOE_LIMIT_FIELD_LENGTH", "100")
    path = tmp_path / "notes.txt"
    path.write_text("short\n" + "y" * 5000 + "\n")
    parsed = parse_file(path, "notes.txt")
    assert parsed is not None and [len(f.text) for f in parsed.facts] == [5, 100]
    [defect] = _budget(parsed, "field_length")
    assert defect.locator == "L2" and "holds 5000 characters" in defect.detail


@pytest.mark.slow
@pytest.mark.timeout(120)  # the quadratic tokenizer needs hours for this input
def test_literal_strings_parse_as_pdfminer_reads_them_in_linear_time(tmp_path: Path) -> None:
    """The tokenizer's literal strings (patched to collect in a bytearray): escapes, octal codes and nested
    parentheses as PDF 3.2.3 reads them; and a damaged file whose fallback scan meets a string of megabytes full
    of escapes parses in seconds (it took minutes when every escape copied the string so far)."""
    import io

    from pdfminer.psparser import PSBaseParser

    from voe.ingest.payloads.parsers.compat import pdfminer as pdf_parser

    pdf_parser.install_stream_guards()
    parser = PSBaseParser(io.BytesIO(b"(ab\\(c\\)d (nested) \\101\\12x) /Name (second)"))
    tokens = [parser.nexttoken()[1] for _ in range(3)]
    assert tokens[0] == b"ab(c)d (nested) A\nx" and tokens[2] == b"second"
    bomb = tmp_path / "strings.pdf"
    bomb.write_bytes(b"%PDF-1.4\n1 0 obj\n(" + b"ab\\(" * 1_500_000 + b")\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n")
    parsed = parse_file(bomb, "strings.pdf")
    assert parsed is not None and parsed.format == "pdf"


def test_a_dictionary_keyed_by_nested_arrays_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """pdfminer turns a dictionary key that is not a name into str(key); with arrays as keys, nested, each level's
    key held the repr of the level inside it, backslashes doubled: 2^depth bytes (24 levels: 111 MiB; the fuzz
    inputs that found it: 5 GiB from 1 MB). The stand-in key keeps 30 levels in a few MiB."""
    import tracemalloc

    from voe.ingest.payloads.parsers.compat import pdfminer as pdf_parser

    body = b"<< [ " * 30 + b"(it's \\\\ here)" + b" ] 1 >>" * 30
    path = tmp_path / "nested.pdf"
    path.write_bytes(b"%PDF-1.4\n1 0 obj\n" + body + b"\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n")
    tracemalloc.start()
    try:
        parsed = parse_file(path, "nested.pdf")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert parsed is not None and parsed.format == "pdf"
    assert peak < 32 << 20, f"{peak >> 20} MiB"
    assert pdf_parser._bounded_literal_name([{"k": 1}] * 3) == "<list>"
    assert pdf_parser._bounded_literal_name(b"x" * 1000) == str(b"x" * 64)


@pytest.mark.timeout(120)  # libxml2's HTML parser compared each attribute with the earlier ones: 19 s for 100,000
def test_a_release_summary_with_an_attribute_flood_is_refused_before_parsing(tmp_path: Path) -> None:
    flood = b" ".join(b'a%d="%d"' % (k, k) for k in range(100_000))
    path = tmp_path / "release-file-change-summary-1.0.0-to-2.0.0.html"
    path.write_bytes(b"<html><body><h1>Release File Summary: 1.0.0 to 2.0.0</h1><table " + flood + b"><tr><th>File "
                     b"Basename</th></tr></table></body></html>")
    parsed = parse_file(path, path.name)
    assert parsed is not None
    [defect] = _budget(parsed, "xml_attributes")
    assert "attributes of one HTML element" in defect.detail and parsed.facts == []


def test_a_cell_at_row_or_column_zero_is_said_and_the_rest_of_the_sheet_kept(tmp_path: Path) -> None:
    """`<c r="A0">` (found by the long fuzz) is no place on a sheet: openpyxl reads it as row 0, which the header
    scan once indexed as the last row (IndexError, a bug of voe's); such cells are now named as unreadable."""
    rows = ('<row r="1"><c r="A0"><v>1</v></c><c r="A0"/><c r="B1"><v>2</v></c></row>'
            '<row r="2"><c r="A2"><v>3</v></c></row>')
    parsed = parse_file(_xlsx(tmp_path / "zero.xlsx", rows), "zero.xlsx")
    assert parsed is not None and "parser_bug" not in parsed.summary
    [defect] = [d for d in parsed.defects if d.rule == "xlsx.read"]
    assert "2 cell(s) cannot be read: A0 (not a cell" in defect.detail
    assert sorted(f.locator for f in parsed.facts if f.locator.startswith("data!")) == ["data!A2", "data!B1"]
    only = parse_file(_xlsx(tmp_path / "only.xlsx", '<row r="1"><c r="A0"><v>1</v></c></row>'), "only.xlsx")
    assert only is not None and "parser_bug" not in only.summary
