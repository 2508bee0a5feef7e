"""Write one record's subgraph atomically, then drop what a previous ingest left behind."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from ingest.nerdm import RecordGraph
from voe.graph import EdgeRow, Graph, GraphWriter, NodeRow, WriteCounts

Late = Callable[[], tuple[list[NodeRow], list[EdgeRow]]]

# Neo4j holds a transaction's state in heap (70% of it by default). Up to this many nodes+edges a record
# is written in one transaction; beyond it, in committed chunks with a cleanup on failure (see below).
SINGLE_TX_ELEMENTS = 150_000
WRITER = f"{socket.gethostname()}:{os.getpid()}"
STALE_AFTER_S = 6 * 3600  # a writer on another host is presumed dead after this long
CHUNK_ELEMENTS = 50_000
NODE_WRITERS = 2


def write_record(graph: Graph, rg: RecordGraph, late: Late | None = None) -> WriteCounts:
    """Write the record so that it lands whole or not at all.

    Nodes owned by the record carry `record_id` and `ingest_stamp` (a hash of the inputs and the rule
    set); so do its edges. Re-ingesting the same inputs writes the same stamp and changes nothing;
    changed inputs write a new stamp and the record's nodes and edges still carrying the old one are
    deleted. `late` yields rows computed while the first rows were being written (schema defects).

    Up to SINGLE_TX_ELEMENTS everything, pruning included, is one transaction. A larger record is
    written in committed chunks, its Record node marked `ingest_state: "writing"` until the final
    transaction (pruning, `ingest_state: "complete"`); if any chunk fails, every node of the record is
    deleted before the error propagates, so no half-written record stays behind.

    The first read of the (first) transaction sets `rg.previous_stamp` / `rg.previous_state`: what the graph
    held under this record id before, so the caller can say whether the ingest replaced or left it unchanged.
    """
    if len(rg.nodes) + len(rg.edges) <= SINGLE_TX_ELEMENTS:
        with graph.writer() as w:
            _previous(w, rg)
            _write(w, rg.nodes, rg.edges)
            if late is not None:
                _write(w, *late())
            _finish(w, rg)
        return w.counts
    return _write_chunked(graph, rg, late)


def _write(w: GraphWriter, nodes: list[NodeRow], edges: list[EdgeRow]) -> None:
    w.nodes(nodes)
    w.edges(edges)


def _previous(w: GraphWriter, rg: RecordGraph) -> None:
    held = w.run("ingest/record_state", record_id=rg.record_id)
    rg.previous_stamp = held[0]["stamp"] if held else None
    rg.previous_state = held[0]["state"] if held else None


def _finish(w: GraphWriter, rg: RecordGraph) -> None:
    w.run("ingest/prune_record", record_id=rg.record_id, stamp=rg.stamp)
    w.run("ingest/drop_stale_labels", record_id=rg.record_id)
    w.run("ingest/prune_orphan_files")
    w.run("ingest/mark_complete", record_id=rg.record_id)


def _write_chunked(graph: Graph, rg: RecordGraph, late: Late | None) -> WriteCounts:
    total = WriteCounts()
    try:
        with graph.writer() as w:
            _previous(w, rg)
            w.run("ingest/mark_writing", record_id=rg.record_id, writer=WRITER)
        # Node chunks touch disjoint ids, so two run at once and Neo4j uses both cores; edge chunks share
        # endpoints (every HAS_COMPONENT locks the Record node) and run one after another.
        def write_nodes(start: int) -> WriteCounts:
            with graph.writer() as w:
                w.nodes(rg.nodes[start : start + CHUNK_ELEMENTS])
            return w.counts

        with ThreadPoolExecutor(max_workers=NODE_WRITERS, thread_name_prefix="voe-write") as pool:
            for counts in pool.map(write_nodes, range(0, len(rg.nodes), CHUNK_ELEMENTS)):
                total.merge(counts)
        for start in range(0, len(rg.edges), CHUNK_ELEMENTS):
            with graph.writer() as w:
                w.edges(rg.edges[start : start + CHUNK_ELEMENTS])
            total.merge(w.counts)
        with graph.writer() as w:
            if late is not None:
                _write(w, *late())
            _finish(w, rg)
        total.merge(w.counts)
    except BaseException:
        graph.execute_implicit("ingest/delete_record", record_id=rg.record_id)
        raise
    return total


def _alive(writer: str | None, age: int | None) -> bool:
    """Whether the ingest that marked a record `writing` may still be running: a process of this host that
    still exists, or any writer elsewhere younger than STALE_AFTER_S. No lease at all (an older voe) is dead."""
    if not writer or ":" not in writer:
        return False
    host, _, pid = writer.rpartition(":")
    if host == socket.gethostname() and pid.isdigit():
        if int(pid) == os.getpid():
            return False  # this very process is not writing it now: a leftover of an earlier call
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return age is not None and age < STALE_AFTER_S


def clean_stale(graph: Graph) -> list[str]:
    """Delete what killed or failed multi-transaction ingests left behind (records still `writing` whose
    writer is gone). Readers never saw them (they read `complete` records only); this frees the ids and
    the space. Returns the record ids removed."""
    removed = []
    for row in graph.query("ingest/stale_writers"):
        if not _alive(row["writer"], row["age"]):
            graph.execute_implicit("ingest/delete_record", record_id=row["record_id"])
            removed.append(str(row["record_id"]))
    return removed
