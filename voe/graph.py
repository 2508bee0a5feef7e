"""The graph layer: the one module that owns the Neo4j driver.

Writes go through `GraphWriter`, which checks every label and edge against ontology/ and sends
parameterised `UNWIND $rows` batches built from the query files in cypher/write/.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import neo4j
from neo4j import GraphDatabase
from neo4j.exceptions import (
    AuthError,
    ConfigurationError,
    DriverError,
    IncompleteCommit,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
)

from voe import ontology, queries
from voe.canonical import non_finite
from voe.config import Neo4jSettings
from voe.errors import GraphSettingsError, GraphUnavailable, OntologyViolation, VoeError
from voe.ontology import Label, Rel

T = TypeVar("T")

BATCH_ROWS = 10_000

# What Neo4j can store as a property (the ingest builders make every record value fit, ingest/rules/defects.py
# rule `graph.value`): integers within 64 bits, strings without lone surrogates, homogeneous lists of
# those, and for an indexed or id property a string of at most MAX_KEY_BYTES UTF-8 bytes (a range index
# key holds about 8 kB).
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
MAX_KEY_BYTES = 4096
KEY_PREFIX_CHARS = 128  # a hashed key keeps this much of the text in front of its digest
MAX_TEXT_CHARS = 65_536  # the full text kept beside a hashed key (`<prop>_full`) is cut here


def _text(value: str) -> tuple[str, str | None]:
    if value.isascii():
        return value, None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        escaped = value.encode("utf-8", "backslashreplace").decode("utf-8")
        return escaped, "holds a lone surrogate (not UTF-8), stored with it written as a \\udcxx escape"
    return value, None


def json_text(value: Any) -> str:
    """Canonical JSON text (sorted keys, no whitespace) of a map or list, lone surrogates as \\u escapes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode(
        "utf-8", "backslashreplace").decode("utf-8")


def storable(value: Any) -> tuple[Any, str | None]:
    """`value` as Neo4j can store it, and why it had to change (None when it is stored as it is): an integer
    beyond 64 bits becomes its decimal text, a lone surrogate a `\\udcxx` escape, a map, a list of mixed or
    nested values (or holding null) their canonical JSON text."""
    if isinstance(value, float) and not math.isfinite(value):
        return non_finite(value), "is not a finite number (NaN or ±Infinity), stored as text"
    if value is None or isinstance(value, (bool, float, bytes)):
        return value, None
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, int):
        if INT64_MIN <= value <= INT64_MAX:
            return value, None
        return str(value), f"is an integer beyond 64 bits ({len(str(abs(value)))} digits), stored as text"
    if isinstance(value, (list, tuple)):
        kinds = {bool if isinstance(v, bool) else int if isinstance(v, int) else type(v) for v in value}
        if len(kinds) <= 1 and kinds <= {str, int, float, bool}:
            items = [storable(v) for v in value]
            if not any(why for _, why in items):
                return list(value), None
            why = next(why for _, why in items if why)
            if kinds == {str}:
                return [v for v, _ in items], f"holds a string that {why}"
            return json_text(value), f"holds a number that {why.split(', stored', 1)[0]}, stored as the list's JSON text"
        return json_text(value), "is a list Neo4j cannot store (mixed, nested or null items), stored as JSON text"
    if isinstance(value, dict):
        return json_text(value), "is a map, stored as its canonical JSON text"
    return str(value), f"is a {type(value).__name__}, stored as text"


def storable_key(value: str) -> tuple[str, str | None]:
    """An id or indexed string as Neo4j can index it: lone surrogates escaped, and beyond MAX_KEY_BYTES the
    first KEY_PREFIX_CHARS characters followed by `…sha256:<hex of the whole text>` (deterministic, so every
    reference to the same key gets the same replacement)."""
    text, why = _text(value)
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    if size <= MAX_KEY_BYTES:
        return text, why
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return (f"{text[:KEY_PREFIX_CHARS]}…sha256:{digest}",
            f"is {size} bytes, too long for an index key (at most {MAX_KEY_BYTES}), stored as a hashed key")


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


