"""PDFs (pdfplumber): text lines and words with page and bounding box, and table cells. A page without a text layer
cannot be checked by a machine: it is a defect, never an empty success."""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

from voe.ingest.payloads.limits import BudgetExceeded, Meter, printable
from voe.ingest.payloads.parsers.compat.pdfminer import METER, PdfMeter, install_stream_guards, layout_page
from voe.ingest.payloads.parsers.model import Fact, FileDefect, Parsed, Role
from voe.ingest.payloads.parsers.registry import parser

BBox = tuple[float, float, float, float]


def outer_bbox(x0: float, top: float, x1: float, bottom: float) -> BBox:
    """Round outward to 1/1000 pt so the stored box always contains the span it was taken from."""
    return (math.floor(x0 * 1000) / 1000, math.floor(top * 1000) / 1000,
            math.ceil(x1 * 1000) / 1000, math.ceil(bottom * 1000) / 1000)


def text_in_box(page: Any, bbox: BBox) -> str:
    """Re-extract a stored span: the lines pdfplumber finds inside the box, joined by newlines."""
    cropped = page.crop(bbox, strict=False)
    return "\n".join(line["text"] for line in cropped.extract_text_lines())


@parser("pdf", order=10, detect=lambda p: p.head.startswith(b"%PDF-"), extensions=(".pdf",),
        libraries=("pdfplumber", "pdfminer.six"))
def _pdf_file(path: Path) -> Parsed:
    """PDF: words, lines and tables with page and bounding box."""
    return parse_pdf(path)


def parse_pdf(path: Path, role: Role = Role.SOURCE_DOCUMENT) -> Parsed:
    """Page by page, each page on its own: an error inside one page (pdfminer, or pdfplumber's lines, words and
    tables) costs that page only (a `pdf.corrupt` defect at `p<n>`); the other pages' facts stay. Streams are
    decoded and pages interpreted under the budgets of `ingest/payloads/limits.py`; reaching one stops the parse there
    with a `parse.budget` defect and keeps the facts found before it."""
    import pdfplumber
    from pdfminer.pdfdocument import PDFPasswordIncorrect
    from pdfplumber.utils.exceptions import PdfminerException

    install_stream_guards()
    parsed = Parsed(format="pdf", role=role)
    meter = PdfMeter()
    token = METER.set(meter)
    try:
        try:
            pdf = pdfplumber.open(path)
        except (PdfminerException, PDFPasswordIncorrect) as exc:
            cause = exc.args[0] if exc.args else exc
            if isinstance(cause, BudgetExceeded):
                parsed.defects.append(FileDefect("parse.budget", f"the PDF cannot be opened within its budgets ({cause})"))
                return parsed
            encrypted = isinstance(cause, PDFPasswordIncorrect) or "password" in repr(cause).lower()
            rule = "pdf.encrypted" if encrypted else "pdf.corrupt"
            parsed.defects.append(FileDefect(rule, f"PDF cannot be opened ({type(cause).__name__}: {printable(cause)})"))
            return parsed
        except BudgetExceeded as exc:
            parsed.defects.append(FileDefect("parse.budget", f"the PDF cannot be opened within its budgets ({exc})"))
            return parsed
        except MemoryError:  # the worker's memory limit: ingest/payloads/parse_ahead.py names it
            raise
        except Exception as exc:  # noqa: BLE001 - pdfminer raises many kinds for damaged files
            parsed.defects.append(FileDefect("pdf.corrupt", f"PDF cannot be opened ({type(exc).__name__}: {printable(exc)})"))
            return parsed
        try:
            _pages(pdf, parsed, meter, role)
        finally:
            # not pdf.close(): it builds pdfplumber's list of every page (the whole page tree) to close them;
            # the pages read here were closed one by one
            pdf.flush_cache()
            if not pdf.stream_is_external:
                pdf.stream.close()
    finally:
        METER.reset(token)
    return parsed


