"""JSON Lines, read and written one way everywhere: a reader that names the file and line of what it cannot
read (an input error, exit 2), the package's byte-stable writer (sorted keys, UTF-8 as is), and the append-only
log a run keeps of what it has finished."""

from __future__ import annotations

import json
import os
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


class AppendLog:
    """A file of lines that only grows, each line added by a single write(2) the moment it is known: it outlives
    a kill of the process (then its last line may be cut short: the reader skips what does not parse, and the
    next line is started on a line of its own). One file for many records: creating a file per record costs
    0.2-1 ms of CPU on ext4 on some machines (docs/results/benchmarks.md), an append a few microseconds."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._torn = False  # the file ends in a line cut short

    def lines(self) -> list[str]:
        """The lines written so far (a missing file has none); the last may be cut short."""
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return []
        self._torn = bool(text) and not text.endswith("\n")
        return text.splitlines()

    def append(self, line: str) -> None:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            if not self._torn:
                self._torn = os.fstat(self._fd).st_size > 0 and self._last_byte() != b"\n"
        data = ("\n" if self._torn else "") + line + "\n"
        self._torn = False
        view = memoryview(data.encode())
        while view:
            view = view[os.write(self._fd, view):]

    def _last_byte(self) -> bytes:
        with self.path.open("rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether parsed JSON `value` nests deeper than `limit` levels (walked without recursion, so a value nested
    past Python's recursion limit is measured too)."""
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if level > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return False
