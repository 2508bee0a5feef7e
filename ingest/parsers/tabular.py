"""CSV and spreadsheets: header row, columns with units from headers, one fact per non-empty cell located by
CSV line/column or sheet + A1 cell; formulas kept as formulas with their cached values."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from pathlib import Path
from typing import Any

from ingest.parsers.model import Fact, FileDefect, Parsed, Role
from ingest.parsers.sniff import decode_text, text_encoding

UNIT_RE = re.compile(r"^(?P<name>.*?)\s*[\(\[]\s*(?P<unit>[^()\[\]]{1,24}?)\s*[\)\]]\s*$")


def split_unit(header: str) -> tuple[str, str | None]:
    """`diameter (mm)` -> (`diameter`, `mm`); `Time(s)` -> (`Time`, `s`); no unit -> (header, None)."""
    match = UNIT_RE.match(header.strip())
    if match and match.group("name"):
        return match.group("name").strip(), match.group("unit").strip()
    return header.strip(), None


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


def parse_csv(path: Path, data: bytes, role: Role = Role.CHARACTERIZATION) -> Parsed:
    parsed = Parsed(format="csv", role=role)
    bom = data.startswith(b"\xef\xbb\xbf")
    encoding = text_encoding(data)
    text = decode_text(data)
    crlf = b"\r\n" in data
    reader = csv.reader(io.StringIO(text, newline=""))
    rows: list[list[str]] = []
    lines: list[int] = []
    try:
        start = 1
        for row in reader:
            rows.append(row)
            lines.append(start)
            start = reader.line_num + 1
    except csv.Error as exc:
        parsed.defects.append(FileDefect("csv.syntax", f"CSV syntax error at line {reader.line_num}: {exc}",
                                         f"L{reader.line_num}"))
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
    for i, row in enumerate(rows):
        for j, raw in enumerate(row):
            if not raw.strip():
                continue
            header = headers[j] if headers and j < len(headers) and i != header_at else None
            name, unit = split_unit(header) if header else (None, None)
            value: Any = float(raw) if _is_number(raw) else raw
            parsed.facts.append(Fact("csv_cell", f"L{lines[i]}:C{j + 1}", raw, name, unit, value, role,
                                     {"line": lines[i], "column": j + 1, "header": i == header_at}))
    parsed.cells = sum(len(r) for r in rows)
    parsed.summary = {"rows": len(rows), "columns": width, "header_line": lines[header_at] if header_at is not None else None,
                      "bom": bom, "crlf": crlf, "encoding": encoding,
                      "units": sorted({u for h in headers if (u := split_unit(h)[1])})}
    return parsed


def parse_xlsx(path: Path, role: Role = Role.CHARACTERIZATION) -> Parsed:
    import openpyxl
    from openpyxl.utils.exceptions import InvalidFileException

    parsed = Parsed(format="xlsx", role=role)
    try:
        formulas = openpyxl.load_workbook(path, data_only=False, read_only=False)
        cached = openpyxl.load_workbook(path, data_only=True, read_only=False)
    except (InvalidFileException, KeyError, OSError, ValueError, Exception) as exc:  # noqa: BLE001 - openpyxl raises many kinds
        parsed.defects.append(FileDefect("xlsx.read", f"workbook cannot be opened: {type(exc).__name__}: {exc}"))
        return parsed
    sheets = []
    for ws in formulas.worksheets:
        cws = cached[ws.title]
        grid: list[list[str]] = []
        for row in ws.iter_rows():
            grid.append(["" if c.value is None else cell_text(c.value) for c in row])
        header_at = find_header(grid)
        headers = grid[header_at] if header_at is not None else []
        for row in ws.iter_rows():
            for cell in row:
                if cell.value is None or (isinstance(cell.value, str) and not cell.value.strip()):
                    continue
                parsed.cells += 1
                r, c = cell.row - 1, cell.column - 1
                header = headers[c] if headers and c < len(headers) and r != header_at and headers[c] else None
                name, unit = split_unit(header) if header else (None, None)
                loc = f"{ws.title}!{cell.coordinate}"
                extra: dict[str, Any] = {"sheet": ws.title, "cell": cell.coordinate, "header": r == header_at}
                value: Any = cell.value
                if cell.data_type == "f":
                    cached_value = cws[cell.coordinate].value
                    extra["formula"] = True
                    extra["cached_value"] = None if cached_value is None else cell_text(cached_value)
                    value = cached_value
                    if cached_value is None:
                        parsed.defects.append(FileDefect(
                            "xlsx.formula_without_cache",
                            f"{loc} holds formula {cell.value} with no cached value", loc))
                if value is not None and not isinstance(value, (int, float, str)):
                    value = cell_text(value)
                parsed.facts.append(Fact("cell", loc, cell_text(cell.value), name, unit, value, role, extra))
        sheets.append({"sheet": ws.title, "dimensions": ws.dimensions,
                       "header_row": header_at + 1 if header_at is not None else None})
    parsed.summary = {"sheets": [s["sheet"] for s in sheets], "sheet_details": sheets}
    return parsed
