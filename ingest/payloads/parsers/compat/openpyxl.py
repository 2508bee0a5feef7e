"""openpyxl internals voe reads workbooks through, kept apart because they are the hostile-input boundary and depend
on openpyxl's private names (pyproject bounds its version; tests/ingest/payloads/parsers/test_compat.py checks
every name used here still exists).

What is reused, and why: `ExcelReader` opens the package (content types, workbook, styles, date formats) with
`read_strings` and `read_worksheets` overridden, so shared strings are streamed by expat under the field-length and
inflated-bytes budgets and sheets are only listed; `WorkSheetParser.parse_cell` reads each cell exactly as
openpyxl's loader would (twice for a formula: its text and its cached value), while the sheet XML itself is
streamed by lxml under the cell budget, never the sheet's bounding box. parsers/tabular.py turns the cells into
facts.
"""

from __future__ import annotations

import bisect
from pathlib import Path
from typing import Any

from voe.ingest.payloads.limits import BudgetExceeded, Meter, printable
from voe.ingest.payloads.parsers.model import FileDefect, Parsed


class Counted:
    """A zip member read through the inflated-bytes budget."""

    def __init__(self, fh: Any, meter: Meter, what: str) -> None:
        self.fh, self.meter, self.what = fh, meter, what

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            return b"".join(iter(lambda: self.read(1 << 16), b""))
        data: bytes = self.fh.read(n)
        self.meter.take("inflated_bytes_per_file", len(data), self.what)
        return data


MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"