def _no_database(exc: Neo4jError) -> bool:
    return (exc.code or "") == "Neo.ClientError.Database.DatabaseNotFound"


def _shutting_down(exc: Neo4jError) -> bool:
    """The server stopping under a transaction answers with a transient or database error, not a lost socket."""
    code = exc.code or ""
    return code.startswith(("Neo.TransientError.General.DatabaseUnavailable", "Neo.TransientError.Transaction.Terminated",
                            "Neo.DatabaseError.General.UnknownError")) or "shut down" in str(exc).lower()


def _one_line(reason: object) -> str:
    """The driver's reasons span lines (what it tried, then why it failed); voe's error is one line."""
    return " ".join(str(reason).split())


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _row(record: neo4j.Record) -> dict[str, Any]:
    """A record as `Record.data()` returns it, without data()'s walk through every item when no value holds a
    node, relationship, path or map (the usual result: scalars, lists of scalars and lists of such lists; the
    verifier's list of 870 verdicts took 6.5 ms through data())."""
    values = record.values()
    for v in values:
        if not _plain(v, 2):
            return record.data()
    return dict(zip(record.keys(), values, strict=True))


def _plain(value: Any, depth: int) -> bool:
    """A scalar, or a list of plain values nested at most `depth` lists deep: what data() would return as is."""
    t = type(value)
    if t in _SCALARS:
        return True
    if t is not list or depth == 0:
        return False
    types = set(map(type, value))
    if types <= _SCALARS:
        return True
    return types <= _SCALARS | {list} and all(_plain(v, depth - 1) for v in value)