def _pages(pdf: Any, parsed: Parsed, meter: Meter, role: Role) -> None:
    from pdfminer.pdfpage import PDFPage
    from pdfplumber.page import Page

    no_text: list[int] = []
    tables = 0
    seen = 0
    doctop: float = 0
    pages = PDFPage.create_pages(pdf.doc)
    while True:
        n = seen + 1
        try:
            page_obj = next(pages)
        except StopIteration:
            break
        except BudgetExceeded as exc:
            parsed.defects.append(FileDefect("parse.budget", f"stopped before page {n}: {exc}; later pages are not parsed",
                                             f"p{n}"))
            break
        except MemoryError:  # the worker's memory limit: ingest/payloads/parse_ahead.py names it
            raise
        except Exception as exc:  # noqa: BLE001 - a damaged page tree: keep the pages read before it
            where = "" if seen == 0 else f" after page {seen}"
            parsed.defects.append(FileDefect("pdf.corrupt", f"PDF page tree cannot be read{where} ({printable(exc)})"))
            break
        if seen >= meter.limit("pages_per_pdf"):
            declared = _declared_pages(pdf)
            of = f" of the {declared} the file declares" if declared else ""
            parsed.defects.append(FileDefect(
                "parse.budget", f"stopped after {seen} pages{of} (budget pages_per_pdf); pages from {n} on are not parsed",
                f"p{n}"))
            break
        seen = n
        page: Any = None
        found: list[Fact] = []
        try:
            page = Page(pdf, page_obj, page_number=n, initial_doctop=doctop)
            doctop += page.height
            layout_page(pdf, page, meter)
            page_tables = _page_facts(page, n, role, found, no_text, parsed, meter)
        except BudgetExceeded as exc:
            parsed.defects.append(FileDefect(
                "parse.budget", f"stopped at page {n}: {exc}; page {n} and later pages are not parsed", f"p{n}"))
            break
        except MemoryError:  # the worker's memory limit: ingest/payloads/parse_ahead.py names it
            raise
        except Exception as exc:  # noqa: BLE001 - one bad page costs that page only
            parsed.defects.append(FileDefect(
                "pdf.corrupt", f"page {n} cannot be read ({type(exc).__name__}: {printable(exc)})", f"p{n}"))
            continue
        finally:
            if page is not None:
                page.close()
        tables += page_tables
        room = meter.room("facts_per_file")
        if len(found) > room:
            parsed.facts.extend(found[:room])
            parsed.defects.append(FileDefect(
                "parse.budget", f"stopped after {meter.limit('facts_per_file')} facts (budget facts_per_file); "
                f"facts of page {n} after {found[room - 1].locator if room else 'its start'} and later pages are not located",
                f"p{n}"))
            break
        meter.used["facts_per_file"] = meter.used.get("facts_per_file", 0) + len(found)
        parsed.facts.extend(found)
    if meter.exceeded is not None and not any(d.rule == "parse.budget" for d in parsed.defects):
        # a library caught the signal (pdfminer reading metadata): the budget was still reached
        parsed.defects.append(FileDefect("parse.budget", f"a stream was not decoded: {meter.exceeded}"))
    cut: list[str] = getattr(meter, "cut", [])
    if cut:
        parsed.defects.append(FileDefect("pdf.corrupt", cut[0] + (f" (and {len(cut) - 1} more)" if len(cut) > 1 else "")))
    parsed.pages = seen
    if seen and len(no_text) == seen:
        parsed.defects.append(FileDefect("pdf.no_text_layer", "no page has a text layer (scanned or image-only PDF)"))
    parsed.summary = {"pages": seen, "pages_without_text": no_text, "tables": tables,
                      "metadata": {k: str(v) for k, v in (pdf.metadata or {}).items() if isinstance(v, (str, int, float))}}


def _page_facts(page: Any, n: int, role: Role, found: list[Fact], no_text: list[int], parsed: Parsed,
                meter: Meter) -> int:
    """The facts of one page into `found` (kept only when the whole page succeeds); its table count."""
    lines = page.extract_text_lines()
    if not page.chars:
        no_text.append(n)
        what = "is an image only" if page.images else "has no text layer"
        parsed.defects.append(FileDefect("pdf.no_text_layer", f"page {n} {what}", f"p{n}"))
        return 0
    for i, line in enumerate(lines, start=1):
        bbox = outer_bbox(line["x0"], line["top"], line["x1"], line["bottom"])
        found.append(Fact("pdf_line", f"p{n}:l{i}", line["text"], role=role, extra={"page": n, "bbox": list(bbox)}))
    for i, word in enumerate(page.extract_words(), start=1):
        bbox = outer_bbox(word["x0"], word["top"], word["x1"], word["bottom"])
        found.append(Fact("pdf_word", f"p{n}:w{i}", word["text"], role=role, extra={"page": n, "bbox": list(bbox)}))
    tables = 0
    index: _CharIndex | None = None
    crossings = len(page.horizontal_edges) * len(page.vertical_edges)
    if crossings > meter.room("table_cells_per_pdf"):
        # pdfplumber's table finder costs the square of the ruling-line crossings: do not start it
        parsed.defects.append(FileDefect(
            "parse.budget", f"page {n}: tables are not read: its ruling lines could cross {crossings} times, more than "
            f"the {meter.room('table_cells_per_pdf')} table cells left (budget table_cells_per_pdf)", f"p{n}"))
        return 0
    for t, table in enumerate(page.find_tables(), start=1):
        tables += 1
        index = index or _CharIndex(page.chars)
        for r, row in enumerate(table.rows, start=1):
            for c, cell in enumerate(row.cells, start=1):
                if cell is None:
                    continue
                meter.take("table_cells_per_pdf", 1, "table cells read")
                bbox = outer_bbox(*cell)
                text = index.text_in_box(bbox)
                if text.strip():
                    found.append(Fact("pdf_table_cell", f"p{n}:t{t}:r{r}c{c}", text, role=role,
                                      extra={"page": n, "bbox": list(bbox), "table": t, "row": r, "column": c}))
    return tables


