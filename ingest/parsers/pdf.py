"""PDFs (pdfplumber): text lines and words with page and bounding box, and table cells. A page without a text layer
cannot be checked by a machine: it is a defect, never an empty success."""

from __future__ import annotations

import io
import logging
import math
import zlib
from contextvars import ContextVar
from pathlib import Path
from typing import Any, cast

from voe.ingest.limits import BudgetExceeded, Meter, printable
from voe.ingest.parsers.model import Fact, FileDefect, Parsed, Role
from voe.ingest.parsers.registry import parser

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
    decoded and pages interpreted under the budgets of `ingest/limits.py`; reaching one stops the parse there
    with a `parse.budget` defect and keeps the facts found before it."""
    import pdfplumber
    from pdfminer.pdfdocument import PDFPasswordIncorrect
    from pdfplumber.utils.exceptions import PdfminerException

    _install_stream_guards()
    parsed = Parsed(format="pdf", role=role)
    meter = _PdfMeter()
    token = _METER.set(meter)
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
        _METER.reset(token)
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
            _layout(pdf, page, meter)
            page_tables = _page_facts(page, n, role, found, no_text, parsed, meter)
        except BudgetExceeded as exc:
            parsed.defects.append(FileDefect(
                "parse.budget", f"stopped at page {n}: {exc}; page {n} and later pages are not parsed", f"p{n}"))
            break
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


# -- budgets inside pdfminer ---------------------------------------------------------------------------------
# pdfminer decodes a stream in one call (zlib.decompress, lzwdecode, ...) and interprets a page in one call, so
# the budgets are enforced where it does the work: the decoders it looks up in `pdfminer.pdftypes` are wrapped
# (active only while parse_pdf runs, through _METER; outside it they are pdfminer's own), and each page is laid
# out by a device and an interpreter that count what they process. A page's layout is then handed to pdfplumber
# as the `_layout` its Page caches, so lines, words and tables come from the same objects as before.

_METER: ContextVar[_PdfMeter | None] = ContextVar("voe_pdf_meter", default=None)
_INFLATE = "inflated_bytes_per_file"
_DECODED = "pdf_decoded_bytes"
LZW_WEIGHT = 16  # pdfminer's LZW decoder is pure Python (~3 s per MiB at worst): each byte counts 16
SLOW_FILTER_WEIGHT = 8  # CCITT fax decoding and PNG predictors loop in Python over their input


def _charge(n: int, what: str) -> None:
    meter = _METER.get()
    if meter is not None:
        meter.take(_DECODED, n, what)
        meter.take(_INFLATE, n, what)


def _room() -> int:
    meter = _METER.get()
    return min(meter.room(_DECODED), meter.room(_INFLATE)) if meter is not None else 1 << 62


class _BoundedZlib:
    """Stands in for the `zlib` module inside pdfminer.pdftypes: `decompress` stops at the byte budget."""

    error = zlib.error
    MAX_WBITS = zlib.MAX_WBITS

    @staticmethod
    def decompress(data: bytes, *args: Any, **kwargs: Any) -> bytes:
        if _METER.get() is None or args or kwargs:
            return zlib.decompress(data, *args, **kwargs)
        d = zlib.decompressobj()
        room = _room()
        out = d.decompress(data, room + 1)
        if len(out) > room:
            _charge(len(out), "a Flate stream inflates past it")
        if not d.eof:  # what zlib.decompress says of a stream that ends early
            raise zlib.error("Error -5 while decompressing data: incomplete or truncated stream")
        _charge(len(out), "Flate streams")
        return out

    @staticmethod
    def decompressobj(*args: Any, **kwargs: Any) -> Any:
        return zlib.decompressobj(*args, **kwargs)


def _decompress_corrupted(data: bytes) -> bytes:
    """pdfminer's decompress_corrupted (inflate a stream whose checksum is damaged, keeping what came before an
    error in its last 3 bytes), linear and bounded: pdfminer's feeds one byte at a time into a growing bytes."""
    if _METER.get() is None:
        return cast(bytes, _ORIGINAL["decompress_corrupted"](data))
    d = zlib.decompressobj()
    parts: list[bytes] = []
    pos, step = 0, 4096
    while pos < len(data):
        chunk = data[pos:pos + step]
        saved = d.copy()
        try:
            out = d.decompress(chunk, _room() + 1)
            if d.unconsumed_tail:
                _charge(_room() + 1, "a damaged Flate stream inflates past it")
            _charge(len(out), "Flate streams")
            parts.append(out)
        except zlib.error:
            d = saved
            for j in range(len(chunk)):
                try:
                    out = d.decompress(chunk[j:j + 1])
                except zlib.error:
                    if pos + j < len(data) - 3:
                        raise
                    _LOG.warning("Data-loss while decompressing corrupted data")
                    return b"".join(parts)
                _charge(len(out), "Flate streams")
                parts.append(out)
        pos += step
    return b"".join(parts)