class _Quiet(list):  # type: ignore[type-arg]
    """A parameter list the driver packs as any list but shows as its length: the driver formats every RUN's
    parameters for its debug log whether or not anyone logs (repr of every row: 5-10 % of a large ingest's
    client CPU)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<{len(self)} rows>"


_Merged = dict[str, tuple[tuple[str, ...], dict[str, Any]]]
_EdgeGroups = tuple[dict[str, list[dict[str, Any]]], dict[tuple[str, str, str], dict[tuple[str, str], dict[str, Any]]]]


@dataclass
class Planned:
    """One write's rows grouped as its statements send them, made before its transaction (`GraphWriter.plan`:
    in a streamed ingest, by the building thread, so the writing thread only sends while the server waits)."""

    nodes: list[NodeRow]
    edges: list[EdgeRow]
    merged: _Merged
    node_chunks: list[tuple[list[str], list[tuple[tuple[str, ...], list[dict[str, Any]]]]]]
    edge_groups: _EdgeGroups


class Either:
    """Membership in either of two sets, without copying them."""

    def __init__(self, a: Container[str], b: Container[str]) -> None:
        self.a, self.b = a, b

    def __contains__(self, item: object) -> bool:
        return item in self.a or item in self.b


def _check_labels(onto: ontology.Ontology, rows: Iterable[NodeRow]) -> None:
    checked: set[tuple[str, ...]] = set()
    for row in rows:
        if row.labels in checked:
            continue
        for label in row.labels:
            onto.check_label(label)
        if Label.NODE in row.labels:
            raise OntologyViolation("the Node label is added by the writer, not by callers")
        checked.add(row.labels)


def _merged(rows: Iterable[NodeRow]) -> _Merged:
    """id -> (labels, properties with the id): the last row's properties, every row's labels."""
    merged: _Merged = {}
    for r in rows:
        held = merged.get(r.id)
        if held is None:
            merged[r.id] = (r.labels, {**r.props, "id": r.id})
        else:
            merged[r.id] = (held[0] + tuple(label for label in r.labels if label not in held[0]), {**r.props, "id": r.id})
    return merged


def _by_labels(chunk: Iterable[str], merged: _Merged,
               existing: Container[str]) -> list[tuple[tuple[str, ...], list[dict[str, Any]]]]:
    """The rows of write/create_nodes for the ids of `chunk` not in `existing`, one list per label set."""
    by_labels: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for i in chunk:
        if i not in existing:
            labels, props = merged[i]
            by_labels.setdefault(labels, []).append(props)
    return sorted(by_labels.items())


def _merge_row(e: EdgeRow) -> dict[str, Any]:
    """A row of write/edge_<TYPE>: the endpoint labels go with each row, since its edges may mix them."""
    return {"src": e.src, "src_label": e.src_label, "dst": e.dst, "dst_label": e.dst_label, "props": e.props}


def _declared_twice(new: dict[tuple[str, str, str], dict[tuple[str, str], Any]]) -> set[tuple[str, str, str]]:
    """(type, source, target) of the new edges that come with more than one pair of endpoint labels."""
    twice: set[tuple[str, str, str]] = set()
    seen: dict[str, set[tuple[str, str]]] = {}
    for (rel, _, _), keyed in new.items():
        held = seen.setdefault(rel, set())
        if held:
            twice.update((rel, src, dst) for src, dst in held & keyed.keys())
        held.update(keyed)
    return twice


def _group_edges(onto: ontology.Ontology, rows: list[EdgeRow], is_new: Callable[[EdgeRow], bool]) -> _EdgeGroups:
    """Edge rows checked against the ontology and grouped for their statements: (rows of write/edge_<TYPE> by
    type, rows of write/create_edges by (type, source label, target label) and endpoints). `is_new`: whether
    an edge cannot exist yet."""
    by_rel: dict[str, list[dict[str, Any]]] = {}
    new: dict[tuple[str, str, str], dict[tuple[str, str], dict[str, Any]]] = {}
    checked: set[tuple[str, str, str]] = set()  # the MERGE path's (type, source label, target label) pairs
    for e in rows:
        if is_new(e):
            group = (e.rel, e.src_label, e.dst_label)
            keyed = new.get(group)
            if keyed is None:
                onto.check_edge(*group)
                keyed = new[group] = {}
            keyed[(e.src, e.dst)] = {"src": e.src, "dst": e.dst, "props": e.props}
        else:
            if (e.rel, e.src_label, e.dst_label) not in checked:
                onto.check_edge(e.rel, e.src_label, e.dst_label)
                checked.add((e.rel, e.src_label, e.dst_label))
            by_rel.setdefault(e.rel, []).append(_merge_row(e))
    twice = _declared_twice(new)
    if twice:
        # one edge declared with several endpoint labels: the MERGE path checks each declaration and writes
        # the edge once
        for (rel, _, _), keyed in new.items():
            for key in {(src, dst) for r, src, dst in twice if r == rel} & keyed.keys():
                del keyed[key]
        for e in rows:
            if (e.rel, e.src, e.dst) in twice and is_new(e):
                by_rel.setdefault(e.rel, []).append(_merge_row(e))
    return by_rel, new



class GraphWriter:
    """Writes inside one explicit transaction, so a record lands whole or not at all."""

    def __init__(self, tx: neo4j.Transaction | neo4j.ManagedTransaction, onto: ontology.Ontology) -> None:
        self._tx = tx
        self._onto = onto
        self.counts = WriteCounts()
        self.held: set[str] = set()  # ids `nodes(create=True)` found in the graph already (and so MERGEd)

    def run(self, name: str, **params: Any) -> list[dict[str, Any]]:
        return self.start(name, **params)()

    def start(self, name: str, **params: Any) -> Callable[[], list[dict[str, Any]]]:
        """Send a named query and return what waits for its rows: the server runs the query while the caller
        prepares the next one. A query started before an earlier one's rows are read makes the driver read and keep
        those rows first (so the next can be on its way while the caller checks the earlier); an error of the
        earlier query then surfaces from the later start."""
        params = {k: _Quiet(v) if type(v) is list and len(v) > 8 else v for k, v in params.items()}
        result = self._tx.run(queries.load(name), params)

        def rows() -> list[dict[str, Any]]:
            records = [_row(r) for r in result]
            self.counts.add(result.consume().counters)
            return records
        return rows

    def nodes(self, rows: Sequence[NodeRow], create: bool = False) -> set[str]:
        """Upsert nodes by id. With `create`, the ids the graph does not hold yet are CREATEd (cheaper than
        MERGE) and returned; the graph ends the same either way. Rows repeating an id act as MERGE would:
        labels added up, the last row's properties."""
        _check_labels(self._onto, rows)
        if not create:
            payload = [{"id": r.id, "labels": list(r.labels), "props": {**r.props, "id": r.id}} for r in rows]
            for chunk in _chunks(payload, BATCH_ROWS):
                self.run("write/nodes", rows=list(chunk))
            return set()
        merged = _merged(rows)
        created: set[str] = set()
        for chunk in _chunks(list(merged), BATCH_ROWS):
            created.update(self._create_absent(chunk, merged))
        return created

    def _create_absent(self, chunk: Sequence[str], merged: _Merged,
                       grouped: list[tuple[tuple[str, ...], list[dict[str, Any]]]] | None = None) -> list[str]:
        """CREATE the ids of `chunk` the graph lacks, MERGE the others; returns those created. `grouped`: the
        chunk's rows by label set, made ahead for the case that the graph holds none of them."""
        existing = set(self.run("write/existing_ids", rows=list(chunk))[0]["ids"])
        if existing:
            self.held |= existing
            self.run("write/nodes", rows=[{"id": i, "labels": list(merged[i][0]), "props": merged[i][1]}
                                          for i in chunk if i in existing])
            grouped = None
        for labels, group in grouped if grouped is not None else _by_labels(chunk, merged, existing):
            self.run("write/create_nodes", rows=group, labels=list(labels))
        return [i for i in chunk if i not in existing] if existing else list(chunk)

    def edges(self, rows: Iterable[EdgeRow], fresh: Container[str] = frozenset()) -> None:
        """Upsert edges between nodes the graph holds. An edge with an endpoint in `fresh` (nodes this write
        created that nothing else can have linked) cannot exist yet and is CREATEd, one statement per type and
        endpoint labels (given once, not per row: the rows are the client's and the driver's most frequent
        work in a large ingest); repeated rows of such an edge act as MERGE would (the last row's properties)."""
        self._send_edges(*_group_edges(self._onto, rows if isinstance(rows, list) else list(rows),
                                       lambda e: e.src in fresh or e.dst in fresh))

    @staticmethod
    def plan(onto: ontology.Ontology, nodes: Sequence[NodeRow], edges: Sequence[EdgeRow],
             fresh: Container[str] = frozenset()) -> Planned:
        """`nodes(create=True)` then `edges(..., fresh=created | fresh)` grouped ahead of the transaction, as if
        the graph held none of the nodes (the ontology is checked here, before anything is written)."""
        _check_labels(onto, nodes)
        merged = _merged(nodes)
        grouped = [(list(chunk), _by_labels(chunk, merged, frozenset())) for chunk in _chunks(list(merged), BATCH_ROWS)]
        edge_groups = _group_edges(onto, list(edges),
                                   lambda e: e.src in merged or e.dst in merged or e.src in fresh or e.dst in fresh)
        return Planned(list(nodes), list(edges), merged, grouped, edge_groups)

    def write_nodes_planned(self, plan: Planned) -> set[str]:
        """The nodes of a plan, as `nodes(create=True)`; returns those created."""
        created: set[str] = set()
        for chunk, grouped in plan.node_chunks:
            created.update(self._create_absent(chunk, plan.merged, grouped))
        return created

    def write_edges_planned(self, plan: Planned, created: set[str], fresh: Container[str], fresh_as_planned: bool) -> None:
        """The edges of a plan, as `edges(..., fresh=created | fresh)`: as grouped ahead when every node was
        created and `fresh` is what the plan was made with (`fresh_as_planned`), grouped again otherwise."""
        if fresh_as_planned and len(created) == len(plan.merged):
            self._send_edges(*plan.edge_groups)
        else:
            self.edges(plan.edges, fresh=Either(created, fresh))

    def _send_edges(self, by_rel: dict[str, list[dict[str, Any]]],
                    new: dict[tuple[str, str, str], dict[tuple[str, str], dict[str, Any]]]) -> None:
        for rel, payload in sorted(by_rel.items()):
            for chunk in _chunks(payload, BATCH_ROWS):
                self._check_written(rel, len(chunk), self.run(f"write/edge_{Rel(rel).value}", rows=list(chunk)))
        for (rel, src_label, dst_label), keyed in sorted(new.items()):
            for chunk in _chunks(list(keyed.values()), BATCH_ROWS):
                self._check_written(rel, len(chunk), self.run("write/create_edges", rows=list(chunk), type=Rel(rel).value,
                                                              src_label=src_label, dst_label=dst_label))

    @staticmethod
    def _check_written(rel: str, sent: int, result: list[dict[str, Any]]) -> None:
        written = result[0]["written"]
        if written != sent:
            # A MATCH found no endpoint (or one with another label): refuse the whole transaction.
            raise OntologyViolation(
                f"{sent - written} of {sent} {rel} edges name an endpoint that is not "
                "in the graph with the declared label"
            )


