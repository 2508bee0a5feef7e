"""Small helpers shared by the ingest tests (reading expectations straight from the real records)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from voe.graph import Graph


def nerdm(path: Path) -> dict[str, Any]:
    return json.loads((path / "nerdm.json").read_text(encoding="utf-8-sig"))


def rows(graph: Graph, cypher: str, **params: Any) -> list[dict[str, Any]]:
    """Ad-hoc read for assertions: tests inspect the graph, the product's queries live in cypher/."""
    with graph._driver.session() as session:  # noqa: SLF001
        return [r.data() for r in session.run(cypher, params)]


def defects_by_kind(graph: Graph) -> dict[str, int]:
    return {r["kind"]: r["n"] for r in rows(graph, "MATCH (d:Defect) RETURN d.kind AS kind, count(*) AS n")}


def copy_record(src: Path, dst: Path, files: list[str] | None = None) -> Path:
    """A temporary, writable copy of a shared record folder (the shared files stay untouched)."""
    dst.mkdir(parents=True, exist_ok=True)
    (dst / "nerdm.json").write_bytes((src / "nerdm.json").read_bytes())
    for name in files or []:
        target = dst / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((src / name).read_bytes())
    return dst
