"""What a file `voe ingest` is given looks like, when it is none of the formats voe reads: said in the one line
that names the file (exit 2, the rest of the call lands), so the user knows what they passed (a tarred bag, a
workbook, a PDF) rather than being told it is not UTF-8 or not JSON. Read from the first bytes only (a gzip
stream is opened just far enough to see the tar headers it starts with); nothing is extracted."""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

GZIP_PEEK = 64 << 10  # bytes of a gzip stream decompressed to see what it holds
# leading bytes -> what they are (the formats a lab or a repository hands over most)
MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"BZh", "bzip2-compressed data"),
    (b"\xfd7zXZ\x00", "xz-compressed data"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed data"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"%PDF", "a PDF document"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"\x89HDF\r\n\x1a\n", "an HDF5 file"),
    (b"CDF\x01", "a NetCDF file"),
    (b"CDF\x02", "a NetCDF file"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an OLE2 document (a legacy Office file: .xls, .doc)"),
)
BAG = " holding a BagIt bag; voe reads a bag as a folder or a zip"
OFFICE = (("xl/", "an Excel workbook"), ("word/", "a Word document"), ("ppt/", "a PowerPoint presentation"))


def may_be_json(path: Path, head: bytes) -> bool:
    """The NERDm reader's to read (and to say what is wrong with): a `.json` file, an empty one, or one whose text
    starts as JSON does."""
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    return path.suffix.lower() == ".json" or not text or text[:1] in (b"{", b"[")


def looks_like(path: Path, head: bytes) -> str:
    """What the first bytes show, in words: "a gzip-compressed tar archive holding a BagIt bag; ...", "a PDF
    document", "binary data", "text, not JSON"."""
    if head[:2] == b"\x1f\x8b":
        return _gzip(head)
    if (names := _tar_names(head)) is not None:
        return "a tar archive" + (BAG if _holds_bag(names) else "")
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return _zip(path)
    for magic, what in MAGIC:
        if head.startswith(magic):
            return what
    if b"\x00" in head:
        return "binary data"
    try:
        text = head.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not a character cut at the end of the head
            return "binary data (not UTF-8 text)"
        text = head[:exc.start].decode("utf-8-sig", errors="replace")
    return "XML or HTML text, not JSON" if text.lstrip().startswith("<") else "text, not JSON"


def _gzip(head: bytes) -> str:
    try:
        inner = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, GZIP_PEEK)
    except zlib.error:
        return "gzip-compressed data (damaged)"
    names = _tar_names(inner)
    if names is None:
        return "gzip-compressed data"
    return "a gzip-compressed tar archive" + (BAG if _holds_bag(names) else "")


def _tar_names(data: bytes) -> list[str] | None:
    """The member names of the tar headers within `data`, or None when it does not start as a tar archive."""
    if data[257:262] != b"ustar":
        return None
    names: list[str] = []
    at = 0
    while at + 512 <= len(data) and data[at + 257:at + 262] == b"ustar":
        names.append(data[at:at + 100].split(b"\x00", 1)[0].decode("utf-8", "replace"))
        try:
            size = int(data[at + 124:at + 136].split(b"\x00", 1)[0].strip() or b"0", 8)
        except ValueError:
            break
        at += 512 + -(-size // 512) * 512
    return names


def _holds_bag(names: list[str]) -> bool:
    return any(n.rstrip("/").rsplit("/", 1)[-1] == "bagit.txt" for n in names)


def _zip(path: Path) -> str:
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
    except (zipfile.BadZipFile, OSError):
        return "a damaged zip"
    for prefix, what in OFFICE:
        if "[Content_Types].xml" in names and any(n.startswith(prefix) for n in names):
            return what
    return "a zip with no ro-crate-metadata.json and no bagit.txt: neither an RO-Crate or .eln nor a BagIt bag"
