"""Dispatch by content, not by extension: the first bytes decide the format (each parser module registers the
test that recognises its format, ingest/payloads/parsers/registry.py); the extension is only compared with it (a mismatch
is a `format_mismatch` defect, e.g. an .xlsx that is really CSV). Here: the formats with no parser (text
decoding is in ingest/payloads/parsers/encoding.py)."""

from __future__ import annotations

from pathlib import Path

from voe.ingest.payloads.parsers import registry
from voe.ingest.payloads.parsers.registry import FormatSpec, Probe


def sniff(path: Path, head: bytes) -> str:
    """The registered format (ingest/payloads/parsers/registry.py) the first bytes show: pdf, xlsx, zip, step,
    release_summary, xml, json, binary, checksum, nc, csv, or text when nothing more specific matches."""
    return registry.detect(path, head)


def _hex_digest(p: Probe) -> bool:
    stripped = p.text.strip()
    return len(stripped) == 64 and all(c in "0123456789abcdefABCDEF" for c in stripped)


# formats with no facts to extract: recognised, hashed, never parsed
registry.register(FormatSpec("zip", 25, lambda p: p.zip_names is not None, None, doc="a zip archive"))
registry.register(FormatSpec("json", 60, lambda p: p.text_head[:1] in (b"{", b"["), None, (".json",),
                             doc="JSON (a NERDm record is read by the record builder, not as a file)"))
registry.register(FormatSpec("binary", 70, lambda p: p.head.startswith(b"PK\x03\x04") or b"\x00" in p.head, None,
                             doc="bytes that are not text (a damaged zip among them)"))
registry.register(FormatSpec("checksum", 80, _hex_digest, None, doc="a sha256 sidecar"))
