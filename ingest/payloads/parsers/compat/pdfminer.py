"""pdfminer.six and pdfplumber internals voe replaces or wraps, kept apart because they are the hostile-input
boundary and depend on those libraries' private names (pyproject bounds their versions;
tests/ingest/payloads/parsers/test_compat.py checks every name patched here still exists).

What is patched, and why: PSBaseParser._add_token (counted against pdf_tokens), PSBaseParser._parse_string (linear
in a long literal string), psparser/pdfdocument/cmapdb.literal_name (no str() of a whole object used as a key),
and the stream decoders pdfminer.pdftypes looks up (zlib, decompress_corrupted, lzwdecode, rldecode,
ccittfaxdecode, the PNG and TIFF predictors: stopped at the byte budgets), pdffont.get_widths(2) and
CMapParser.do_keyword (ranges cut to what a font or a CMap may declare before they are expanded); a page is
laid out by a device and an interpreter of pdfminer's that count what they process (and pop the operand stack in place).
"""

from __future__ import annotations

import io
import logging
import zlib
from contextvars import ContextVar
from typing import Any, cast

from voe.ingest.payloads.limits import Meter

_LOG = logging.getLogger("voe.ingest.pdf")  # pdf.py's logger: what a decoder says goes where the parser's words go

# -- budgets inside pdfminer ---------------------------------------------------------------------------------
# pdfminer decodes a stream in one call (zlib.decompress, lzwdecode, ...) and interprets a page in one call, so
# the budgets are enforced where it does the work: the decoders it looks up in `pdfminer.pdftypes` are wrapped
# (active only while parse_pdf runs, through METER; outside it they are pdfminer's own), and each page is laid
# out by a device and an interpreter that count what they process. A page's layout is then handed to pdfplumber
# as the `layout_page` its Page caches, so lines, words and tables come from the same objects as before.

METER: ContextVar[PdfMeter | None] = ContextVar("voe_pdf_meter", default=None)
_INFLATE = "inflated_bytes_per_file"
_DECODED = "pdf_decoded_bytes"
LZW_WEIGHT = 16  # pdfminer's LZW decoder is pure Python (~3 s per MiB at worst): each byte counts 16
SLOW_FILTER_WEIGHT = 8  # CCITT fax decoding and PNG predictors loop in Python over their input


def _charge(n: int, what: str) -> None:
    meter = METER.get()
    if meter is not None:
        meter.take(_DECODED, n, what)
        meter.take(_INFLATE, n, what)


def _room() -> int:
    meter = METER.get()
    return min(meter.room(_DECODED), meter.room(_INFLATE)) if meter is not None else 1 << 62


class _BoundedZlib:
    """Stands in for the `zlib` module inside pdfminer.pdftypes: `decompress` stops at the byte budget."""

    error = zlib.error
    MAX_WBITS = zlib.MAX_WBITS

    @staticmethod
    def decompress(data: bytes, *args: Any, **kwargs: Any) -> bytes:
        if METER.get() is None or args or kwargs:
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
    if METER.get() is None:
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
    if METER.get() is None:
        return cast(bytes, _ORIGINAL["lzwdecode"](data))
    from pdfminer.lzw import LZWDecoder

    parts = []
    for chunk in LZWDecoder(io.BytesIO(data)).run():
        _charge(len(chunk) * LZW_WEIGHT, f"LZW streams (each byte counts {LZW_WEIGHT})")
        parts.append(chunk)
    return b"".join(parts)


def _rldecode(data: bytes) -> bytes:
    """pdfminer's RunLength decoder (same output and the same errors on a cut stream) into bytes, bounded."""
    if METER.get() is None:
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
        if METER.get() is not None:
            _charge(len(data) * SLOW_FILTER_WEIGHT, f"{what} (each input byte counts {SLOW_FILTER_WEIGHT})")
        out: bytes = _ORIGINAL[name](data, *args)
        return out

    return call


def _predictor(name: str) -> Any:
    def call(*args: Any) -> bytes:
        if METER.get() is not None:
            _charge(len(args[-1]) * SLOW_FILTER_WEIGHT, f"predictor decoding (each byte counts {SLOW_FILTER_WEIGHT})")
        out: bytes = _ORIGINAL[name](*args)
        return out

    return call


_ORIGINAL: dict[str, Any] = {}


def _counted_add_token(self: Any, obj: Any) -> None:
    """pdfminer's tokenizer (PSBaseParser._add_token: every object, xref and content token passes here), counted
    against pdf_tokens while parse_pdf runs: a page tree, a damaged file's fallback scan and content streams
    (each time a form is drawn) are all read one token at a time, about 170k per second."""
    meter = METER.get()
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