def _lzwdecode(data: bytes) -> bytes:
    if _METER.get() is None:
        return cast(bytes, _ORIGINAL["lzwdecode"](data))
    from pdfminer.lzw import LZWDecoder

    parts = []
    for chunk in LZWDecoder(io.BytesIO(data)).run():
        _charge(len(chunk) * LZW_WEIGHT, f"LZW streams (each byte counts {LZW_WEIGHT})")
        parts.append(chunk)
    return b"".join(parts)


def _rldecode(data: bytes) -> bytes:
    """pdfminer's RunLength decoder (same output and the same errors on a cut stream) into bytes, bounded."""
    if _METER.get() is None:
        return cast(bytes, _ORIGINAL["rldecode"](data))
    out = bytearray()
    i, n = 0, len(data)
    room = _room()
    while i < n:
        length = data[i]
        i += 1
        if length == 128:
            break
        if length < 128:
            take = data[i:i + length + 1]
            out += take
            i += length + 1
            if len(take) < length + 1:
                raise RuntimeError("generator raised StopIteration")
        else:
            if i >= n:
                raise StopIteration
            out += data[i:i + 1] * (257 - length)
            i += 1
        if len(out) > room:
            _charge(len(out), "a RunLength stream expands past it")
    _charge(len(out), "RunLength streams")
    return bytes(out)


def _weighted(name: str, what: str) -> Any:
    def call(data: bytes, *args: Any) -> bytes:
        if _METER.get() is not None:
            _charge(len(data) * SLOW_FILTER_WEIGHT, f"{what} (each input byte counts {SLOW_FILTER_WEIGHT})")
        out: bytes = _ORIGINAL[name](data, *args)
        return out

    return call


def _predictor(name: str) -> Any:
    def call(*args: Any) -> bytes:
        if _METER.get() is not None:
            _charge(len(args[-1]) * SLOW_FILTER_WEIGHT, f"predictor decoding (each byte counts {SLOW_FILTER_WEIGHT})")
        out: bytes = _ORIGINAL[name](*args)
        return out

    return call


_ORIGINAL: dict[str, Any] = {}


def _counted_add_token(self: Any, obj: Any) -> None:
    """pdfminer's tokenizer (PSBaseParser._add_token: every object, xref and content token passes here), counted
    against pdf_tokens while parse_pdf runs: a page tree, a damaged file's fallback scan and content streams
    (each time a form is drawn) are all read one token at a time, about 170k per second."""
    meter = _METER.get()
    if meter is not None:
        meter.tokens_left -= 1
        if meter.tokens_left < 0:
            meter.tokens_left = 0
            meter.take("pdf_tokens", meter.room("pdf_tokens") + 1, "tokens read")
    _ORIGINAL["_add_token"](self, obj)


def _linear_parse_string(self: Any, s: bytes, i: int) -> int:
    """pdfminer's PSBaseParser._parse_string with the literal string collected in a bytearray: the original
    appends to a bytes object at every backslash and parenthesis, so a damaged file whose fallback scan meets a
    string megabytes long spent minutes copying it (found by bench/fuzz.py: 262 s for a 4.5 MB input)."""
    from pdfminer.psparser import END_STRING

    if not isinstance(self._curtoken, bytearray):
        self._curtoken = bytearray(self._curtoken)
    m = END_STRING.search(s, i)
    if not m:
        self._curtoken += s[i:]
        return len(s)
    j = m.start(0)
    self._curtoken += s[i:j]
    c = s[j : j + 1]
    if c == b"\\":
        self.oct = b""
        self._parse1 = self._parse_string_1
        return j + 1
    if c == b"(":
        self.paren += 1
        self._curtoken += c
        return j + 1
    if c == b")":
        self.paren -= 1
        if self.paren:
            self._curtoken += c
            return j + 1
    token = bytes(self._curtoken)
    self._curtoken = b""
    self._add_token(token)
    self._parse1 = self._parse_main
    return j + 1


