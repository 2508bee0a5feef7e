"""Which declared media types a file extension allows (rule `nerdm.media_type`).

An extension missing from the table has no rule (no defect either way). `application/octet-stream`
says "bytes" and is never counted as wrong. Entries follow IANA registrations plus the aliases
browsers and Windows commonly write (`application/x-zip-compressed`; `application/vnd.ms-excel` for a
`.csv`, the type the Windows registry gives that extension whenever Excel is installed, so uploads from
Windows carry it: an AM Bench curator would not stop a packet over it, and neither does this table).

A reserved type is wrong for every file: RFC 4735 reserves the top-level type `example` and the subtype
`example` of every top-level type for documentation (`video/example`), so no real file has it; a record
that declares one has put a placeholder where the item's type belongs.
"""

from __future__ import annotations

UNSPECIFIC = frozenset({"application/octet-stream", "binary/octet-stream"})

ALLOWED: dict[str, frozenset[str]] = {
    ".csv": frozenset({"text/csv", "text/plain", "application/csv", "text/comma-separated-values", "text/x-csv",
                       "application/x-csv", "application/vnd.ms-excel"}),
    ".tsv": frozenset({"text/tab-separated-values", "text/plain"}),
    ".txt": frozenset({"text/plain"}),
    ".md": frozenset({"text/markdown", "text/plain"}),
    ".sha256": frozenset({"text/plain"}),
    ".md5": frozenset({"text/plain"}),
    ".json": frozenset({"application/json", "text/plain"}),
    ".jsonld": frozenset({"application/ld+json", "application/json"}),
    ".xml": frozenset({"application/xml", "text/xml"}),
    ".tif": frozenset({"image/tiff"}),
    ".tiff": frozenset({"image/tiff"}),
    ".jpg": frozenset({"image/jpeg"}),
    ".jpeg": frozenset({"image/jpeg"}),
    ".png": frozenset({"image/png", "image/x-png"}),  # x-png: the legacy alias older browsers send
    ".gif": frozenset({"image/gif"}),
    ".bmp": frozenset({"image/bmp", "image/x-ms-bmp"}),
    ".pdf": frozenset({"application/pdf"}),
    ".zip": frozenset({"application/zip", "application/x-zip-compressed", "application/x-zip"}),
    ".gz": frozenset({"application/gzip", "application/x-gzip"}),
    ".xlsx": frozenset({"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}),
    ".xls": frozenset({"application/vnd.ms-excel"}),
    ".docx": frozenset({"application/vnd.openxmlformats-officedocument.wordprocessingml.document"}),
    ".doc": frozenset({"application/msword"}),
    ".pptx": frozenset({"application/vnd.openxmlformats-officedocument.presentationml.presentation"}),
    ".ppsx": frozenset({"application/vnd.openxmlformats-officedocument.presentationml.slideshow"}),
    ".ppt": frozenset({"application/vnd.ms-powerpoint"}),
    ".pps": frozenset({"application/vnd.ms-powerpoint"}),
    ".odt": frozenset({"application/vnd.oasis.opendocument.text"}),
    ".ods": frozenset({"application/vnd.oasis.opendocument.spreadsheet"}),
    ".odp": frozenset({"application/vnd.oasis.opendocument.presentation"}),
    # text/x-python-code: NIST's own repository writes it (beside text/x-matlab-code for .m) and it names Python
    # source; application/x-python-code is Python's type for compiled .pyc bytecode, wrong for a .py
    ".py": frozenset({"text/x-python", "text/x-script.python", "text/x-python-code", "text/plain",
                      "application/x-python"}),
    ".html": frozenset({"text/html"}),
    ".htm": frozenset({"text/html"}),
    ".svg": frozenset({"image/svg+xml"}),
    ".rdf": frozenset({"application/rdf+xml", "application/xml", "text/xml"}),
    ".cif": frozenset({"chemical/x-cif", "text/plain"}),
    ".avi": frozenset({"video/x-msvideo", "video/avi", "video/msvideo"}),
    ".mp4": frozenset({"video/mp4"}),
    ".ipynb": frozenset({"application/x-ipynb+json", "application/json"}),
    ".h5": frozenset({"application/x-hdf5", "application/x-hdf"}),
    ".hdf5": frozenset({"application/x-hdf5", "application/x-hdf"}),
    ".stp": frozenset({"model/step", "application/step", "application/stp"}),
    ".step": frozenset({"model/step", "application/step", "application/stp"}),
}


def suffix(filepath: str) -> str:
    """PurePosixPath(filepath).suffix without building the path (this runs for every component of a record)."""
    name = filepath[filepath.rfind("/") + 1 :]
    if not name or name == ".":  # a trailing slash or dot: the last part that names something
        name = next((part for part in reversed(filepath.split("/")) if part and part != "."), "")
    dot = name.rfind(".")
    return name[dot:] if 0 < dot < len(name) - 1 else ""


def reserved(declared: str) -> bool:
    """A type RFC 4735 reserves for examples: top-level `example`, or the subtype `example` of any top level."""
    top, _, sub = declared.partition("/")
    return top == "example" or sub == "example"


def mismatch(filepath: str, media_type: str | None) -> str | None:
    """A human-readable reason when `media_type` is wrong for `filepath`'s extension, else None."""
    if not media_type:
        return None
    declared = media_type.split(";", 1)[0].strip().lower()
    if declared in UNSPECIFIC:
        return None
    if reserved(declared):
        return f"mediaType {media_type!r} is a reserved example type (RFC 4735), a placeholder that names no real format"
    ext = suffix(filepath).lower()
    allowed = ALLOWED.get(ext)
    if allowed is None or declared in allowed:
        return None
    return f"mediaType {media_type!r} does not fit extension {ext!r} (expected one of {sorted(allowed)})"


def unusual(filepath: str, media_type: str | None) -> bool:
    """A declared type the extension allows that still looks unusual to a reader: a vendor or unregistered alias
    (`application/vnd.ms-excel` or `text/plain` for a `.csv`, `application/x-zip-compressed`). Not a defect:
    the hard negatives a "flag anything odd" shortcut trips on (ingest/rules/defects.py HARD_NEGATIVES)."""
    if not media_type or mismatch(filepath, media_type) is not None:
        return False
    declared = media_type.split(";", 1)[0].strip().lower()
    top, _, sub = declared.partition("/")
    ext = suffix(filepath).lower()
    return sub.startswith(("vnd.", "x-")) or (declared == "text/plain" and ext not in (".txt", ".md", ""))
