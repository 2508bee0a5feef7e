"""CSV and spreadsheets: header row, columns with units from headers, one fact per non-empty cell located by
CSV line/column or sheet + A1 cell; formulas kept as formulas with their cached values."""

from __future__ import annotations

import csv
import datetime as dt
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from voe.ingest.payloads.limits import BudgetExceeded, Meter, printable
from voe.ingest.payloads.parsers.compat.openpyxl import Book, Sheet, cell_name, read_sheet
from voe.ingest.payloads.parsers.encoding import decode_text, text_encoding
from voe.ingest.payloads.parsers.model import Fact, FileDefect, Parsed, Role
from voe.ingest.payloads.parsers.registry import Probe, parser

UNIT_RE = re.compile(r"^(?P<name>.*?)\s*[\(\[]\s*(?P<unit>[^()\[\]]{1,24}?)\s*[\)\]]\s*$")


@lru_cache(maxsize=1024)
def split_unit(header: str) -> tuple[str, str | None]:
    """`diameter (mm)` -> (`diameter`, `mm`); `Time(s)` -> (`Time`, `s`); no unit -> (header, None).

    What UNIT_RE matches, worked out in one pass (the regex backtracks quadratically over a long run of spaces,
    and a header is split once per cell of its column): the unit sits between the last opening bracket and the
    closing bracket that ends the header."""
    h = header.strip()
    if not h or h[-1] not in ")]":
        return h, None
    opening = max(h.rfind("(", 0, len(h) - 1), h.rfind("[", 0, len(h) - 1))
    if opening <= 0 or any(ch in "()[]" for ch in h[opening + 1:-1]):
        return h, None
    k = opening
    while k > 0 and h[k - 1] in _RE_SPACE:
        k -= 1
    name = h[:k]
    if not name or "\n" in name:
        return h, None
    inner = h[opening + 1:-1]
    lead = len(inner) - len(inner.lstrip(_RE_SPACE))
    core = inner[lead:].rstrip(_RE_SPACE)
    if not core:
        unit = inner[-1:] if inner else None  # `( )`: the regex gives its last space back to the unit
    else:
        unit = core if len(core) <= 24 else None
    if unit is None:
        return h, None
    return name.strip(), unit.strip()


_RE_SPACE = "".join(chr(c) for c in range(0x3100) if re.match(r"\s", chr(c)))  # what `\s` matches (none above)


def cell_text(value: Any) -> str:
    """How a cell value is written as fact text (tests re-read cells through this same function)."""
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, float) and value.is_integer():
        return repr(value)
    return str(value)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def find_header(rows: list[list[str]]) -> int | None:
    """Index of the header row among the first 25: the first row with at least two non-empty, non-numeric
    cells whose width is the widest seen, followed by a row holding a number."""
    widest = max((sum(1 for c in r if c.strip()) for r in rows[:25]), default=0)
    candidates = []
    for i, row in enumerate(rows[:25]):
        cells = [c for c in row if c.strip()]
        if len(cells) >= 2 and len(cells) >= widest * 0.6 and not any(_is_number(c) for c in cells):
            candidates.append(i)
            nxt = rows[i + 1] if i + 1 < len(rows) else []
            if any(_is_number(c) for c in nxt if c.strip()):
                return i
    return candidates[0] if candidates else None  # a template without data rows: its first header


def _one_column_header(rows: list[list[str]]) -> int | None:
    """A one-column CSV's header (find_header needs two cells): its first non-empty row, when that holds one
    non-numeric cell and the next non-empty row one number."""
    filled = [i for i, r in enumerate(rows[:25]) if any(c.strip() for c in r)]
    if len(filled) < 2 or any(len(rows[i]) != 1 for i in filled):
        return None
    first, nxt = filled[0], filled[1]
    return first if not _is_number(rows[first][0]) and _is_number(rows[nxt][0]) else None


NUMBER_RE = re.compile(r"^[+-]?(?:\d++(?:\.\d*+)?+|\.\d++)(?:[eE][+-]?\d++)?+$")  # possessive: linear on long digits


