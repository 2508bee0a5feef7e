"""A first bulk load through neo4j-admin's offline importer (ingest/write/bulk.py, `voe db import`, issue 13) gives the
graph `voe ingest` of the same paths gives: node for node (labels, every property and its type), relationship
for relationship; a database that holds anything is refused and left as it was. The bulk load runs on a local
server of its own (instance "bulk-test", on free ports), stopped and started by the import."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ingest.write.test_replace import snapshot
from tests.ports import free_ports
from voe.config import Neo4jSettings
from voe.graph import Graph
from voe.ingest import ingest_paths
from voe.ingest.write.bulk import BulkError, bulk_import
from voe.neo4j_server import LocalNeo4j

PATHS = ("mds2-4103", "mds2-3842", "mds2-2525", "mds2-2106", "amb2025-template", "ambench-releases", "FACTS.md")


@pytest.fixture(scope="module")
def bulk_server() -> Iterator[LocalNeo4j]:
    bolt, http = free_ports()
    server = LocalNeo4j("bulk-test", bolt_port=bolt, http_port=http, heap="512m", pagecache="64m")
    server.up()
    try:
        yield server
    finally:
        server.down()
        shutil.rmtree(server.home, ignore_errors=True)


def _typed(graph: Graph) -> list[tuple[str, str]]:
    """Every property's Cypher type (a long and a double that print alike differ here)."""
    rows = graph._driver.execute_query(  # noqa: SLF001 - the test inspects the graph directly
        "MATCH (n) UNWIND keys(n) AS k RETURN n.id AS id, k, valueType(n[k]) AS t "
        "UNION ALL MATCH (a)-[r]->(b) UNWIND keys(r) AS k RETURN a.id + '>' + type(r) + '>' + b.id AS id, k, "
        "valueType(r[k]) AS t").records
    return sorted((f"{r['id']}.{r['k']}", r["t"]) for r in rows)


def test_a_bulk_load_is_the_graph_voe_ingest_writes(graph: Graph, archives: Path, bulk_server: LocalNeo4j) -> None:
    paths = [archives / p for p in PATHS]
    online = ingest_paths(paths, graph)
    assert online.errors == []
    expected, expected_types = snapshot(graph), _typed(graph)
    with Graph(Neo4jSettings(uri=bulk_server.bolt_uri, password=bulk_server.password())) as target:
        target.clear()
    report = bulk_import(paths, bulk_server)
    assert report.errors == []
    assert (report.records, report.facts, report.defects, report.evidence) == (
        online.records, online.facts, online.defects, online.evidence)
    with Graph(Neo4jSettings(uri=bulk_server.bolt_uri, password=bulk_server.password())) as target:
        got = snapshot(target)
        assert len(got[0]) == len(expected[0]) > 1000 and len(got[1]) == len(expected[1])
        assert got == expected
        assert _typed(target) == expected_types
        assert report.graph["nodes_created"] == len(expected[0])
        # the schema is voe's: the id constraint refuses a second node of an id
        names = {r["name"] for r in target._driver.execute_query("SHOW CONSTRAINTS").records}  # noqa: SLF001
        assert "node_id" in names
        # a re-ingest online of a bulk-loaded record changes nothing
        again = ingest_paths(paths[:2], target)
        assert again.records_unchanged == 2 and snapshot(target) == expected

    # a database that holds anything is refused, and kept
    with pytest.raises(BulkError, match="empty database only"):
        bulk_import(paths[:1], bulk_server)
    with Graph(Neo4jSettings(uri=bulk_server.bolt_uri, password=bulk_server.password())) as target:
        assert snapshot(target) == expected
