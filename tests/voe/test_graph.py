"""The graph layer against the real Neo4j: schema, ontology checks before writes, atomic transactions."""

from __future__ import annotations

import pytest

from voe import queries
from voe.errors import OntologyViolation
from voe.graph import EdgeRow, Graph, GraphWriter, NodeRow, _plain, _row
from voe.ontology import Label, Rel


def test_schema_is_idempotent_and_makes_ids_unique(graph: Graph) -> None:
    def constraints() -> set[str]:
        with graph._driver.session() as s:  # noqa: SLF001 - inspecting the server's own catalogue
            return {r["name"] for r in s.run("SHOW CONSTRAINTS YIELD name RETURN name")}

    before = constraints()
    graph.apply_schema()
    assert constraints() == before
    assert "node_id" in before


def test_writes_upsert_by_id(graph: Graph) -> None:
    rows = [NodeRow("r1", (Label.RECORD,), {"title": "t"}), NodeRow("c1", (Label.COMPONENT, Label.DATA_FILE), {})]
    edge = [EdgeRow(Rel.HAS_COMPONENT, "r1", Label.RECORD, "c1", Label.DATA_FILE)]
    for _ in range(2):
        with graph.writer() as w:
            w.nodes(rows)
            w.edges(edge)
    assert graph.counts() == {"nodes": 2, "relationships": 1}
    with pytest.raises(Exception, match="already exists"), graph._driver.session() as s:  # noqa: SLF001
        s.run("CREATE (:Node {id: 'r1'})").consume()
    with graph._driver.session() as s:  # noqa: SLF001
        labels = s.run("MATCH (n {id: 'c1'}) RETURN labels(n) AS l").single()["l"]
    assert set(labels) == {"Node", "Component", "DataFile"}


def test_disallowed_edge_is_refused_before_anything_is_written(graph: Graph) -> None:
    with pytest.raises(OntologyViolation, match="not allowed"), graph.writer() as w:
        w.nodes([NodeRow("a", (Label.COMPONENT, Label.DATA_FILE), {}), NodeRow("b", (Label.COMPONENT,), {})])
        w.edges([EdgeRow(Rel.DESCRIBES, "a", Label.DATA_FILE, "b", Label.COMPONENT)])
    assert graph.counts() == {"nodes": 0, "relationships": 0}


def test_unknown_label_is_refused(graph: Graph) -> None:
    with pytest.raises(OntologyViolation), graph.writer() as w:
        w.nodes([NodeRow("x", ("Sample",), {})])
    assert graph.counts()["nodes"] == 0


def test_edge_to_a_missing_or_mislabelled_endpoint_rolls_back_the_transaction(graph: Graph) -> None:
    with graph.writer() as w:
        w.nodes([NodeRow("r0", (Label.RECORD,), {})])
    with pytest.raises(OntologyViolation, match="endpoint"), graph.writer() as w:
        w.nodes([NodeRow("c9", (Label.COMPONENT,), {})])
        # r0 exists but is a Record, not the ChecksumFile the row claims: the DB-side check refuses it
        w.edges([EdgeRow(Rel.DESCRIBES, "r0", Label.CHECKSUM_FILE, "c9", Label.COMPONENT)])
    assert graph.counts() == {"nodes": 1, "relationships": 0}


def test_query_loader_names_files_and_rejects_unknown_names() -> None:
    assert "UNWIND $rows AS row" in queries.load("write/nodes")
    assert "write/edge_HAS_COMPONENT" in queries.all_names()
    with pytest.raises(KeyError, match="no Cypher query named"):
        queries.load("write/nope")


def test_every_write_query_is_a_parameterised_unwind_batch() -> None:
    for name in queries.all_names():
        if name.startswith("write/"):
            text = queries.load(name)
            assert "UNWIND $rows AS row" in text, name
            assert "'" not in text and '"' not in text, f"{name} embeds a literal value"


def _edges_by_pair(graph: Graph) -> list[tuple[str, str, str, int]]:
    with graph._driver.session() as s:  # noqa: SLF001
        return sorted((r["a"], r["t"], r["b"], r["n"]) for r in s.run(
            "MATCH (a)-[r]->(b) RETURN a.id AS a, type(r) AS t, b.id AS b, count(r) AS n"))


_PLANNED_NODES = [NodeRow("r1", (Label.RECORD,), {"title": "t"}),
                  NodeRow("c1", (Label.COMPONENT, Label.DATA_FILE), {"v": 1}),
                  NodeRow("c2", (Label.COMPONENT, Label.DATA_FILE), {"v": 2})]
_PLANNED_EDGES = [EdgeRow(Rel.HAS_COMPONENT, "r1", Label.RECORD, "c1", Label.DATA_FILE),
                  EdgeRow(Rel.HAS_COMPONENT, "r1", Label.RECORD, "c2", Label.DATA_FILE)]