def _looks_csv(p: Probe) -> bool:
    lines = p.lines
    if len(lines) < 2 or "," not in p.text:
        return False
    rows = p.csv_rows()
    if rows is None:
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


def _is_csv(p: Probe) -> bool:
    """Delimited rows; or a single column of numbers (optionally under one header line), which has no delimiter
    to see: csv only where the extension names a table (`.csv`, or an `.xlsx` that is really CSV, still
    flagged), text otherwise."""
    return _looks_csv(p) or (p.extension_format in ("csv", "xlsx") and _looks_one_column(p.lines))


@parser("csv", order=100, detect=_is_csv, extensions=(".csv",))
def _csv_file(path: Path) -> Parsed:
    """CSV: every cell at row and column, units split from headers."""
    return parse_csv(path, path.read_bytes())


def parse_csv(path: Path, data: bytes, role: Role = Role.CHARACTERIZATION) -> Parsed:
    parsed = Parsed(format="csv", role=role)
    bom = data.startswith(b"\xef\xbb\xbf")
    encoding = text_encoding(data)
    text = decode_text(data)
    crlf = b"\r\n" in data
    meter = Meter()
    cut: list[FileDefect] = []
    reader = csv.reader(_metered_lines(text, meter, cut))
    rows: list[list[str]] = []
    lines: list[int] = []
    try:
        start = 1
        for row in reader:
            rows.append(row)
            lines.append(start)
            start = reader.line_num + 1
    except csv.Error as exc:
        parsed.defects.append(FileDefect("csv.syntax", f"CSV syntax error at line {reader.line_num}: {printable(exc)}",
                                         f"L{reader.line_num}"))
    parsed.defects.extend(cut)
    header_at = find_header(rows)
    if header_at is None:
        header_at = _one_column_header(rows)
    headers: list[str] = rows[header_at] if header_at is not None else []
    width = len(headers) if headers else max((len(r) for r in rows), default=0)
    ragged = [lines[i] for i, r in enumerate(rows) if r and len(r) != width and any(c.strip() for c in r)]
    if ragged:
        parsed.defects.append(FileDefect(
            "csv.ragged", f"{len(ragged)} row(s) do not have the header's {width} columns (lines {ragged[:5]})",
            f"L{ragged[0]}"))
    room = meter.room("facts_per_file")
    for i, row in enumerate(rows):
        for j, raw in enumerate(row):
            if not raw.strip():
                continue
            if room == 0:
                last = parsed.facts[-1].locator if parsed.facts else "the first"
                parsed.defects.append(FileDefect(
                    "parse.budget", f"stopped after {len(parsed.facts)} facts (budget facts_per_file); cells after "
                    f"{last} are not located", f"L{lines[i]}:C{j + 1}"))
                break
            room -= 1
            header = headers[j] if headers and j < len(headers) and i != header_at else None
            name, unit = split_unit(header) if header else (None, None)
            value: Any = float(raw) if _is_number(raw) else raw
            parsed.facts.append(Fact("csv_cell", f"L{lines[i]}:C{j + 1}", raw, name, unit, value, role,
                                     {"line": lines[i], "column": j + 1, "header": i == header_at}))
        else:
            continue
        break
    parsed.cells = sum(len(r) for r in rows)
    parsed.summary = {"rows": len(rows), "columns": width, "header_line": lines[header_at] if header_at is not None else None,
                      "bom": bom, "crlf": crlf, "encoding": encoding,
                      "units": sorted({u for h in headers if (u := split_unit(h)[1])})}
    return parsed


# the lines io.StringIO(text, newline="") yields (ends kept: \r\n, \r or \n), without its 4-byte-per-character copy
LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _metered_lines(text: str, meter: Meter, cut: list[FileDefect]) -> Iterator[str]:
    """The physical lines the CSV reader reads, under cells_per_workbook: a line costs its delimiters plus one (an
    upper bound on the fields it adds, an empty line one). The line that would pass the budget is cut after the
    field that reaches it, and no later line is read."""
    room = meter.room("cells_per_workbook")
    for n, match in enumerate(LINE_RE.finditer(text), start=1):
        line = match.group()
        cost = line.count(",") + 1
        if cost > room:
            end = -1
            for _ in range(room):
                end = line.find(",", end + 1)
            kept = line[:end] if room else ""
            cut.append(FileDefect(
                "parse.budget", f"stopped after {meter.limit('cells_per_workbook')} fields (budget cells_per_workbook); "
                f"line L{n} is cut after column {room} and later lines are not read", f"L{n}"))
            if kept:
                yield kept
            return
        room -= cost
        yield line