class Graph:
    """A connection to Neo4j. Use as a context manager, or call close()."""

    def __init__(self, settings: Neo4jSettings | None = None) -> None:
        self.settings = settings or Neo4jSettings.from_env()
        self.ontology = ontology.load()
        # the server's notices ("label does not exist" on a graph not yet ingested) are not the user's business
        try:
            self._driver = GraphDatabase.driver(self.settings.uri, auth=self.settings.auth,
                                                notifications_min_severity="OFF")
        except (ValueError, ConfigurationError) as exc:  # no scheme, an unknown scheme, a bad port
            raise GraphSettingsError(f"NEO4J_URI={self.settings.uri!r} is not a Neo4j URI (bolt://HOST:PORT or "
                                     f"neo4j://HOST:PORT): {str(exc).split('. ')[0]}") from exc

    def __enter__(self) -> Graph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._driver.close()

    def _up_hint(self) -> str:
        """`voe db up` with the flags of the local instance NEO4J_URI names, when one was set up here."""
        from urllib.parse import urlsplit

        from voe.config import local_instance
        from voe.settings import settings

        found = local_instance(self.settings.uri, settings().cache_dir)
        if found is not None:
            return found.up_command
        parts = urlsplit(self.settings.uri)
        local = parts.hostname in ("127.0.0.1", "localhost") and parts.port not in (None, 7687)
        return f"voe db up --bolt-port {parts.port}" if local else "voe db up"

    def _database_missing(self, exc: Neo4jError) -> GraphSettingsError:
        return GraphSettingsError(f"NEO4J_DATABASE={self.settings.database!r}: the server at {self.settings.uri} has "
                                  f"no such database ({exc.message}); unset it for the default database")

    def verify(self) -> None:
        try:
            self._driver.verify_connectivity()
        except (ServiceUnavailable, OSError) as exc:
            raise GraphUnavailable(
                f"Neo4j is not reachable at {self.settings.uri} ({_one_line(exc)}). Start the local one with "
                f"`{self._up_hint()}`, or set NEO4J_URI to a running server."
            ) from exc
        except AuthError as exc:
            raise GraphUnavailable(
                f"Neo4j at {self.settings.uri} refused the credentials (NEO4J_USER/NEO4J_PASSWORD): {_one_line(exc)}"
            ) from exc

    def answers(self) -> bool:
        """Whether the server takes a connection now: one try, no retries. Best-effort clean-up after a failed
        write asks this first, since each of its statements would otherwise spend the driver's whole retry window
        (30 s) on a server that went away; what it leaves, the next ingest removes (clean_stale)."""
        try:
            self._driver.verify_connectivity()
        except (Neo4jError, DriverError, OSError):
            return False
        return True

    def query(self, name: str, **params: Any) -> list[dict[str, Any]]:
        """Run a named read query and return its rows as dicts."""
        try:
            records, _, _ = self._driver.execute_query(
                queries.load(name), parameters_=params, database_=self.settings.database,
                routing_=neo4j.RoutingControl.READ,
            )
        except (ServiceUnavailable, SessionExpired) as exc:
            raise GraphUnavailable(f"Neo4j is not reachable at {self.settings.uri}: {_one_line(exc)}") from exc
        except Neo4jError as exc:
            if _no_database(exc):
                raise self._database_missing(exc) from exc
            if _shutting_down(exc):
                raise GraphUnavailable(f"Neo4j is not available at {self.settings.uri}: {_one_line(exc.message)}") from exc
            raise
        return [_row(r) for r in records]

    def execute(self, name: str, **params: Any) -> WriteCounts:
        """Run a named write query in its own (managed) transaction."""
        def work(w: GraphWriter) -> WriteCounts:
            w.run(name, **params)
            return w.counts
        return self.transact(work)

    def transact(self, work: Callable[[GraphWriter], T]) -> T:
        """`work` in one managed write transaction: the driver runs it again on a transient error (a deadlock,
        a cluster leader that moved, a lost routing connection), so `work` must be safe to repeat (every voe
        write is an upsert, or clears what it rewrites first). An exception from `work` rolls it back."""
        with self._write_errors(), self._driver.session(database=self.settings.database,
                                                        bookmark_manager=None) as session:
            return session.execute_write(lambda tx: work(GraphWriter(tx, self.ontology)))

    def execute_implicit(self, name: str, **params: Any) -> None:
        """Run a named query in an auto-commit transaction (needed by CALL { } IN TRANSACTIONS)."""
        try:
            with self._driver.session(database=self.settings.database) as session:
                session.run(queries.load(name), params).consume()
        except (ServiceUnavailable, SessionExpired) as exc:
            raise GraphUnavailable(f"Neo4j is not reachable at {self.settings.uri}: {_one_line(exc)}") from exc
        except Neo4jError as exc:
            if _no_database(exc):
                raise self._database_missing(exc) from exc
            if _shutting_down(exc):
                raise GraphUnavailable(f"Neo4j is not available at {self.settings.uri}: {_one_line(exc.message)}") from exc
            raise

    @contextmanager
    def writer(self) -> Iterator[GraphWriter]:
        """One explicit write transaction; rolled back if the block raises."""
        with self._write_errors(), self._driver.session(database=self.settings.database,
                                                        bookmark_manager=None) as session:
            tx = session.begin_transaction()
            try:
                w = GraphWriter(tx, self.ontology)
                yield w
                tx.commit()
            except BaseException:
                if not tx.closed():
                    tx.rollback()
                raise

    @contextmanager
    def _write_errors(self) -> Iterator[None]:
        """A server that went away or stopped during a write is GraphUnavailable (one line, exit 1)."""
        try:
            yield
        except (ServiceUnavailable, SessionExpired, IncompleteCommit) as exc:
            raise GraphUnavailable(f"Neo4j went away during a write at {self.settings.uri}: {_one_line(exc)}") from exc
        except Neo4jError as exc:
            if _no_database(exc):
                raise self._database_missing(exc) from exc
            if _shutting_down(exc):
                raise GraphUnavailable(
                    f"Neo4j stopped during a write at {self.settings.uri}: {_one_line(exc.message)}") from exc
            raise

    def apply_schema(self) -> None:
        """Uniqueness constraints and indexes; every statement is IF NOT EXISTS, so this is idempotent."""
        for statement in queries.statements("schema"):
            try:
                self._driver.execute_query(statement, database_=self.settings.database)
            except Neo4jError as exc:
                if _no_database(exc):
                    raise self._database_missing(exc) from exc
                # a broken schema file is a bug: say which line
                raise VoeError(f"cypher/schema.cypher: {statement!r} failed: {exc}") from exc

    def clear(self) -> None:
        """Delete every node and relationship (tests and `voe db reset`)."""
        self.execute_implicit("admin/clear_relationships")
        self.execute_implicit("admin/clear")

    def counts(self) -> Mapping[str, int]:
        row = self.query("stats/totals")[0]
        return {"nodes": int(row["nodes"]), "relationships": int(row["relationships"])}
