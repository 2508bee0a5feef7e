"""JSON Lines, read and written one way everywhere: a reader that names the file and line of what it cannot
read (an input error, exit 2), and the package's byte-stable writer (sorted keys, UTF-8 as is)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from voe.errors import InputError


def read_jsonl(path: Path) -> list[Any]:
    """One value per non-blank line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror or exc})", path=str(path)) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"is not UTF-8 ({exc.reason} at byte {exc.start})", path=str(path)) from exc
    rows = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise InputError(f"line {n} is not JSON ({exc})", path=str(path)) from exc
    return rows


def dump_models(models: Sequence[BaseModel]) -> bytes:
    """The package's JSON Lines: each model in JSON mode, keys sorted, non-ASCII kept (the content hash is over
    these bytes)."""
    return b"".join(json.dumps(m.model_dump(mode="json"), sort_keys=True, ensure_ascii=False).encode() + b"\n"
                    for m in models)