def parse_xlsx(path: Path, role: Role = Role.CHARACTERIZATION) -> Parsed:
    """Stream the workbook (openpyxl read-only machinery, never the bounding box): only the cells the sheets hold
    are read, each sheet once for its formulas and once for their cached values, the same two readings the full
    loader made (`data_only` False and True). Reading is bounded by the budgets of `ingest/payloads/limits.py`."""
    parsed = Parsed(format="xlsx", role=role)
    meter = Meter()
    try:
        book = Book(path, meter)
    except BudgetExceeded as exc:
        parsed.defects.append(FileDefect("parse.budget", f"the workbook cannot be opened within its budgets ({exc})"))
        return parsed
    except MemoryError:  # the worker's memory limit: ingest/payloads/parse_ahead.py names it
        raise
    except Exception as exc:  # noqa: BLE001 - openpyxl raises many kinds
        parsed.defects.append(FileDefect("xlsx.read", f"workbook cannot be opened: {type(exc).__name__}: {printable(exc)}"))
        return parsed
    sheets = []
    with book:
        parsed.defects.extend(book.defects)
        for title, target in book.sheets:
            sheet = read_sheet(book, title, target, parsed, HEADER_ROWS)
            header_at = _sheet_facts(sheet, parsed, role)
            sheets.append({"sheet": title, "dimensions": sheet.dimensions,
                           "header_row": header_at + 1 if header_at is not None else None})
            if sheet.stopped:
                break
    if book.truncated:
        where, size = book.truncated[0]
        limit = meter.limit("field_length")
        more = f"; {len(book.truncated) - 1} more cell(s) are truncated the same way" if len(book.truncated) > 1 else ""
        parsed.defects.append(FileDefect(
            "parse.budget", f"{where} holds a string of {size} characters; "
            f"its first {limit} are kept (budget field_length){more}", where))
    parsed.summary = {"sheets": [s["sheet"] for s in sheets], "sheet_details": sheets}
    return parsed


HEADER_ROWS = 26  # find_header reads the first 25 rows and the row after each


def _sheet_facts(sheet: Sheet, parsed: Parsed, role: Role) -> int | None:
    grid: list[list[str]] = [[] for _ in range(min(HEADER_ROWS, sheet.box[2] if sheet.box else 0))]
    for (r, c), (held, _, _) in sheet.cells.items():
        if r <= len(grid):
            row = grid[r - 1]
            if len(row) < c:
                row.extend([""] * (c - len(row)))
            row[c - 1] = cell_text(held)
    header_at = find_header(grid)
    headers = grid[header_at] if header_at is not None else []
    title = sheet.title
    for (r1, c1) in sorted(sheet.cells):
        raw, data_type, cached_value = sheet.cells[(r1, c1)]
        if isinstance(raw, str) and not raw.strip():
            continue
        parsed.cells += 1
        r, c = r1 - 1, c1 - 1
        header = headers[c] if headers and c < len(headers) and r != header_at and headers[c] else None
        name, unit = split_unit(header) if header else (None, None)
        coordinate = cell_name(r1, c1)
        loc = f"{title}!{coordinate}"
        extra: dict[str, Any] = {"sheet": title, "cell": coordinate, "header": r == header_at}
        value: Any = raw
        if data_type == "f":
            extra["formula"] = True
            extra["cached_value"] = None if cached_value is None else cell_text(cached_value)
            value = cached_value
            if cached_value is None:
                parsed.defects.append(FileDefect(
                    "xlsx.formula_without_cache", f"{loc} holds formula {raw} with no cached value", loc))
        if value is not None and not isinstance(value, (int, float, str)):
            value = cell_text(value)
        parsed.facts.append(Fact("cell", loc, cell_text(raw), name, unit, value, role, extra))
    return header_at
