"""PDFs (pdfplumber): text lines and words with page and bounding box, and table cells. A page without a text layer
cannot be checked by a machine: it is a defect, never an empty success."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ingest.parsers.model import Fact, FileDefect, Parsed, Role

BBox = tuple[float, float, float, float]


def outer_bbox(x0: float, top: float, x1: float, bottom: float) -> BBox:
    """Round outward to 1/1000 pt so the stored box always contains the span it was taken from."""
    return (math.floor(x0 * 1000) / 1000, math.floor(top * 1000) / 1000,
            math.ceil(x1 * 1000) / 1000, math.ceil(bottom * 1000) / 1000)


def text_in_box(page: Any, bbox: BBox) -> str:
    """Re-extract a stored span: the lines pdfplumber finds inside the box, joined by newlines."""
    cropped = page.crop(bbox, strict=False)
    return "\n".join(line["text"] for line in cropped.extract_text_lines())


def parse_pdf(path: Path, role: Role = Role.SOURCE_DOCUMENT) -> Parsed:
    import pdfplumber
    from pdfminer.pdfdocument import PDFPasswordIncorrect
    from pdfplumber.utils.exceptions import PdfminerException

    parsed = Parsed(format="pdf", role=role)
    try:
        pdf = pdfplumber.open(path)
    except (PdfminerException, PDFPasswordIncorrect) as exc:
        cause = exc.args[0] if exc.args else exc
        encrypted = isinstance(cause, PDFPasswordIncorrect) or "password" in repr(cause).lower()
        rule = "pdf.encrypted" if encrypted else "pdf.corrupt"
        parsed.defects.append(FileDefect(rule, f"PDF cannot be opened ({type(cause).__name__}: {cause})"))
        return parsed
    except Exception as exc:  # noqa: BLE001 - pdfminer raises many kinds for damaged files
        parsed.defects.append(FileDefect("pdf.corrupt", f"PDF cannot be opened ({type(exc).__name__}: {exc})"))
        return parsed
    with pdf:
        try:
            pages = list(pdf.pages)
        except Exception as exc:  # noqa: BLE001
            parsed.defects.append(FileDefect("pdf.corrupt", f"PDF page tree cannot be read ({exc})"))
            return parsed
        parsed.pages = len(pages)
        no_text: list[int] = []
        tables = 0
        for page in pages:
            n = page.page_number
            try:
                lines = page.extract_text_lines()
            except Exception as exc:  # noqa: BLE001
                parsed.defects.append(FileDefect("pdf.corrupt", f"page {n} cannot be read ({exc})", f"p{n}"))
                continue
            if not page.chars:
                no_text.append(n)
                what = "is an image only" if page.images else "has no text layer"
                parsed.defects.append(FileDefect(
                    "pdf.no_text_layer", f"page {n} {what}", f"p{n}"))
                continue
            for i, line in enumerate(lines, start=1):
                bbox = outer_bbox(line["x0"], line["top"], line["x1"], line["bottom"])
                parsed.facts.append(Fact("pdf_line", f"p{n}:l{i}", line["text"], role=role,
                                         extra={"page": n, "bbox": list(bbox)}))
            for i, word in enumerate(page.extract_words(), start=1):
                bbox = outer_bbox(word["x0"], word["top"], word["x1"], word["bottom"])
                parsed.facts.append(Fact("pdf_word", f"p{n}:w{i}", word["text"], role=role,
                                         extra={"page": n, "bbox": list(bbox)}))
            for t, table in enumerate(page.find_tables(), start=1):
                tables += 1
                for r, row in enumerate(table.rows, start=1):
                    for c, cell in enumerate(row.cells, start=1):
                        if cell is None:
                            continue
                        bbox = outer_bbox(*cell)
                        text = text_in_box(page, bbox)
                        if text.strip():
                            parsed.facts.append(Fact("pdf_table_cell", f"p{n}:t{t}:r{r}c{c}", text, role=role,
                                                     extra={"page": n, "bbox": list(bbox), "table": t, "row": r,
                                                            "column": c}))
        if pages and len(no_text) == len(pages):
            parsed.defects.append(FileDefect("pdf.no_text_layer", "no page has a text layer (scanned or image-only PDF)"))
        parsed.summary = {"pages": len(pages), "pages_without_text": no_text, "tables": tables,
                          "metadata": {k: str(v) for k, v in (pdf.metadata or {}).items() if isinstance(v, (str, int, float))}}
    return parsed
