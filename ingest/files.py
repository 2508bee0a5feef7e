"""Reading local bytes: streaming sha256, canonical JSON spans and JSON pointers."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

CHUNK = 1 << 20


@dataclass(frozen=True)
class LocalBytes:
    path: Path
    sha256: str
    size: int


def hash_file(path: Path) -> LocalBytes:
    """Stream the file through sha256. Raises OSError when it cannot be read."""
    h = hashlib.sha256()
    size = 0
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
            size += len(chunk)
    return LocalBytes(path, h.hexdigest(), size)


def canonical_json(value: Any) -> bytes:
    """The bytes a SourceLocation's span hash is taken over: sorted keys, no whitespace, UTF-8 (what
    `json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)` gives; orjson writes the
    same bytes about ten times faster, and json takes over for what orjson refuses, e.g. huge ints)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def list_files(root: Path) -> set[str]:
    """Every file and symlink under root, as POSIX paths relative to it (one walk instead of a stat per
    component: records list up to hundreds of thousands of components, mostly not held)."""
    found: set[str] = set()
    base = str(root)
    for dirpath, dirnames, filenames in os.walk(base):
        rel = os.path.relpath(dirpath, base)
        prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        found.update(prefix + name for name in filenames)
        found.update(prefix + name for name in dirnames if os.path.islink(os.path.join(dirpath, name)))
    return found


def span_sha256(value: Any) -> str:
    return hashlib.sha256(canonical_json(value)).hexdigest()


def escape_pointer_token(token: str | int) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def resolve_pointer(doc: Any, pointer: str) -> Any:
    """RFC 6901. Raises KeyError/IndexError when the pointer does not resolve."""
    if pointer == "":
        return doc
    if not pointer.startswith("/"):
        raise KeyError(pointer)
    node = doc
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node
