"""JSON Lines, read and written one way everywhere: a reader that names the file and line of what it cannot
read (an input error, exit 2), and the package's byte-stable writer (sorted keys, UTF-8 as is)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from voe.errors import InputError

# digits to "0", everything else to ".": a run of 19 digits is then one bytes.find, which is C-speed where the
# equivalent regex costs more than parsing (a run's 20 MB steps file: 0.2 s against orjson's 0.05 s)
_DIGIT_MAP = bytes(0x30 if 0x30 <= b <= 0x39 else 0x2E for b in range(256))
_LONG_RUN = b"0" * 19


def read_jsonl(path: Path) -> list[Any]:
    """One value per non-blank line. orjson parses (a run's steps file holds every observation: tens of MB);
    a line it refuses that Python's json reads (NaN, Infinity) is read by json."""
    return list(iter_jsonl(read_bytes(path), path))


def read_bytes(path: Path) -> bytes:
    """A file's bytes, or an input error naming it."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror or exc})", path=str(path)) from exc


# how much of the bytes is split and scanned at a time: the first values come after one chunk's work, not the
# whole file's (scoring sends its first batch while the rest of a run's steps are still unread)
CHUNK_BYTES = 1 << 18


def iter_jsonl(data: bytes, path: Path) -> Iterator[Any]:
    """read_jsonl over bytes already read, a value at a time (a caller can act on the first lines before the
    last are parsed); `path` names the file in errors."""
    n, start, size = 0, 0, len(data)
    while start < size:
        cut = data.find(b"\n", start + CHUNK_BYTES) if start + CHUNK_BYTES < size else -1
        end = size if cut < 0 else cut  # chunks end at a line end: a number never spans two
        chunk = data[start:end]
        any_long = _long_digits(chunk)
        for line in chunk.split(b"\n"):
            n += 1
            if not line.strip():
                continue
            if any_long and _long_digits(line):  # orjson reads an integer beyond 64 bits as a float; json keeps it
                yield _slow_line(line, n, path)
                continue
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                value = _slow_line(line, n, path)
            yield value
        start = end + 1


def _long_digits(data: bytes) -> bool:
    return data.translate(_DIGIT_MAP).find(_LONG_RUN) >= 0


def _slow_line(line: bytes, n: int, path: Path) -> Any:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"line {n} is not UTF-8 ({exc.reason} at byte {exc.start})", path=str(path)) from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"line {n} is not JSON ({exc})", path=str(path)) from exc


def dump_models(models: Sequence[BaseModel]) -> bytes:
    """The package's JSON Lines: each model in JSON mode, keys sorted, non-ASCII kept (the content hash is over
    these bytes)."""
    return b"".join(json.dumps(m.model_dump(mode="json"), sort_keys=True, ensure_ascii=False).encode() + b"\n"
                    for m in models)