class Book:
    """An opened workbook: its sheets (title, zip member), shared strings read under the budgets, date styles."""

    def __init__(self, path: Path, meter: Meter) -> None:
        from openpyxl.reader.excel import ExcelReader

        book = self

        class Reader(ExcelReader):  # type: ignore[misc]
            def read_strings(self) -> None:
                from openpyxl.xml.constants import SHARED_STRINGS

                ct = self.package.find(SHARED_STRINGS)
                if ct is not None:
                    book.strings_part = ct.PartName[1:]
                    self.shared_strings = book.read_strings(self.archive, book.strings_part)

            def read_worksheets(self) -> None:
                from openpyxl.workbook.child import INVALID_TITLE_REGEX, avoid_duplicate_name

                names: list[str] = []
                for sheet, rel in self.parser.find_sheets():
                    if rel.target not in self.valid_files:
                        continue
                    title = sheet.name
                    if not title:
                        raise ValueError("Title must have at least one character")
                    if (m := INVALID_TITLE_REGEX.search(title)) is not None:
                        raise ValueError(f"Invalid character {m.group(0)} found in sheet title")
                    title = avoid_duplicate_name(names, title)
                    names.append(title)
                    if "chartsheet" not in rel.Type:
                        book.sheets.append((title, rel.target))

        self.meter = meter
        self.sheets: list[tuple[str, str]] = []
        self.defects: list[FileDefect] = []
        self.truncated: list[tuple[str, int]] = []  # (locator, characters) of each cell cut to field_length
        self.cut_strings: dict[int, int] = {}  # index of each shared string cut to field_length -> its characters
        self.strings_part: str | None = None
        self.strings_complete = True
        reader = Reader(path, read_only=True, keep_vba=False, data_only=False, keep_links=False)
        self.archive = reader.archive
        try:
            self._charge_parts(reader)
            reader.read()
        except BaseException:
            self.archive.close()
            raise
        self.wb = reader.wb
        self.strings = reader.shared_strings

    def _charge_parts(self, reader: Any) -> None:
        """What openpyxl reads whole when it opens a workbook (content types, workbook, styles, theme, properties)
        is charged at its declared size (zipfile never inflates a member past it) before it is read."""
        streamed = {name for name in reader.valid_files if name.startswith("xl/worksheets/") or "sharedStrings" in name}
        for info in self.archive.infolist():
            if info.filename in streamed or not info.filename.endswith((".xml", ".rels")):
                continue
            self.meter.take("inflated_bytes_per_file", info.file_size, f"{info.filename} declares {info.file_size} bytes")

    def __enter__(self) -> Book:
        return self

    def __exit__(self, *exc: object) -> None:
        self.archive.close()

    def read_strings(self, archive: Any, part: str) -> list[str]:
        """openpyxl's read_string_table (the text of each `si`: its `t`, then its runs' `t`, phonetic runs left
        out, `x005F_` removed) with expat, so a string longer than field_length is cut while it is read."""
        import xml.parsers.expat

        limit = self.meter.limit("field_length")
        most = self.meter.limit("cells_per_workbook")
        keep = limit + 6  # a cut string keeps enough to hold `limit` characters once `x005F_` is removed
        si_tag = f"{MAIN}}}si"
        strings: list[str] = []
        frames: list[dict[str, Any]] = []  # open `si`: its plain `t` (the last one wins), its runs, whether cut
        path: list[str] = []
        run: list[str | None] = []  # the `t` of the open run (`r`), the last one wins
        text: list[str] | None = None  # the `t` being read
        state: dict[str, Any] = {"size": 0, "frozen": False, "cut": False, "depth": 0}

        def local(name: str) -> str:
            return name.rsplit("}", 1)[-1]

        def start(name: str, attrs: Any) -> None:
            nonlocal text
            path.append(name)
            if text is not None:
                state["frozen"] = True  # ElementTree's text of `t` ends where a child element begins
                return
            if name == si_tag:
                frames.append({"plain": None, "runs": [], "kept": 0, "cut": False, "size": 0})
                return
            if not frames or len(path) < 2:
                return
            parent = path[-2]
            if local(name) == "r" and parent == si_tag:
                run.append(None)
            elif local(name) == "t" and (parent == si_tag or (local(parent) == "r" and len(path) >= 3
                                                             and path[-3] == si_tag and run)):
                text = []
                state.update(size=0, frozen=False, cut=False, depth=len(path))

        def chars(data: str) -> None:
            if text is None or state["frozen"]:
                return
            room = keep - state["size"]
            if room > 0:
                text.append(data[:room])
            if len(data) > room:
                state["cut"] = True
            state["size"] += len(data)

        def end(name: str) -> None:
            nonlocal text
            depth = len(path)
            path.pop()
            if text is not None:
                if depth == state["depth"]:  # the `t` itself ends (not an element inside it)
                    frame = frames[-1]
                    frame["cut"] = frame["cut"] or state["cut"]
                    frame["size"] += state["size"]
                    if path[-1] == si_tag:
                        frame["plain"] = "".join(text)
                    else:
                        run[-1] = "".join(text)
                    text = None
                return
            if name == si_tag and frames:
                frame = frames.pop()
                value = (frame["plain"] or "") + "".join(frame["runs"])
                value = value.replace("x005F_", "")
                if frame["cut"] or len(value) > limit:
                    self.cut_strings[len(strings)] = max(len(value), frame["size"])
                    value = value[:limit]
                if len(strings) >= most:  # more strings than cells may be read: the rest could never be located
                    raise BudgetExceeded("cells_per_workbook", most, "shared strings, one per cell at most")
                strings.append(value)
            elif local(name) == "r" and path and path[-1] == si_tag and run and frames:
                piece = run.pop()
                frame = frames[-1]
                if piece is not None:
                    if frame["kept"] < keep:
                        frame["runs"].append(piece)
                        frame["kept"] += len(piece)
                    else:
                        frame["cut"] = True

        parser = xml.parsers.expat.ParserCreate(namespace_separator="}")
        parser.buffer_text = True
        parser.buffer_size = 1 << 20
        parser.StartElementHandler = start
        parser.EndElementHandler = end
        parser.CharacterDataHandler = chars
        with archive.open(part) as fh:
            src = Counted(fh, self.meter, "shared strings")
            try:
                while chunk := src.read(1 << 16):
                    parser.Parse(chunk, False)
                parser.Parse(b"", True)
            except BudgetExceeded as exc:
                self.strings_complete = False
                self.defects.append(FileDefect(
                    "parse.budget", f"shared strings: stopped after {len(strings)} strings ({exc}); cells that use "
                    "later strings are not located"))
        # openpyxl keeps the strings cut at field_length as they are; remember which, to name their cells
        return Strings(strings, self.cut_strings)


class Strings(list[str]):
    """The shared strings; `cut_ids` maps each string cut to field_length (by id: cells hold the same object) to the
    number of characters it had."""

    def __init__(self, items: list[str], cut: dict[int, int]) -> None:
        super().__init__(items)
        self.cut_ids = {id(items[i]): size for i, size in cut.items()}


class Sheet:
    def __init__(self, title: str) -> None:
        self.title = title
        self.cells: dict[tuple[int, int], tuple[Any, str, Any]] = {}  # (row, col) -> value, data_type, cached
        self.box: list[int] | None = None  # min_row, min_col, max_row, max_col of every cell element and merge
        self.merges: list[tuple[int, int, int, int]] = []
        self.stopped = False

    def grow(self, r0: int, c0: int, r1: int, c1: int) -> None:
        if self.box is None:
            self.box = [r0, c0, r1, c1]
        else:
            b = self.box
            b[0], b[1], b[2], b[3] = min(b[0], r0), min(b[1], c0), max(b[2], r1), max(b[3], c1)

    @property
    def dimensions(self) -> str:
        from openpyxl.utils import get_column_letter

        if self.box is None:
            return "A1:A1"
        r0, c0, r1, c1 = self.box
        try:
            return f"{get_column_letter(c0)}{r0}:{get_column_letter(c1)}{r1}"
        except ValueError:
            return f"R{r0}C{c0}:R{r1}C{c1}"


