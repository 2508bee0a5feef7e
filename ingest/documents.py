"""Dispatch a held file to its parser by content and turn the result into located facts and defects."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from ingest.parsers.model import FileDefect, Parsed, Role
from ingest.parsers.sniff import EXPECTED_BY_EXTENSION, sniff

HEAD_BYTES = 8192
MAX_PARSE_BYTES = 64 << 20  # larger payloads are hashed but not parsed (their facts would swamp the graph)


def parse_file(path: Path, relpath: str) -> Parsed | None:
    """Parse by what the bytes are. None for formats with no facts to extract (checksums, zips, JSON,
    binaries) or files too large to parse."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError:
        return None
    fmt = sniff(path, head)
    ext = PurePosixPath(relpath).suffix.lower()
    expected = EXPECTED_BY_EXTENSION.get(ext)
    mismatch = None
    if expected and expected != fmt:
        mismatch = FileDefect("format.mismatch",
                              f"{relpath}: extension {ext} says {expected}, the bytes are {fmt}; parsed as {fmt}")
    if size > MAX_PARSE_BYTES:
        return None
    try:
        parsed = _dispatch(path, fmt)
    except Exception as exc:  # noqa: BLE001 - a parser bug or an input it cannot handle must not stop the ingest
        parsed = Parsed(format=fmt, role=Role.METADATA)
        parsed.defects.append(FileDefect("file.parse", f"{relpath}: the {fmt} parser failed ({type(exc).__name__}: {exc})"))
    if parsed is None:
        if mismatch is not None:
            parsed = Parsed(format=fmt, role=Role.METADATA)
        else:
            return None
    if mismatch is not None:
        parsed.defects.insert(0, mismatch)
    return parsed


def _dispatch(path: Path, fmt: str) -> Parsed | None:
    if fmt == "pdf":
        from ingest.parsers.pdf import parse_pdf

        return parse_pdf(path)
    if fmt == "xlsx":
        from ingest.parsers.instruments import parse_workbook

        return parse_workbook(path)
    if fmt == "csv":
        from ingest.parsers.tabular import parse_csv

        return parse_csv(path, path.read_bytes())
    if fmt == "xml":
        from ingest.parsers.xml import parse_xml

        return parse_xml(path, path.read_bytes())
    if fmt == "release_summary":
        from ingest.parsers.release import parse_release_summary

        return parse_release_summary(path.read_bytes())
    if fmt == "nc":
        from ingest.parsers.process import parse_nc

        return parse_nc(path.read_bytes())
    if fmt == "step":
        from ingest.parsers.process import parse_step

        return parse_step(path.read_bytes())
    if fmt == "text":
        from ingest.parsers.process import parse_text

        return parse_text(path.read_bytes())
    return None
