"""Cypher queries are files under cypher/, loaded by name (the path without `.cypher`). A line
`// include: NAME` in a query stands for the text of cypher/NAME.cypher: two queries that must compute the same
thing (the verifier's checks: verifiers/verdict) share one text instead of two copies that could drift apart.
Only query text is ever joined this way; values are always parameters."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from voe.resources import data_path

INCLUDE = re.compile(r"^[ \t]*// include: (\S+)[ \t]*$", re.MULTILINE)


def cypher_root() -> Path:
    return data_path("cypher")


@cache
def load(name: str) -> str:
    """`load("write/nodes")` reads cypher/write/nodes.cypher, its include lines replaced by what they name.
    Comment lines are kept: Neo4j ignores them."""
    return _load(name, ())


def _load(name: str, within: tuple[str, ...]) -> str:
    if name in within:
        raise KeyError(f"Cypher query {name!r} includes itself ({' -> '.join((*within, name))})")
    path = cypher_root() / f"{name}.cypher"
    if not path.is_file():
        where = f" (included by {within[-1]!r})" if within else ""
        raise KeyError(f"no Cypher query named {name!r}{where} (expected {path})")
    text = path.read_text(encoding="utf-8")
    return INCLUDE.sub(lambda m: _load(m.group(1), (*within, name)).rstrip("\n"), text)


def statements(name: str) -> list[str]:
    """A file holding several statements (schema DDL) split on `;` at line ends."""
    text = "\n".join(line for line in load(name).splitlines() if not line.lstrip().startswith("//"))
    return [s.strip() for s in text.split(";") if s.strip()]


def all_names() -> list[str]:
    root = cypher_root()
    return sorted(str(p.relative_to(root).with_suffix("")) for p in root.rglob("*.cypher"))