CID_MAX = 0xFFFF  # CIDs are two bytes (PDF 32000-1 9.7.3): a width range past them is not a font's


def _bounded_widths(original: Any, group: int) -> Any:
    """pdffont.get_widths (`c_first c_last w`, group 3) or get_widths2 (`c_first c_last w1y v1x v1y`, group 5) with
    each range cut to the CIDs that exist before it is expanded (one range of 2^31 would be a dict of 2^31
    entries)."""
    def widths(seq: Any) -> Any:
        from pdfminer.pdftypes import resolve1

        out: list[Any] = []
        run: list[Any] = []
        for v in seq:
            v = resolve1(v)
            if isinstance(v, list):
                out.extend(run)
                out.append(v)
                run = []
            elif isinstance(v, (int, float)):
                run.append(v)
                if len(run) == group:
                    first, last = run[0], run[1]
                    if isinstance(first, int) and isinstance(last, int) and last - first > CID_MAX:
                        _cut(f"a font width range {first}..{last} is cut to the CIDs 0..{CID_MAX}")
                        run[0], run[1] = max(first, 0), min(last, CID_MAX)
                    out.extend(run)
                    run = []
        out.extend(run)
        return original(out)
    return widths


CMAP_RANGE_MAX = 1 << 16  # codes one bfrange or cidrange may map: every two-byte range, never a whole 3-4 byte space


def _bounded_cmap_keyword(original: Any) -> Any:
    """CMapParser.do_keyword with each bfrange and cidrange cut to CMAP_RANGE_MAX codes before pdfminer expands it
    code by code (a 3-byte range over the whole code space is 2^24 entries; the CMap specification, Adobe TN 5014,
    has ranges differ in their last byte, and real two-byte CMaps map <0000> <FFFF> at most)."""
    def do_keyword(self: Any, pos: int, token: Any) -> None:
        if token in (self.KEYWORD_ENDBFRANGE, self.KEYWORD_ENDCIDRANGE) and getattr(self, "_in_cmap", False):
            stack = self.curstack
            for i in range(0, len(stack) - 2, 3):
                (_, low), (at, high) = stack[i], stack[i + 1]
                if not (isinstance(low, bytes) and isinstance(high, bytes) and len(low) == len(high)):
                    continue
                first, last = int.from_bytes(low, "big"), int.from_bytes(high, "big")
                if last - first >= CMAP_RANGE_MAX:
                    _cut(f"a CMap range {low.hex()[:16]}..{high.hex()[:16]} maps more than {CMAP_RANGE_MAX} codes; "
                         "cut to them")
                    stack[i + 1] = (at, (first + CMAP_RANGE_MAX - 1).to_bytes(len(high), "big"))
        original(self, pos, token)
    return do_keyword


class PdfMeter(Meter):
    def __init__(self) -> None:
        super().__init__()
        self.tokens_left = self.room("pdf_tokens")
        self.cut: list[str] = []  # ranges cut to what a font or a CMap may declare (pdf.py makes them defects)


def _cut(what: str) -> None:
    _LOG.warning("%s", what)
    meter = METER.get()
    if meter is not None:
        meter.cut.append(what)


def install_stream_guards() -> None:
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

    from pdfminer import pdffont

    for name, group in (("get_widths", 3), ("get_widths2", 5)):
        _ORIGINAL[name] = getattr(pdffont, name)
        setattr(pdffont, name, _bounded_widths(_ORIGINAL[name], group))
    _ORIGINAL["do_keyword"] = cmapdb.CMapParser.do_keyword
    cmapdb.CMapParser.do_keyword = _bounded_cmap_keyword(_ORIGINAL["do_keyword"])  # type: ignore[method-assign]

    for name in ("zlib", "decompress_corrupted", "lzwdecode", "rldecode", "ccittfaxdecode", "apply_png_predictor",
                 "apply_tiff_predictor"):
        _ORIGINAL[name] = getattr(pdftypes, name)
    for name, guard in (("zlib", _BoundedZlib), ("decompress_corrupted", _decompress_corrupted), ("lzwdecode", _lzwdecode),
                        ("rldecode", _rldecode), ("ccittfaxdecode", _weighted("ccittfaxdecode", "CCITT fax streams")),
                        ("apply_png_predictor", _predictor("apply_png_predictor")),
                        ("apply_tiff_predictor", _predictor("apply_tiff_predictor"))):
        setattr(pdftypes, name, guard)


def layout_page(pdf: Any, page: Any, meter: Meter) -> None:
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
    page.layout_page = device.get_result()  # pdfplumber's cache of Page.layout: lines, words and tables read it
