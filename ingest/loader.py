"""Write one record's subgraph in a single transaction, then drop what a previous ingest left behind."""

from __future__ import annotations

from ingest.nerdm import RecordGraph
from voe.graph import Graph, WriteCounts


def write_record(graph: Graph, rg: RecordGraph) -> WriteCounts:
    """All or nothing: the nodes, the edges, and the pruning of stale nodes commit together.

    Nodes owned by the record carry `record_id` and `ingest_stamp` (a hash of the inputs and the rule
    set). Re-ingesting the same inputs writes the same stamp and changes nothing; changed inputs write a
    new stamp, and the record's nodes still carrying the old one (a defect that no longer holds, a
    component the record dropped) are deleted in the same transaction.
    """
    with graph.writer() as w:
        w.nodes(rg.nodes)
        w.edges(rg.edges)
        w.run("ingest/prune_record", record_id=rg.record_id, stamp=rg.stamp)
        w.run("ingest/prune_orphan_files")
    return w.counts