def read_sheet(book: Book, title: str, target: str, parsed: Parsed, header_rows: int) -> Sheet:
    """One sheet's cells (value, data type, cached value), merged ranges applied; blank text cells below
    `header_rows` are dropped (a header is looked for only above it)."""
    from lxml import etree
    from openpyxl.utils.cell import coordinate_to_tuple
    from openpyxl.worksheet._reader import WorkSheetParser

    sheet = Sheet(title)
    meter = book.meter
    wb = book.wb
    formulas = WorkSheetParser(None, book.strings, data_only=False, epoch=wb.epoch, date_formats=wb._date_formats,
                               timedelta_formats=wb._timedelta_formats)
    cached = WorkSheetParser(None, book.strings, data_only=True, epoch=wb.epoch, date_formats=wb._date_formats,
                             timedelta_formats=wb._timedelta_formats)
    row_tag, cell_tag, merge_tag = f"{{{MAIN}}}row", f"{{{MAIN}}}c", f"{{{MAIN}}}mergeCell"
    bad: list[str] = []
    last_rc: tuple[int, int] | None = None
    row_ok = True
    cells_left = meter.room("cells_per_workbook")
    try:
        with book.archive.open(target) as fh:
            src = Counted(fh, meter, f"sheet {title}")
            events = etree.iterparse(src, events=("start", "end"), huge_tree=False, resolve_entities=False,
                                     no_network=True, remove_comments=True, remove_pis=True)
            depth = 0
            cell_depth = 0  # the depth of the open `c`: what ends inside it is kept until the cell is read
            inside = 0  # elements inside the open cell
            for event, el in events:
                tag = el.tag
                if event == "start":
                    depth += 1
                    cells_left -= 1
                    if cells_left < 0:
                        meter.take("cells_per_workbook", meter.room("cells_per_workbook") + 1, "sheet elements read")
                    if cell_depth:
                        inside += 1
                        if inside > CELL_ELEMENTS:
                            raise ValueError(f"a cell holds more than {CELL_ELEMENTS} elements")
                    elif tag == cell_tag:
                        cell_depth, inside = depth, 0
                    elif tag == row_tag:
                        row_ok = _start_row(formulas, el.get("r"))
                    continue
                depth -= 1
                if cell_depth:
                    if depth >= cell_depth:
                        continue  # inside a cell: parse_cell reads it when the cell ends
                    cell_depth = 0
                parent = el.getparent()
                if tag == cell_tag and parent is not None and parent.tag == row_tag:
                    coordinate = el.get("r")
                    if coordinate and row_ok and len(el) == 0:  # no value, formula or inline string: its place only
                        try:
                            r, c = coordinate_to_tuple(coordinate)
                        except Exception:  # noqa: BLE001 - _cell names the problem
                            last_rc = _cell(el, formulas, cached, row_ok, sheet, book, meter, bad, header_rows) or last_rc
                        else:
                            if r < 1 or c < 1:
                                bad.append(f"{printable(coordinate, 40)} (not a cell: rows and columns start at 1)")
                                continue
                            formulas.col_counter = c
                            box = sheet.box
                            if box is None or r < box[0] or c < box[1] or r > box[2] or c > box[3]:
                                sheet.grow(r, c, r, c)
                            last_rc = (r, c)
                    else:
                        last_rc = _cell(el, formulas, cached, row_ok, sheet, book, meter, bad, header_rows) or last_rc
                elif tag == merge_tag and parent is not None and parent.tag == f"{{{MAIN}}}mergeCells":
                    _merge(el, sheet, bad)
                el.clear()
                if parent is not None:
                    while el.getprevious() is not None:
                        del parent[0]
    except BudgetExceeded as exc:
        sheet.stopped = True
        last = "its start" if last_rc is None else cell_name(*last_rc)
        parsed.defects.append(FileDefect(
            "parse.budget", f"stopped in sheet {title} after {exc.limit} {exc.what or 'units'} (budget {exc.name}); "
            f"cells after {title}!{last} and later sheets are not located", f"{title}!{last}"))
    except Exception as exc:  # noqa: BLE001 - damaged sheet XML: keep the cells read before it
        last = "its start" if last_rc is None else cell_name(*last_rc)
        parsed.defects.append(FileDefect(
            "xlsx.read", f"sheet {title} cannot be read after {last} ({type(exc).__name__}: {printable(exc)})",
            f"{title}!{last}"))
    meter.used["cells_per_workbook"] = meter.limit("cells_per_workbook") - max(cells_left, 0)
    if bad:
        parsed.defects.append(FileDefect(
            "xlsx.read", f"sheet {title}: {len(bad)} cell(s) cannot be read: {'; '.join(bad[:5])}",
            f"{title}!{bad[0].split(' ', 1)[0]}"))
    _unmerge(sheet, meter, parsed)
    return sheet


