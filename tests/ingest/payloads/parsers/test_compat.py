"""The third-party internals voe patches or reads (parsers/compat/pdfminer.py, parsers/compat/openpyxl.py) still
exist with the shapes voe relies on: a library release that renames one fails here, by name, rather than
silently removing a budget. pyproject bounds both libraries; this is what a bump must pass."""

from __future__ import annotations

import inspect
import io

import pytest

from voe.ingest.payloads.parsers.compat import pdfminer as compat


def _params(fn: object) -> list[str]:
    return list(inspect.signature(fn).parameters)  # type: ignore[arg-type]


def test_the_pdfminer_names_voe_patches_exist_with_their_signatures() -> None:
    from pdfminer import cmapdb, pdfdocument, pdftypes, psparser
    from pdfminer.psparser import END_STRING, PSBaseParser, PSLiteral

    assert _params(PSBaseParser._add_token) == ["self", "obj"]
    assert _params(PSBaseParser._parse_string) == ["self", "s", "i"]
    for attr in ("_parse_string_1", "_parse_main", "_add_token"):
        assert callable(getattr(PSBaseParser, attr)), attr
    compat.install_stream_guards()  # the patched tokenizer reads nested parentheses and escapes as pdfminer does
    parser = PSBaseParser(io.BytesIO(b"(a(b)\\)c) (d)"))
    assert [parser.nexttoken()[1], parser.nexttoken()[1]] == [b"a(b))c", b"d"]
    assert END_STRING.search(b"ab(c", 0) is not None and isinstance(PSLiteral("x"), PSLiteral)
    for module in (psparser, pdfdocument, cmapdb):
        assert callable(module.literal_name), module.__name__  # each holds its own reference, each is patched
    for name in ("zlib", "decompress_corrupted", "lzwdecode", "rldecode", "ccittfaxdecode", "apply_png_predictor",
                 "apply_tiff_predictor"):
        assert hasattr(pdftypes, name), name
    from pdfminer import pdffont

    assert _params(compat._ORIGINAL["get_widths"]) == ["seq"] and _params(compat._ORIGINAL["get_widths2"]) == ["seq"]
    assert _params(compat._ORIGINAL["do_keyword"]) == ["self", "pos", "token"]
    assert {"KEYWORD_ENDBFRANGE", "KEYWORD_ENDCIDRANGE", "_in_cmap"} <= set(dir(cmapdb.CMapParser(cmapdb.CMap(), io.BytesIO())))
    # the widths of a cut range are those pdfminer gives a range of the CIDs that exist, and the rest as they were
    assert pdffont.get_widths([1, [5, 6], 10, 2147483647, 7]) == {1: 5, 2: 6, **dict.fromkeys(range(10, 65536), 7)}
    assert pdffont.get_widths2([3, 4, 900, 1, 2]) == {3: (900, (1, 2)), 4: (900, (1, 2))}


def test_the_pdfplumber_and_pdfminer_layout_classes_voe_subclasses_exist() -> None:
    from pdfminer.pdfinterp import PDFPageInterpreter
    from pdfplumber.page import Page, PDFPageAggregatorWithMarkedContent

    for method in ("render_char", "paint_path", "render_image", "get_result"):
        assert callable(getattr(PDFPageAggregatorWithMarkedContent, method)), method
    assert callable(PDFPageInterpreter.pop) and _params(PDFPageInterpreter.pop) == ["self", "n"]
    assert callable(PDFPageInterpreter.process_page)
    assert "_layout" in inspect.getsource(Page)  # voe hands a page's layout to pdfplumber through this cache


def test_the_patches_are_installed_and_keep_the_originals() -> None:
    from pdfminer import pdftypes, psparser
    from pdfminer.psparser import PSBaseParser

    compat.install_stream_guards()
    assert PSBaseParser._parse_string is compat._linear_parse_string
    assert PSBaseParser._add_token is compat._counted_add_token
    assert psparser.literal_name is compat._bounded_literal_name
    assert pdftypes.zlib is compat._BoundedZlib
    assert compat._ORIGINAL["_parse_string"] is not compat._linear_parse_string


def test_the_openpyxl_internals_the_xlsx_reader_uses_exist() -> None:
    from openpyxl.reader.excel import ExcelReader
    from openpyxl.utils import get_column_letter, range_boundaries
    from openpyxl.utils.cell import coordinate_to_tuple
    from openpyxl.workbook.child import INVALID_TITLE_REGEX, avoid_duplicate_name
    from openpyxl.worksheet._reader import WorkSheetParser
    from openpyxl.xml.constants import SHARED_STRINGS

    from voe.ingest.payloads.parsers.compat import openpyxl as fork

    assert SHARED_STRINGS and INVALID_TITLE_REGEX.pattern and callable(avoid_duplicate_name)
    assert coordinate_to_tuple("B3") == (3, 2) and get_column_letter(3) == "C" and range_boundaries("A1:B2")
    for method in ("read_strings", "read_worksheets", "read"):  # the fork overrides the first two, calls the last
        assert callable(getattr(ExcelReader, method, None)), method
    assert {"fn", "read_only", "keep_vba", "data_only", "keep_links"} <= set(_params(ExcelReader.__init__))
    assert {"src", "shared_strings", "data_only", "epoch", "date_formats", "timedelta_formats"} <= set(
        _params(WorkSheetParser.__init__))
    for attr in ("parse_cell", "parse_formula"):
        assert callable(getattr(WorkSheetParser, attr, None)), attr
    parser = WorkSheetParser(None, [], data_only=False)
    assert {"row_counter", "col_counter"} <= set(vars(parser))  # the fork drives openpyxl's counters itself
    assert fork.cell_name(3, 2) == "B3" and fork.cell_name(1, 20000) == "R1C20000"  # past XFD: no letters


@pytest.mark.parametrize("lib", ["openpyxl", "pdfplumber", "pdfminer.six"])
def test_the_installed_versions_are_inside_pyprojects_bounds(lib: str) -> None:
    import tomllib
    from importlib.metadata import version
    from pathlib import Path

    from packaging.requirements import Requirement

    pyproject = Path(__file__).resolve().parents[4] / "pyproject.toml"
    deps = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    [req] = [Requirement(d) for d in deps if Requirement(d).name == lib]
    assert req.specifier and any(s.operator == "<" for s in req.specifier), f"{lib} has no upper bound"
    assert version(lib) in req.specifier
