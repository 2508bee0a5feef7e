"""Every format lives in one module that registers it: sniffing, dispatch, the extension check and the ingest
stamp all read the registry (ingest/payloads/parsers/registry.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from voe.ingest.builder import parser_libraries
from voe.ingest.payloads.documents import parse_file
from voe.ingest.payloads.parsers import registry
from voe.ingest.payloads.parsers.model import Fact, Parsed, Role
from voe.ingest.payloads.parsers.registry import FormatSpec
from voe.ingest.payloads.parsers.sniff import sniff

PARSED = {"pdf", "xlsx", "step", "release_summary", "xml", "nc", "csv", "text"}
UNPARSED = {"zip", "json", "binary", "checksum"}


def test_every_format_is_registered_once_with_a_parser_where_it_has_facts() -> None:
    specs = registry.formats()
    assert {s.format for s in specs} == PARSED | UNPARSED
    assert {s.format for s in specs if s.parse is not None} == PARSED
    assert [s.order for s in specs] == sorted(s.order for s in specs)
    assert specs[-1].format == registry.FALLBACK and specs[-1].detect is None
    assert all(s.doc for s in specs), "every format says what it is"
    with pytest.raises(ValueError, match="registered twice"):
        registry.register(FormatSpec("pdf", 1, None, None))


@pytest.mark.parametrize(("name", "data", "fmt"), [
    ("a.pdf", b"%PDF-1.7\n", "pdf"),
    ("a.step", b"ISO-10303-21;\nHEADER;", "step"),
    ("a.html", b"<!DOCTYPE html><html><body><h1>Release File Summary: 1.0 to 2.0</h1>", "release_summary"),
    ("a.html", b"<!DOCTYPE html><html><body><h1>Something else</h1>", "text"),
    ("a.xml", b"<?xml version='1.0'?><a/>", "xml"),
    ("a.json", b'{"a": 1}', "json"),
    ("a.bin", b"ab\x00cd", "binary"),
    ("a.zip", b"PK\x03\x04 not really a zip", "binary"),
    ("a.sha256", b"0" * 64 + b"\n", "checksum"),
    ("a.nc", b"%\nO1000\nG21 G90\nG0 X0 Y0\nG1 X1 F100\nM30\n", "nc"),
    ("a.csv", b"x,y\n1,2\n3,4\n", "csv"),
    ("a.csv", b"height\n1.5\n2.5\n", "csv"),  # one column: a table because the extension names one
    ("a.txt", b"height\n1.5\n2.5\n", "text"),
    ("a.txt", b"build started\nlayer 1 done\n", "text"),
])
def test_detection_follows_the_registered_order(tmp_path: Path, name: str, data: bytes, fmt: str) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    assert sniff(path, data) == fmt


def test_the_extension_check_reads_the_registry() -> None:
    assert registry.expected_format(".XLSM") == "xlsx"
    assert registry.expected_format(".stp") == "step"
    assert registry.expected_format(".json") == "json"
    assert registry.expected_format(".unknown") is None


def test_the_ingest_stamp_names_every_library_a_parser_declares() -> None:
    libraries = parser_libraries()
    declared = [lib for s in registry.formats() for lib in s.libraries]
    assert set(declared) <= set(libraries) and len(libraries) == len(set(libraries))
    assert libraries[:4] == ("pdfplumber", "pdfminer.six", "openpyxl", "lxml")  # the stamp's order is stable


def test_a_new_format_is_one_registration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sniffing, the extension check and dispatch pick up a format from its registration alone."""
    registry.formats()  # every parser module registered first, so the patched tables hold them
    monkeypatch.setattr(registry, "_FORMATS", dict(registry._FORMATS))
    monkeypatch.setattr(registry, "_BY_EXTENSION", dict(registry._BY_EXTENSION))

    @registry.parser("toy", order=5, detect=lambda p: p.head.startswith(b"TOY1"), extensions=(".toy",))
    def parse_toy(path: Path) -> Parsed:
        """A toy format: its second line is one fact."""
        parsed = Parsed(format="toy", role=Role.CHARACTERIZATION)
        parsed.facts.append(Fact(kind="line", locator="L2", text=path.read_text().splitlines()[1]))
        return parsed

    held = tmp_path / "a.toy"
    held.write_bytes(b"TOY1\nhello\n")
    parsed = parse_file(held, "a.toy")
    assert parsed is not None and parsed.format == "toy" and [f.text for f in parsed.facts] == ["hello"]
    misnamed = tmp_path / "b.toy"
    misnamed.write_bytes(b"x,y\n1,2\n")
    parsed = parse_file(misnamed, "b.toy")
    assert parsed is not None and parsed.format == "csv"
    assert parsed.defects[0].rule == "format.mismatch" and "extension .toy says toy" in parsed.defects[0].detail