CELL_ELEMENTS = 1000  # elements one cell may hold (a value, a formula, an inline string's runs)


def _cell(el: Any, formulas: Any, cached: Any, row_ok: bool, sheet: Sheet, book: Book, meter: Meter,
          bad: list[str], header_rows: int) -> tuple[int, int] | None:
    """Read one `c` as openpyxl does (parse_cell; the cached value from a data_only reading of the same element);
    its (row, column), or None when it cannot be read."""
    try:
        if not row_ok:
            raise ValueError(f"row number {printable(el.getparent().get('r'), 40)} is not valid")
        col_before = formulas.col_counter
        cell = formulas.parse_cell(el)
        cached_value = None
        if cell["data_type"] == "f":
            cached.row_counter, cached.col_counter = formulas.row_counter, col_before
            cached_value = cached.parse_cell(el)["value"]
    except Exception as exc:  # noqa: BLE001 - a bad cell costs that cell
        if not (isinstance(exc, IndexError) and not book.strings_complete):  # else: a string the budget did not read
            bad.append(f"{printable(el.get('r') or '?', 40)} ({type(exc).__name__}: {printable(exc, 80)})")
        return None
    r, c, value = cell["row"], cell["column"], cell["value"]
    if r < 1 or c < 1:  # "A0": openpyxl reads it as row 0, a place no sheet has
        bad.append(f"{printable(el.get('r') or '?', 40)} (not a cell: rows and columns start at 1)")
        return None
    sheet.grow(r, c, r, c)
    if value is None:
        return r, c
    blank = isinstance(value, str) and not value.strip()
    if blank and r > header_rows:
        return r, c
    if not blank and (r, c) not in sheet.cells:
        meter.take("facts_per_file", 1, "cells with a value")
    limit = meter.limit("field_length")
    cut_ids: dict[int, int] = getattr(book.strings, "cut_ids", {})
    for v in (value, cached_value):
        if isinstance(v, str) and (id(v) in cut_ids or len(v) > limit):
            book.truncated.append((f"{sheet.title}!{cell_name(r, c)}", cut_ids.get(id(v), len(v))))
    value = value[:limit] if isinstance(value, str) else value
    cached_value = cached_value[:limit] if isinstance(cached_value, str) else cached_value
    sheet.cells[(r, c)] = (value, cell["data_type"], cached_value)
    return r, c


def _merge(el: Any, sheet: Sheet, bad: list[str]) -> None:
    from openpyxl.utils import range_boundaries

    ref = el.get("ref")
    if not ref:
        return
    try:
        c0, r0, c1, r1 = range_boundaries(ref)
    except (ValueError, TypeError):
        bad.append(f"merge {printable(ref, 40)}")
        return
    if None not in (c0, r0, c1, r1):
        sheet.merges.append((r0, c0, r1, c1))
        sheet.grow(r0, c0, r1, c1)


def _start_row(parser: Any, r: str | None) -> bool:
    """openpyxl's row counter (WorkSheetParser.parse_row): `r` when given, else the next row."""
    if r is not None:
        try:
            parser.row_counter = int(r)
        except ValueError:
            try:
                val = float(r)
            except ValueError:
                return False
            if not val.is_integer():
                return False
            parser.row_counter = int(val)
    else:
        parser.row_counter += 1
    parser.col_counter = 0
    return True


def _unmerge(sheet: Sheet, meter: Meter, parsed: Parsed) -> None:
    """What openpyxl's loader does to a merged range: every cell but its top left one loses its value."""
    if not sheet.merges or not sheet.cells:
        return
    keys = sorted(sheet.cells)
    try:
        for r0, c0, r1, c1 in sheet.merges:
            lo = bisect.bisect_left(keys, (r0, c0))
            hi = bisect.bisect_right(keys, (r1, c1))
            meter.take("cells_per_workbook", max(0, hi - lo), "cells checked against merged ranges")
            for key in keys[lo:hi]:
                r, c = key
                if c0 <= c <= c1 and key != (r0, c0):
                    sheet.cells.pop(key, None)
    except BudgetExceeded as exc:
        parsed.defects.append(FileDefect(
            "parse.budget", f"sheet {sheet.title}: merged ranges are not all applied ({exc}); cells inside the "
            "ones left may be located although Excel shows only their range's first cell"))


def cell_name(r: int, c: int) -> str:
    from openpyxl.utils import get_column_letter

    try:
        return f"{get_column_letter(c)}{r}"
    except ValueError:
        return f"R{r}C{c}"
