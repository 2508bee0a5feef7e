"""The faster write paths of issue 13 write the graph the plain upsert writes: a first ingest CREATEs the nodes
the graph does not hold and the edges that touch them, and the result equals, node for node and property for
property, what MERGE of every row gives, for the shared archives, in one transaction and in chunks."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import voe.ingest.write.loader as loader
from tests.ingest.write.test_replace import SMALL, snapshot
from voe import graph as graph_module
from voe.graph import EdgeRow, Graph, GraphWriter, NodeRow
from voe.ingest import ingest_paths
from voe.ontology import Label, Rel

SHARED_SET = ("mds2-4103", "mds2-3842", "mds2-2525", "mds2-2106", "amb2025-template", "ambench-releases", "FACTS.md")


def _paths(archives: Path) -> list[Path]:
    return [archives / name for name in SHARED_SET if (archives / name).exists()]


def _queries_run(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    seen: Counter[str] = Counter()
    original = GraphWriter.run

    def run(self: GraphWriter, name: str, **params: Any) -> list[dict[str, Any]]:
        seen[name] += len(params.get("rows", ())) or 1
        return original(self, name, **params)

    monkeypatch.setattr(GraphWriter, "run", run)
    return seen


def _merge_only(monkeypatch: pytest.MonkeyPatch) -> None:
    original = GraphWriter.nodes

    def nodes(self: GraphWriter, rows: Sequence[NodeRow], create: bool = False) -> set[str]:
        return original(self, rows, create=False)

    monkeypatch.setattr(GraphWriter, "nodes", nodes)


def test_first_ingest_creates_and_equals_the_upsert_graph(graph: Graph, archives: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _paths(archives)
    seen = _queries_run(monkeypatch)
    assert ingest_paths(paths, graph).errors == []
    created = snapshot(graph)
    # the first ingest of each record went through CREATE, not MERGE
    assert seen["write/create_nodes"] > 1000 and seen["write/create_edges"] > 1000
    assert seen["write/nodes"] < seen["write/create_nodes"] / 50
    assert sum(n for name, n in seen.items() if name.startswith("write/edge_")) < seen["write/create_edges"] / 2

    graph.clear()
    with monkeypatch.context() as m:
        _merge_only(m)
        assert ingest_paths(paths, graph).errors == []
    assert snapshot(graph) == created

    # in chunks (each record a multi-transaction write) the graph is the same again
    graph.clear()
    with monkeypatch.context() as m:
        for name, value in SMALL.items():
            m.setattr(loader, name, value)
        assert ingest_paths(paths, graph).errors == []
    assert snapshot(graph) == created
    # and a re-ingest writes nothing new
    report = ingest_paths(paths, graph)
    assert report.records_unchanged == report.records and snapshot(graph) == created


def test_repeated_rows_create_what_merge_makes_of_them(graph: Graph) -> None:
    nodes = [NodeRow("r", (Label.RECORD,), {"title": "a"}), NodeRow("c", (Label.COMPONENT,), {"size": 1}),
             NodeRow("c", (Label.COMPONENT, Label.DATA_FILE), {"size": 2}), NodeRow("r", (Label.RECORD,), {"title": "b"})]
    edges = [EdgeRow(Rel.HAS_COMPONENT, "r", Label.RECORD, "c", Label.COMPONENT, {"n": 1}),
             EdgeRow(Rel.HAS_COMPONENT, "r", Label.RECORD, "c", Label.COMPONENT, {"n": 2}),
             # the same edge declared with another endpoint label: both declarations are checked
             EdgeRow(Rel.HAS_COMPONENT, "r", Label.RECORD, "c", Label.DATA_FILE, {"n": 3})]
    with graph.writer() as w:
        w.nodes(nodes)
        w.edges(edges)
    merged = snapshot(graph)
    graph.clear()
    with graph.writer() as w:
        created = w.nodes(nodes, create=True)
        w.edges(edges, fresh=created)
    assert created == {"r", "c"}
    assert snapshot(graph) == merged
    assert len(merged[1]) == 1 and '"size": 2' in merged[0][0][2]


def test_an_id_another_write_holds_is_merged_not_created(graph: Graph) -> None:
    with graph.writer() as w:
        w.nodes([NodeRow("f", (Label.FILE,), {"sha256": "x"})])
    with graph.writer() as w:
        created = w.nodes([NodeRow("f", (Label.FILE,), {"sha256": "x", "size": 3}),
                           NodeRow("l", (Label.SOURCE_LOCATION,), {})], create=True)
        w.edges([EdgeRow(Rel.IN_FILE, "l", Label.SOURCE_LOCATION, "f", Label.FILE)], fresh=created)
    assert created == {"l"}
    assert graph.counts() == {"nodes": 2, "relationships": 1}


def test_a_create_that_meets_a_concurrent_one_is_run_again_as_a_merge(graph: Graph) -> None:
    """Two writers that both found an id absent: the second CREATE fails on the id constraint, and the loader's
    retry runs the write again with shared nodes MERGEd, so another ingest that keeps creating and pruning the
    same shared id cannot make it fail again."""
    rows = [NodeRow("shared", (Label.FILE,), {"sha256": "y"}), NodeRow("c", (Label.COMPONENT,), {})]
    attempts: list[bool] = []
    created: list[set[str]] = []

    def write(shared_create: bool) -> graph_module.WriteCounts:
        attempts.append(shared_create)
        with graph.writer() as w:
            if len(attempts) == 1:  # another ingest commits the id between this one's probe and its CREATE
                with graph.writer() as other:
                    other.nodes(rows[:1])
                w.run("write/create_nodes", rows=[{"id": "shared"}], labels=[Label.FILE])
            else:
                created.append(loader._write(w, rows, [], shared_create=shared_create))  # noqa: SLF001
        return w.counts

    loader._retrying(write)  # noqa: SLF001 - the loader's retry is what protects a CREATE
    assert attempts == [True, False] and graph.counts()["nodes"] == 2
    assert created == [{"c"}]  # the record's own node is still CREATEd, the shared one MERGEd