def _bounded_literal_name(x: Any) -> str:
    """pdfminer's literal_name without str() of a whole object. A damaged dictionary whose keys are arrays or
    dictionaries (each holding the ones nested inside it) had each key repr()'d at every level of nesting:
    gigabytes from a 1 MB file (found by bench/fuzz.py). A key that is not a name is junk either way; it keeps
    a short stand-in."""
    from pdfminer.psparser import PSLiteral

    if isinstance(x, PSLiteral):
        name: str = _ORIGINAL["literal_name"](x)
        return name
    if isinstance(x, (str, bytes, bytearray)):
        return str(x[:64])
    if isinstance(x, (int, float, bool)) or x is None:
        return str(x)
    return f"<{type(x).__name__}>"


class _PdfMeter(Meter):
    def __init__(self) -> None:
        super().__init__()
        self.tokens_left = self.room("pdf_tokens")


def _install_stream_guards() -> None:
    if _ORIGINAL:
        return
    from pdfminer import pdftypes
    from pdfminer.psparser import PSBaseParser

    _ORIGINAL["_add_token"] = PSBaseParser._add_token
    PSBaseParser._add_token = _counted_add_token  # type: ignore[method-assign]
    _ORIGINAL["_parse_string"] = PSBaseParser._parse_string
    PSBaseParser._parse_string = _linear_parse_string  # type: ignore[method-assign]
    from pdfminer import cmapdb, pdfdocument, psparser

    _ORIGINAL["literal_name"] = psparser.literal_name
    for module in (psparser, pdfdocument, cmapdb):  # each holds its own reference (`from ... import`)
        module.literal_name = _bounded_literal_name  # type: ignore[attr-defined]

    for name in ("zlib", "decompress_corrupted", "lzwdecode", "rldecode", "ccittfaxdecode", "apply_png_predictor",
                 "apply_tiff_predictor"):
        _ORIGINAL[name] = getattr(pdftypes, name)
    for name, guard in (("zlib", _BoundedZlib), ("decompress_corrupted", _decompress_corrupted), ("lzwdecode", _lzwdecode),
                        ("rldecode", _rldecode), ("ccittfaxdecode", _weighted("ccittfaxdecode", "CCITT fax streams")),
                        ("apply_png_predictor", _predictor("apply_png_predictor")),
                        ("apply_tiff_predictor", _predictor("apply_tiff_predictor"))):
        setattr(pdftypes, name, guard)


def _layout(pdf: Any, page: Any, meter: Meter) -> None:
    """Lay out one page the way pdfplumber's Page.layout does, counting the objects laid out."""
    from pdfminer.pdfinterp import PDFPageInterpreter
    from pdfplumber.page import PDFPageAggregatorWithMarkedContent

    class Device(PDFPageAggregatorWithMarkedContent):
        def _count(self) -> None:
            meter.take("chars_per_pdf", 1, "characters and graphic objects laid out")

        def render_char(self, *args: Any, **kwargs: Any) -> float:
            self._count()
            adv: float = super().render_char(*args, **kwargs)
            return adv

        def paint_path(self, *args: Any, **kwargs: Any) -> None:
            self._count()
            super().paint_path(*args, **kwargs)

        def render_image(self, *args: Any, **kwargs: Any) -> None:
            self._count()
            super().render_image(*args, **kwargs)

    class Interpreter(PDFPageInterpreter):
        def pop(self, n: int) -> list[Any]:
            """pdfminer's pop, in place: pdfminer copies the whole operand stack on every operator, quadratic in a
            content stream that pushes operands no operator takes."""
            if n == 0:
                return []
            x = self.argstack[-n:]
            del self.argstack[-n:]
            return x

    device = Device(pdf.rsrcmgr, pageno=page.page_number, laparams=pdf.laparams)
    Interpreter(pdf.rsrcmgr, device).process_page(page.page_obj)
    page._layout = device.get_result()  # pdfplumber's cache of Page.layout: lines, words and tables read it


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
