"""PDFs built in the test (reportlab, invariant=1 so the bytes are the same every run)."""

from __future__ import annotations

from pathlib import Path

import pdfplumber
import pytest
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from tests.pdf_pages import ruled_table
from voe.ingest.payloads.documents import parse_file
from voe.ingest.payloads.parsers.pdf import parse_pdf, text_in_box


def _pdf(path: Path, *, encrypt: str | None = None) -> Path:
    c = canvas.Canvas(str(path), pagesize=A4, invariant=1, encrypt=encrypt)
    c.setFont("Helvetica", 12)
    c.drawString(72, 770, "AM Bench 2025 fatigue readme")
    c.drawString(72, 750, "Test machine ADMET eXpert 9313, 100 Hz, R = -1, ISO 1143")
    ruled_table(c)  # 3 rows, 2 columns
    c.showPage()
    # page 2: an image only (a scanned page)
    c.setFillColorRGB(0.2, 0.2, 0.2)
    from PIL import Image
    from reportlab.lib.utils import ImageReader

    img = Image.new("RGB", (40, 40), (128, 128, 128))
    c.drawImage(ImageReader(img), 72, 600, 200, 200)
    c.showPage()
    c.save()
    return path


def test_lines_have_page_and_bbox_and_re_extract_to_the_same_text(tmp_path: Path) -> None:
    path = _pdf(tmp_path / "readme.pdf")
    parsed = parse_pdf(path)
    lines = [f for f in parsed.facts if f.kind == "pdf_line"]
    assert lines[0].text == "AM Bench 2025 fatigue readme" and lines[0].extra["page"] == 1
    words = [f.text for f in parsed.facts if f.kind == "pdf_word"]
    assert words[:5] == ["AM", "Bench", "2025", "fatigue", "readme"]
    with pdfplumber.open(path) as pdf:
        for fact in parsed.facts:
            page = pdf.pages[fact.extra["page"] - 1]
            assert text_in_box(page, tuple(fact.extra["bbox"])) == fact.text, fact.locator


def test_table_cells_are_extracted(tmp_path: Path) -> None:
    parsed = parse_pdf(_pdf(tmp_path / "t.pdf"))
    cells = {f.locator: f.text for f in parsed.facts if f.kind == "pdf_table_cell"}
    assert parsed.summary["tables"] == 1
    assert set(cells.values()) >= {"specimen", "cycles", "S01", "1200000", "S02", "runout"}


def test_image_only_page_is_a_defect_not_an_empty_success(tmp_path: Path) -> None:
    parsed = parse_pdf(_pdf(tmp_path / "scan.pdf"))
    assert parsed.summary["pages_without_text"] == [2]
    assert [(d.rule, d.locator) for d in parsed.defects] == [("pdf.no_text_layer", "p2")]
    assert "image only" in parsed.defects[0].detail


def test_encrypted_pdf_is_named(tmp_path: Path) -> None:
    parsed = parse_pdf(_pdf(tmp_path / "locked.pdf", encrypt="secret"))
    assert [d.rule for d in parsed.defects] == ["pdf.encrypted"]
    assert parsed.facts == []


@pytest.mark.parametrize("keep", [400, 1200, -50])
def test_truncated_pdf_is_a_corrupt_file_defect(tmp_path: Path, keep: int) -> None:
    good = _pdf(tmp_path / "good.pdf").read_bytes()
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(good[:keep])
    parsed = parse_file(bad, "bad.pdf")
    assert parsed is not None and [d.rule for d in parsed.defects] == ["pdf.corrupt"]
    assert "cannot be opened" in parsed.defects[0].detail and parsed.facts == []
