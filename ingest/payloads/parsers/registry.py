"""Every file format ingest knows, in one table: each parser module registers its format here (sqlglot dialects
style) with the test on the file's first bytes that recognises it, the extensions that name it, the libraries
whose versions go into the ingest stamp, and the function that parses a held file. Formats with no facts to
extract (zip, json, binary, checksum) are registered by `sniff.py`, which also owns the fallback (`text`).

To add a parser: one module under ingest/payloads/parsers/ with a `@parser(...)` function; sniffing, dispatch, the
extension check and the stamp follow from it.

Detection runs in `order` (lower first): the first format whose `detect` accepts the probe wins, so a specific
format (a release summary, an HTML document) is tried before a general one that would also accept it (XML)."""

from __future__ import annotations

import csv
import importlib
import io
import pkgutil
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from voe.ingest.payloads.parsers.encoding import decode_text
from voe.ingest.payloads.parsers.model import Parsed


@dataclass
class Probe:
    """What detection may read: the path (for its extension and a zip's directory) and the first bytes."""

    path: Path
    head: bytes

    @cached_property
    def text_head(self) -> bytes:
        return self.head.lstrip(b"\xef\xbb\xbf").lstrip()

    @cached_property
    def text(self) -> str:
        return decode_text(self.head)

    @cached_property
    def lines(self) -> list[str]:
        """The first 40 non-blank lines of the head."""
        return [ln for ln in self.text.splitlines() if ln.strip()][:40]

    @cached_property
    def zip_names(self) -> set[str] | None:
        """The member names of a zip file, None when the bytes are not a readable zip."""
        if not self.head.startswith(b"PK\x03\x04"):
            return None
        try:
            with zipfile.ZipFile(self.path) as zf:
                return set(zf.namelist())
        except (zipfile.BadZipFile, OSError):
            return None

    @property
    def extension_format(self) -> str | None:
        return expected_format(self.path.suffix)

    def csv_rows(self, count: int = 20) -> list[list[str]] | None:
        try:
            return list(csv.reader(io.StringIO("\n".join(self.lines[:count]))))
        except csv.Error:
            return None


@dataclass(frozen=True)
class FormatSpec:
    format: str
    order: int
    detect: Callable[[Probe], bool] | None  # None: never detected by content (the fallback)
    parse: Callable[[Path], Parsed | None] | None  # None: a format with no facts to extract
    extensions: tuple[str, ...] = ()
    libraries: tuple[str, ...] = ()  # distributions whose versions go into the ingest stamp
    doc: str = ""


_FORMATS: dict[str, FormatSpec] = {}
_BY_EXTENSION: dict[str, str] = {}
FALLBACK = "text"


def register(spec: FormatSpec) -> FormatSpec:
    if spec.format in _FORMATS:
        raise ValueError(f"format {spec.format} registered twice")
    for ext in spec.extensions:
        if ext in _BY_EXTENSION:
            raise ValueError(f"extension {ext} claimed by {_BY_EXTENSION[ext]} and {spec.format}")
    _FORMATS[spec.format] = spec
    _BY_EXTENSION.update(dict.fromkeys(spec.extensions, spec.format))
    return spec


def parser(fmt: str, *, order: int, detect: Callable[[Probe], bool] | None, extensions: tuple[str, ...] = (),
           libraries: tuple[str, ...] = ()) -> Callable[[Callable[[Path], Parsed | None]], Callable[[Path], Parsed | None]]:
    """Register the decorated function as the parser of `fmt`; its docstring is the format's description."""

    def wrap(fn: Callable[[Path], Parsed | None]) -> Callable[[Path], Parsed | None]:
        doc = " ".join((fn.__doc__ or "").split())
        register(FormatSpec(fmt, order, detect, fn, extensions, libraries, doc))
        return fn

    return wrap


_loaded = False


def _load() -> None:
    """Import every module of ingest.payloads.parsers once, so that each registers its format."""
    global _loaded
    if _loaded:
        return
    import voe.ingest.payloads.parsers as package
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name not in ("registry", "model"):
            importlib.import_module(f"{package.__name__}.{info.name}")
    _loaded = True


def formats() -> list[FormatSpec]:
    """Every registered format, in detection order."""
    _load()
    return sorted(_FORMATS.values(), key=lambda s: (s.order, s.format))


def get(fmt: str) -> FormatSpec | None:
    _load()
    return _FORMATS.get(fmt)


def expected_format(suffix: str) -> str | None:
    """The format a file extension (".pdf") names, None when no format claims it."""
    _load()
    return _BY_EXTENSION.get(suffix.lower())


def libraries() -> tuple[str, ...]:
    """The libraries the parsers rest on, in detection order, each once."""
    return tuple(dict.fromkeys(lib for s in formats() for lib in s.libraries))


def detect(path: Path, head: bytes) -> str:
    probe = Probe(path, head)
    for spec in formats():
        if spec.detect is not None and spec.detect(probe):
            return spec.format
    return FALLBACK
