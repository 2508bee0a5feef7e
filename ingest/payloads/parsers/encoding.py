"""Text decoding shared by the format probes (registry) and the parsers: AM Bench files are UTF-8 or Windows-1252."""

from __future__ import annotations


def decode_text(data: bytes) -> str:
    """UTF-8 (BOM or not), else Windows-1252: AM Bench templates write `µm` as the single byte 0xB5."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if exc.start >= len(data) - 3:  # a multi-byte character cut off at the end of a head read
            try:
                return data[: exc.start].decode("utf-8-sig")
            except UnicodeDecodeError:
                pass
        return data.decode("cp1252", errors="replace")


def text_encoding(data: bytes) -> str:
    try:
        data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return "cp1252"
    return "utf-8"
