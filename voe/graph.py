"""The graph layer: the one module that owns the Neo4j driver.

Writes go through `GraphWriter`, which checks every label and edge against ontology/ and sends
parameterised `UNWIND $rows` batches built from the query files in cypher/write/.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import neo4j
from neo4j import GraphDatabase
from neo4j.exceptions import AuthError, Neo4jError, ServiceUnavailable

from voe import ontology, queries
from voe.config import Neo4jSettings
from voe.errors import GraphUnavailable, OntologyViolation, VoeError
from voe.ontology import Label, Rel

BATCH_ROWS = 10_000


@dataclass
class NodeRow:
    id: str
    labels: tuple[str, ...]  # most specific last is not required; the first is the primary label
    props: dict[str, Any]


@dataclass
class EdgeRow:
    rel: str
    src: str
    src_label: str
    dst: str
    dst_label: str
    props: dict[str, Any] = field(default_factory=dict)


@dataclass
class WriteCounts:
    nodes_created: int = 0
    nodes_deleted: int = 0
    relationships_created: int = 0
    relationships_deleted: int = 0
    properties_set: int = 0

    def merge(self, other: WriteCounts) -> None:
        for key in vars(self):
            setattr(self, key, getattr(self, key) + getattr(other, key))

    def add(self, counters: Any) -> None:
        self.nodes_created += counters.nodes_created
        self.nodes_deleted += counters.nodes_deleted
        self.relationships_created += counters.relationships_created
        self.relationships_deleted += counters.relationships_deleted
        self.properties_set += counters.properties_set


def _chunks(rows: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


class GraphWriter:
    """Writes inside one explicit transaction, so a record lands whole or not at all."""

    def __init__(self, tx: neo4j.Transaction, onto: ontology.Ontology) -> None:
        self._tx = tx
        self._onto = onto
        self.counts = WriteCounts()

    def run(self, name: str, **params: Any) -> list[dict[str, Any]]:
        result = self._tx.run(queries.load(name), params)
        records = [r.data() for r in result]
        self.counts.add(result.consume().counters)
        return records

    def nodes(self, rows: Sequence[NodeRow]) -> None:
        for row in rows:
            for label in row.labels:
                self._onto.check_label(label)
            if Label.NODE in row.labels:
                raise OntologyViolation("the Node label is added by the writer, not by callers")
        payload = [{"id": r.id, "labels": list(r.labels), "props": {**r.props, "id": r.id}} for r in rows]
        for chunk in _chunks(payload, BATCH_ROWS):
            self.run("write/nodes", rows=list(chunk))

    def edges(self, rows: Iterable[EdgeRow]) -> None:
        by_rel: dict[str, list[dict[str, Any]]] = {}
        for e in rows:
            self._onto.check_edge(e.rel, e.src_label, e.dst_label)
            by_rel.setdefault(e.rel, []).append(
                {"src": e.src, "src_label": e.src_label, "dst": e.dst, "dst_label": e.dst_label, "props": e.props}
            )
        for rel, payload in sorted(by_rel.items()):
            for chunk in _chunks(payload, BATCH_ROWS):
                written = self.run(f"write/edge_{Rel(rel).value}", rows=list(chunk))[0]["written"]
                if written != len(chunk):
                    # A MATCH found no endpoint (or one with another label): refuse the whole transaction.
                    raise OntologyViolation(
                        f"{len(chunk) - written} of {len(chunk)} {rel} edges name an endpoint that is not "
                        "in the graph with the declared label"
                    )


class Graph:
    """A connection to Neo4j. Use as a context manager, or call close()."""

    def __init__(self, settings: Neo4jSettings | None = None) -> None:
        self.settings = settings or Neo4jSettings.from_env()
        self.ontology = ontology.load()
        self._driver = GraphDatabase.driver(self.settings.uri, auth=self.settings.auth)

    def __enter__(self) -> Graph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._driver.close()

    def verify(self) -> None:
        try:
            self._driver.verify_connectivity()
        except (ServiceUnavailable, OSError) as exc:
            raise GraphUnavailable(
                f"Neo4j is not reachable at {self.settings.uri} ({exc}). Start the local one with "
                "`voe db up`, or set NEO4J_URI to a running server."
            ) from exc
        except AuthError as exc:
            raise GraphUnavailable(
                f"Neo4j at {self.settings.uri} refused the credentials (NEO4J_USER/NEO4J_PASSWORD): {exc}"
            ) from exc

    def query(self, name: str, **params: Any) -> list[dict[str, Any]]:
        """Run a named read query and return its rows as dicts."""
        try:
            records, _, _ = self._driver.execute_query(
                queries.load(name), parameters_=params, database_=self.settings.database,
                routing_=neo4j.RoutingControl.READ,
            )
        except ServiceUnavailable as exc:
            raise GraphUnavailable(f"Neo4j is not reachable at {self.settings.uri}: {exc}") from exc
        return [r.data() for r in records]

    def execute(self, name: str, **params: Any) -> WriteCounts:
        """Run a named write query in its own transaction."""
        with self.writer() as w:
            w.run(name, **params)
        return w.counts

    def execute_implicit(self, name: str, **params: Any) -> None:
        """Run a named query in an auto-commit transaction (needed by CALL { } IN TRANSACTIONS)."""
        try:
            with self._driver.session(database=self.settings.database) as session:
                session.run(queries.load(name), params).consume()
        except ServiceUnavailable as exc:
            raise GraphUnavailable(f"Neo4j is not reachable at {self.settings.uri}: {exc}") from exc

    @contextmanager
    def writer(self) -> Iterator[GraphWriter]:
        """One explicit write transaction; rolled back if the block raises."""
        try:
            with self._driver.session(database=self.settings.database, bookmark_manager=None) as session:
                tx = session.begin_transaction()
                try:
                    w = GraphWriter(tx, self.ontology)
                    yield w
                    tx.commit()
                except BaseException:
                    if not tx.closed():
                        tx.rollback()
                    raise
        except ServiceUnavailable as exc:
            raise GraphUnavailable(f"Neo4j is not reachable at {self.settings.uri}: {exc}") from exc

    def apply_schema(self) -> None:
        """Uniqueness constraints and indexes; every statement is IF NOT EXISTS, so this is idempotent."""
        for statement in queries.statements("schema"):
            try:
                self._driver.execute_query(statement, database_=self.settings.database)
            except Neo4jError as exc:  # pragma: no cover - a broken schema file is a bug, say which line
                raise VoeError(f"cypher/schema.cypher: {statement!r} failed: {exc}") from exc

    def clear(self) -> None:
        """Delete every node and relationship (tests and `voe db reset`)."""
        self.execute_implicit("admin/clear")

    def counts(self) -> Mapping[str, int]:
        row = self.query("stats/totals")[0]
        return {"nodes": int(row["nodes"]), "relationships": int(row["relationships"])}