def test_a_planned_write_into_an_empty_graph_creates_what_the_row_by_row_write_does(graph: Graph) -> None:
    plan = GraphWriter.plan(graph.ontology, _PLANNED_NODES, _PLANNED_EDGES)
    with graph.writer() as w:
        created = w.write_nodes_planned(plan)
        w.write_edges_planned(plan, created, frozenset(), fresh_as_planned=True)
    assert created == {"r1", "c1", "c2"}
    planned = _edges_by_pair(graph)
    graph.clear()
    with graph.writer() as w:
        w.edges(_PLANNED_EDGES, fresh=w.nodes(_PLANNED_NODES, create=True))
    assert planned == _edges_by_pair(graph) == [("r1", "HAS_COMPONENT", "c1", 1), ("r1", "HAS_COMPONENT", "c2", 1)]


def test_a_planned_write_merges_what_the_graph_already_holds(graph: Graph) -> None:
    # the plan assumed every node new; r1, c1 and their edge are there already, so that edge must not come twice
    with graph.writer() as w:
        w.nodes(_PLANNED_NODES[:2])
        w.edges(_PLANNED_EDGES[:1])
    plan = GraphWriter.plan(graph.ontology, _PLANNED_NODES, _PLANNED_EDGES)
    with graph.writer() as w:
        created = w.write_nodes_planned(plan)
        w.write_edges_planned(plan, created, frozenset(), fresh_as_planned=True)
    assert created == {"c2"}
    assert _edges_by_pair(graph) == [("r1", "HAS_COMPONENT", "c1", 1), ("r1", "HAS_COMPONENT", "c2", 1)]
    with graph._driver.session() as s:  # noqa: SLF001
        assert s.run("MATCH (n {id: 'c1'}) RETURN n.v AS v").single()["v"] == 1


def test_a_plan_made_with_fresh_ids_that_no_longer_are_is_grouped_again(graph: Graph) -> None:
    # c1 counted as fresh when the plan was made (its edge planned as a CREATE); by the write it no longer does
    # and the edge already exists: the write must MERGE it
    with graph.writer() as w:
        w.nodes(_PLANNED_NODES)
        w.edges(_PLANNED_EDGES[:1])
    plan = GraphWriter.plan(graph.ontology, [], _PLANNED_EDGES[:1], fresh={"c1"})
    assert plan.edge_groups[1]  # planned as new
    with graph.writer() as w:
        w.write_edges_planned(plan, w.write_nodes_planned(plan), frozenset(), fresh_as_planned=False)
    assert _edges_by_pair(graph) == [("r1", "HAS_COMPONENT", "c1", 1)]


def test_a_plan_checks_the_ontology_before_anything_is_written(graph: Graph) -> None:
    with pytest.raises(OntologyViolation, match="not allowed"):
        GraphWriter.plan(graph.ontology, [NodeRow("a", (Label.COMPONENT, Label.DATA_FILE), {})],
                         [EdgeRow(Rel.DESCRIBES, "a", Label.DATA_FILE, "a", Label.COMPONENT)])
    with pytest.raises(OntologyViolation):
        GraphWriter.plan(graph.ontology, [NodeRow("x", ("Sample",), {})], [])
    assert graph.counts() == {"nodes": 0, "relationships": 0}


def test_rows_read_back_as_record_data_returns_them(graph: Graph) -> None:
    """Graph.query and GraphWriter.run skip Record.data()'s walk when every value is a scalar, a list of scalars
    or a list of such lists; anything else (nodes, maps, deeper lists, temporal values) still goes through
    data()."""
    cases = ["RETURN 1 AS i, 'a' AS s, 1.5 AS f, true AS b, null AS n, ['x', 'y'] AS l, [1, 'a', null] AS mixed",
             "RETURN [[1, 2], [3]] AS nested, [['t/1', 'task', true, false, null], []] AS verdicts",
             "RETURN [[[1]], [2]] AS deep, [[1], [{a: 1}]] AS maps, [[date('2026-12-02')]] AS dates",
             "RETURN {a: 1, b: [2]} AS m",
             "RETURN date('2026-12-02') AS d, [date('2026-12-02')] AS ds",
             "CREATE (n:Scratch {id: 'row-test', k: [1, 2]}) RETURN n, [n] AS ns, n.k AS k"]
    with graph._driver.session() as s:  # noqa: SLF001 - records straight from the driver
        for cypher in cases:
            for record in s.run(cypher):
                assert _row(record) == record.data(), cypher
                assert _plain(record.values(), 3) == ("verdicts" in cypher or "mixed" in cypher), cypher
        s.run("MATCH (n:Scratch {id: 'row-test'}) DELETE n").consume()