class _CharIndex:
    """text_in_box for many boxes of one page without scanning the page once per box: the page's chars in a grid
    of buckets, so a box looks only at the chars near it. A box's crop is computed from the candidates exactly as
    pdfplumber crops a page (the same objects in the same order: every char a crop keeps is a candidate), so the
    text equals text_in_box(page, bbox)."""

    SIZE = 16.0  # points per bucket side
    SPREAD = 64  # a char over more buckets than this (or with a coordinate that is not finite) is always a candidate

    def __init__(self, chars: list[dict[str, Any]]) -> None:
        self.chars = chars
        self.buckets: dict[tuple[int, int], list[int]] = {}
        self.always: list[int] = []
        for i, ch in enumerate(chars):
            span = self._span((ch["x0"], ch["top"], ch["x1"], ch["bottom"]))
            if span is None:
                self.always.append(i)
                continue
            for key in span:
                self.buckets.setdefault(key, []).append(i)

    def _span(self, box: BBox) -> list[tuple[int, int]] | None:
        if not all(math.isfinite(v) for v in box):
            return None
        x0, x1 = math.floor(min(box[0], box[2]) / self.SIZE), math.floor(max(box[0], box[2]) / self.SIZE)
        y0, y1 = math.floor(min(box[1], box[3]) / self.SIZE), math.floor(max(box[1], box[3]) / self.SIZE)
        if (x1 - x0 + 1) * (y1 - y0 + 1) > self.SPREAD:
            return None
        return [(x, y) for x in range(x0, x1 + 1) for y in range(y0, y1 + 1)]

    def text_in_box(self, bbox: BBox) -> str:
        from pdfplumber.utils.geometry import crop_to_bbox
        from pdfplumber.utils.text import chars_to_textmap

        span = self._span(bbox)
        if span is None:
            candidates = self.chars
        else:
            found = set(self.always)
            for key in span:
                found.update(self.buckets.get(key, ()))
            candidates = [self.chars[i] for i in sorted(found)]
        chars = crop_to_bbox(candidates, bbox)
        textmap = chars_to_textmap(chars, layout_bbox=bbox, layout_width=bbox[2] - bbox[0],
                                   layout_height=bbox[3] - bbox[1])
        return "\n".join(line["text"] for line in textmap.extract_text_lines(strip=True, return_chars=True))


def _declared_pages(pdf: Any) -> int | None:
    try:
        from pdfminer.pdftypes import resolve1

        count = resolve1(resolve1(pdf.doc.catalog.get("Pages")).get("Count"))
        return count if isinstance(count, int) else None
    except Exception:  # noqa: BLE001 - only a figure for the defect's detail
        return None


class _Forward(logging.Handler):
    """pdfminer and pdfplumber log through `logging` with messages that echo raw file bytes; they are passed on to
    the `voe.ingest.pdf` logger as one short printable line, never printed by the libraries themselves."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
        except Exception:  # noqa: BLE001 - a message whose arguments do not format
            msg = str(record.msg)
        _LOG.log(record.levelno, "%s: %s", record.name, printable(msg))

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        pass


_LOG = logging.getLogger("voe.ingest.pdf")
for _name in ("pdfminer", "pdfplumber"):
    _lib = logging.getLogger(_name)
    _lib.handlers[:] = [_Forward()]
    _lib.propagate = False
    _lib.setLevel(logging.WARNING)  # pdfminer logs each operator at debug level: never format those
