"""Cypher queries are files under cypher/, loaded by name (the path without `.cypher`)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from voe.resources import data_path


def cypher_root() -> Path:
    return data_path("cypher")


@cache
def load(name: str) -> str:
    """`load("write/nodes")` reads cypher/write/nodes.cypher. Comment lines are kept: Neo4j ignores them."""
    path = cypher_root() / f"{name}.cypher"
    if not path.is_file():
        raise KeyError(f"no Cypher query named {name!r} (expected {path})")
    return path.read_text(encoding="utf-8")


def statements(name: str) -> list[str]:
    """A file holding several statements (schema DDL) split on `;` at line ends."""
    text = "\n".join(line for line in load(name).splitlines() if not line.lstrip().startswith("//"))
    return [s.strip() for s in text.split(";") if s.strip()]


def all_names() -> list[str]:
    root = cypher_root()
    return sorted(str(p.relative_to(root).with_suffix("")) for p in root.rglob("*.cypher"))
