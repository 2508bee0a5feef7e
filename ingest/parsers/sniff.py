"""Dispatch by content, not by extension: the first bytes decide the format; the extension is only
compared with it (a mismatch is a `format_mismatch` defect, e.g. an .xlsx that is really CSV).

One case is ambiguous by content alone: a single column of numbers (optionally under one header line) has
no delimiter to see, yet is valid CSV. It is `csv` when the extension names a table (`.csv`, or an `.xlsx`
that is really CSV, still flagged), and `text` otherwise."""

from __future__ import annotations

import csv
import io
import re
import zipfile
from pathlib import Path

EXPECTED_BY_EXTENSION = {
    ".pdf": "pdf", ".xlsx": "xlsx", ".xlsm": "xlsx", ".csv": "csv", ".xml": "xml", ".xsd": "xml",
    ".step": "step", ".stp": "step", ".eia": "nc", ".nc": "nc", ".gcode": "nc", ".json": "json",
}
NUMBER_RE = re.compile(r"^[+-]?(?:\d++(?:\.\d*+)?+|\.\d++)(?:[eE][+-]?\d++)?+$")  # possessive: linear on long digits
# An AM Bench release file summary: an HTML document whose <h1> reads "Release File Summary: A to B".
RELEASE_TITLE_RE = re.compile(r"Release File Summary: (\d+(?:\.\d+)*) to (\d+(?:\.\d+)*)")
RELEASE_HEAD_RE = re.compile(rb"(?i:<!DOCTYPE html[^>]*>\s*)?(?i:<html)[\s>].*?(?i:<h1>)\s*Release File Summary: "
                             rb"\d+(?:\.\d+)* to \d+(?:\.\d+)*\s*(?i:</h1>)", re.S)


def sniff(path: Path, head: bytes) -> str:
    """One of pdf, xlsx, zip, step, release_summary, xml, json, nc, csv, checksum, text, binary."""
    if head.startswith(b"%PDF-"):
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(path) as zf:
                names = set(zf.namelist())
        except (zipfile.BadZipFile, OSError):
            return "binary"
        return "xlsx" if "xl/workbook.xml" in names else "zip"
    text_head = head.lstrip(b"\xef\xbb\xbf").lstrip()
    if text_head.startswith(b"ISO-10303-21;"):
        return "step"
    if RELEASE_HEAD_RE.match(text_head):
        return "release_summary"
    if text_head.startswith(b"<?xml") or (text_head.startswith(b"<") and not text_head.startswith(b"<!DOCTYPE html")):
        return "xml"
    if text_head[:1] in (b"{", b"["):
        return "json"
    if b"\x00" in head:
        return "binary"
    text = decode_text(head)
    stripped = text.strip()
    if len(stripped) == 64 and all(c in "0123456789abcdefABCDEF" for c in stripped):
        return "checksum"
    lines = [ln for ln in text.splitlines() if ln.strip()][:40]
    if _looks_nc(lines):
        return "nc"
    if _looks_csv(text, lines):
        return "csv"
    if EXPECTED_BY_EXTENSION.get(path.suffix.lower()) in ("csv", "xlsx") and _looks_one_column(lines):
        return "csv"
    return "text"


def decode_text(data: bytes) -> str:
    """UTF-8 (BOM or not), else Windows-1252: AM Bench templates write `µm` as the single byte 0xB5."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if exc.start >= len(data) - 3:  # a multi-byte character cut off at the end of a head read
            try:
                return data[: exc.start].decode("utf-8-sig")
            except UnicodeDecodeError:
                pass
        return data.decode("cp1252", errors="replace")


def text_encoding(data: bytes) -> str:
    try:
        data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return "cp1252"
    return "utf-8"


def _looks_nc(lines: list[str]) -> bool:
    """G-code / EIA: mostly lines of G/M/T/N/#/O words or (comments)."""
    if not lines:
        return False
    codes = sum(1 for ln in lines if ln.lstrip("/0123456789 ").startswith(("G", "M", "N", "#", "(", "T", "O", "%", ";")))
    gwords = sum(1 for ln in lines if any(tok[:1] in "GM" and tok[1:2].isdigit() for tok in ln.split()))
    return codes / len(lines) > 0.7 and gwords >= 3


def _looks_csv(text: str, lines: list[str]) -> bool:
    if len(lines) < 2 or "," not in text:
        return False
    try:
        rows = list(csv.reader(io.StringIO("\n".join(lines[:20]))))
    except csv.Error:
        return False
    widths = [len(r) for r in rows if r]
    return max(widths) > 1 and sum(1 for w in widths if w > 1) >= len(widths) * 0.8


def _looks_one_column(lines: list[str]) -> bool:
    """A single CSV column: every line one numeric field, or one header line (no delimiter) over numbers."""
    if not lines or any(d in ln for ln in lines for d in ",;\t"):
        return False
    fields = [ln.strip().strip('"').strip() for ln in lines]
    body = fields if NUMBER_RE.match(fields[0]) else fields[1:]
    return bool(body) and all(NUMBER_RE.match(f) for f in body)
