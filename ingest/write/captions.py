"""Captions for a graph ingested before ingest wrote them (`voe db captions`): the same function as at ingest
(ingest/rules/captions.py) over each node's stored labels and properties, written where a node has none. Records
are not re-stamped for it, so a package compiled from the graph keeps its manifest."""

from __future__ import annotations

from typing import Any

from voe.graph import Graph, GraphWriter
from voe.ingest.rules.captions import caption

BATCH = 5000


def fill_captions(graph: Graph) -> int:
    """Caption every node that has a caption now but none in the graph; returns how many were written."""
    written, after = 0, ""
    while True:
        found = graph.query("admin/uncaptioned", after=after, limit=BATCH)
        if not found:
            return written
        rows = [{"id": r["id"], "caption": text} for r in found
                if (text := caption(r["labels"], r["props"])) is not None]
        if rows:
            written += _write(graph, rows)
        after = found[-1]["id"]


def _write(graph: Graph, rows: list[dict[str, Any]]) -> int:
    def work(w: GraphWriter) -> int:
        return int(w.run("admin/set_captions", rows=rows)[0]["captioned"])
    return graph.transact(work)
