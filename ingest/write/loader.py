"""Write one record's subgraph so that readers see the previous complete version or the new one, never a mix.

A record of up to SINGLE_TX_ELEMENTS nodes and edges is one transaction. A larger one is written in
committed chunks whose size follows the server's transaction memory (halved and retried when Neo4j
refuses a chunk for memory). A chunked write is invisible until its last step:

- a first ingest writes the record under its own ids, `ingest_state: "writing"`, then marks it
  `complete`;
- a replacement (same record id, another stamp) writes the new version beside the old one, its
  record-owned nodes under `staged:` ids, while the old one stays `complete` and readable. The commit point,
  one transaction, marks the old Record `superseded` and the staged one `complete` with `swap: "deleting"`:
  from then on a query that starts from complete Records (docs/guide/review.md's, the Browser's) finds the new version,
  whole. The swap then deletes the old version's nodes (`swap: "renaming"`), renames the staged ones to their
  real ids and drops `swap`. Readers that look nodes up by id (the compiler, the verifiers: `settle`) wait
  for a live swap and finish a dead one.

Rows go through `GraphWriter.nodes(create=True)`: ids the graph does not hold are CREATEd, the rest MERGEd,
and an edge with an endpoint this write created is CREATEd (in a later chunk only when that endpoint's id is
one no other record's ingest can make: `_scoped`). A CREATE that meets an id a concurrent write committed
meanwhile fails on the id constraint and the transaction runs again with every shared (not `_scoped`) node
MERGEd, which waits on the constraint's lock instead of racing it. The graph is the one MERGE of every row
gives (tests/ingest/write/test_write_paths.py).

Every writing or swapping Record carries its writer's lease: a token taken atomically with the Record
(`take_lease`: of two ingests racing for one record id, one writes and the other is told the record is
busy), the host:pid and the start. A failed write deletes what it wrote only while it still holds the
lease. `clean_stale` (and any ingest of the same record id) takes a dead writer's lease over — exactly one
process does — then removes what it left before the commit point or finishes its swap after it.
"""

from __future__ import annotations

import logging
import os
import queue
import socket
import threading
import time
import uuid
from collections.abc import Callable, Container, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from neo4j.exceptions import Neo4jError

from voe import collector
from voe.errors import GraphBusy
from voe.graph import EdgeRow, Either, Graph, GraphWriter, NodeRow, Planned, WriteCounts
from voe.ingest.builder import RecordGraph
from voe.ontology import Label
from voe.settings import settings

if TYPE_CHECKING:
    from voe.ingest.sources.nerdm.stream import NerdmStream

Late = Callable[[], tuple[list[NodeRow], list[EdgeRow]]]
log = logging.getLogger(__name__)

# Neo4j holds a transaction's state in heap (70% of it by default, shared by all open transactions). Up to
# this many nodes+edges a record is written in one transaction; beyond it (or when the server refuses the
# one transaction for memory), in committed chunks.
SINGLE_TX_ELEMENTS = 150_000
CHUNK_ELEMENTS = 50_000  # the first chunk size; halved on MemoryPoolOutOfMemoryError down to MIN_CHUNK
MIN_CHUNK = 500
CONFLICT_CODES = ("Neo.ClientError.Statement.EntityNotFound", "Neo.ClientError.Schema.ConstraintValidationFailed")
SCOPED_LABELS = frozenset({Label.RECORD, Label.COMPONENT, Label.EVIDENCE})
RETRIES = 6  # a write that meets a concurrent one's lock or deletion is run again this many times at most
NODE_WRITERS = 2
WRITER = f"{socket.gethostname()}:{os.getpid()}"
STALE_AFTER_S = 6 * 3600  # a writer on another host is presumed dead after this long
STAGED = "staged:"
# a Record's state (its `swap`, else its ingest_state) while a write or a swap is unfinished; an older voe
# marked a committed swap `swapping` or `renaming` in ingest_state
UNFINISHED = frozenset({"writing", "deleting", "renaming", "swapping"})
SETTLE_TIMEOUT_S = 1800.0
# test hook: `VOE_FAULT_AT=<step>` kills this process (SIGKILL) when the chunked write reaches that step
FAULT_STEPS = ("lease", "nodes", "files", "edges", "late", "commit", "deleted_old", "renamed")


_HELD: set[str] = set()  # the leases this process holds now (its threads' writes, and swaps it finishes)
_HELD_LOCK = threading.Lock()


def _fault(step: str) -> None:
    if settings().voe_fault_at == step:
        os.kill(os.getpid(), 9)


def _out_of_memory(exc: BaseException) -> bool:
    return isinstance(exc, Neo4jError) and "MemoryPoolOutOfMemoryError" in (exc.code or "")


def write_record(graph: Graph, rg: RecordGraph, late: Late | None = None) -> WriteCounts:
    """Write the record so that it lands whole or not at all, and a version it replaces stays readable
    until the new one commits.

    Nodes owned by the record carry `record_id` and `ingest_stamp` (a hash of the inputs and the rule
    set); so do its edges. Re-ingesting the same inputs changes nothing; changed inputs replace the record
    and drop what only the old stamp produced. `late` yields rows computed while the first rows were
    being written (schema defects). Sets `rg.previous_stamp` / `rg.previous_state`: what the graph held
    under this record id before. Raises GraphBusy when a live ingest is writing the same record.
    """
    if len(rg.nodes) + len(rg.edges) <= SINGLE_TX_ELEMENTS:
        cached: list[tuple[list[NodeRow], list[EdgeRow]]] = []

        def late_rows() -> tuple[list[NodeRow], list[EdgeRow]]:
            if not cached and late is not None:
                cached.append(late())
            return cached[0] if cached else ([], [])

        def one_transaction(shared_create: bool) -> WriteCounts:
            with graph.writer() as w:
                # the Record's lock first: a chunked write of the same id that takes its lease meanwhile waits
                # for this one (and is then refused), or this one waits for it and is refused below
                w.run("ingest/lock_record", record_id=rg.record_id)
                _previous(w, rg)
                _refuse_if_busy(w, rg)
                created = _write(w, rg.nodes, rg.edges, shared_create=shared_create)
                _write(w, *late_rows(), created, shared_create=shared_create)
                _finish(w, rg)
            return w.counts

        try:
            return _unhindered(graph, rg, lambda: _retrying(one_transaction))
        except Neo4jError as exc:
            if not _out_of_memory(exc):
                raise
            log.info("%s: one transaction is too large for the server's memory; writing it in chunks", rg.record_id)
        return _write_chunked(graph, rg, late_rows)
    return _write_chunked(graph, rg, late)


class _DeadWriter(Exception):
    """A writer of this record died between `recover` and the write's own check: finish what it left first."""


def _unhindered(graph: Graph, rg: RecordGraph, write: Callable[[], T]) -> T:
    """`write` once what dead writers left of this record is removed or finished (`recover`); again when
    another writer of it died meanwhile (its check raised _DeadWriter)."""
    for _ in range(RETRIES):
        recover(graph, rg.record_id)
        try:
            return write()
        except _DeadWriter:
            continue
    raise GraphBusy(f"{rg.record_id}: writers of it keep dying while this ingest waits; not written, run again")


def _check(graph: Graph, rg: RecordGraph) -> None:
    """What the graph holds of this record (`_previous`), or GraphBusy when another ingest is writing it."""
    with graph.writer() as w:
        _previous(w, rg)
        _refuse_if_busy(w, rg)


def _retrying(commit: Callable[[bool], WriteCounts]) -> WriteCounts:
    """Run a write transaction again when a concurrent one got in its way: a deadlock or another transient
    conflict, or a node it had matched that another ingest's orphan pruning deleted before it wrote
    (EntityNotFound). The writes are idempotent upserts, so running one again is safe. `commit(shared_create)`:
    whether shared nodes the graph lacks may be CREATEd; once a CREATE met a node a concurrent write committed
    (ConstraintValidationFailed), they are MERGEd, since another ingest that keeps creating and pruning the
    same shared ids (files of the same bytes) could win every race of the check-then-CREATE."""
    shared_create = True
    for attempt in range(RETRIES):
        try:
            return commit(shared_create)
        except Neo4jError as exc:
            code = exc.code or ""
            if code == "Neo.ClientError.Schema.ConstraintValidationFailed":
                shared_create = False
            conflict = code in CONFLICT_CODES or (
                code.startswith("Neo.TransientError.") and not _out_of_memory(exc))
            if not conflict or attempt == RETRIES - 1:
                raise
            log.info("write conflict with another transaction (%s); trying again", code)
            time.sleep(0.05 * 2 ** attempt)
    raise AssertionError("unreachable")


def _write(w: GraphWriter, nodes: Sequence[NodeRow], edges: Sequence[EdgeRow],
           fresh: Container[str] = frozenset(), shared_create: bool = True, plan: Plan | None = None) -> set[str]:
    """Nodes, then edges, in one transaction; returns the nodes it created. An edge to a node created in this
    transaction (or in `fresh`: nodes no one else can have linked since) is created, not merged. Without
    `shared_create`, nodes another record's ingest may write too are MERGEd (and so not among those returned).
    `plan`: the same rows grouped ahead by `_plan` (used when shared nodes may be created)."""
    if plan is not None and shared_create:
        created = w.write_nodes_planned(plan.rows)
        if isinstance(fresh, _OwnPrefix):
            fresh.saw(nodes, w.held)
        w.write_edges_planned(plan.rows, created, fresh, fresh_as_planned=_clean(fresh) == plan.clean)
        return created
    if shared_create:
        created = w.nodes(nodes, create=True)
    else:
        w.nodes([n for n in nodes if not _scoped(n)])
        created = w.nodes([n for n in nodes if _scoped(n)], create=True)
    if isinstance(fresh, _OwnPrefix):
        fresh.saw(nodes, w.held)
    w.edges(edges, fresh=Either(created, fresh))
    return created


@dataclass
class Plan:
    """Rows grouped for their statements before the transaction (GraphWriter.plan), and whether the write's own
    ids counted as fresh then (`_OwnPrefix.clean`: once a leftover was met they no longer do, and the plan's
    edges are grouped again)."""

    rows: Planned
    clean: bool | None


def _clean(fresh: Container[str]) -> bool | None:
    return fresh.clean if isinstance(fresh, _OwnPrefix) else None


def _plan(graph: Graph, nodes: Sequence[NodeRow], edges: Sequence[EdgeRow], fresh: Container[str]) -> Plan:
    clean = _clean(fresh)  # read first: the writing thread may turn it False meanwhile, never back
    return Plan(GraphWriter.plan(graph.ontology, nodes, edges, fresh), clean)


class _OwnPrefix:
    """The `fresh` of a streamed write, in constant memory (a set of a million ids would not be): an id of this
    write's own scoped nodes (its Record, components and evidence, or any node of a staged version) counts as
    created by this write as long as every such node the write has met was one it created. Once one was there
    before (a leftover the write merged into), edges to nodes of earlier transactions are MERGEd."""

    def __init__(self, record_id: str, staged: bool) -> None:
        body = record_id.removeprefix("record:")
        self.exact = STAGED + record_id if staged else record_id
        self.prefixes = (staged_prefix(record_id),) if staged else (f"component:{body}/", f"ev:{body}/")
        self.clean = True

    def saw(self, nodes: Sequence[NodeRow], held: set[str]) -> None:
        """`held`: the ids the transaction found in the graph already (GraphWriter.held); a scoped node among
        them is one this write did not create."""
        if self.clean and held and any(_scoped(n) for n in nodes if n.id in held):
            self.clean = False

    def __contains__(self, item: object) -> bool:
        return self.clean and isinstance(item, str) and (item == self.exact or item.startswith(self.prefixes))


def _scoped(node: NodeRow) -> bool:
    """Whether only this record's ingest can write a node of this id: its Record, components and evidence
    (their ids hold the record id), and a staged version's own nodes. Content-addressed nodes (files, source
    locations, defects on them, the archive) may be linked by another record's ingest at any time."""
    return node.id.startswith(STAGED) or not SCOPED_LABELS.isdisjoint(node.labels)


def _previous(w: GraphWriter, rg: RecordGraph) -> None:
    held = w.run("ingest/record_state", record_id=rg.record_id)
    rg.previous_stamp = held[0]["stamp"] if held else None
    rg.previous_state = held[0]["state"] if held else None


def _refuse_if_busy(w: GraphWriter, rg: RecordGraph) -> None:
    """A live writer (or a swap) of this record id elsewhere: leave it to finish (GraphBusy). A dead one's
    unfinished write: _DeadWriter (`_unhindered` finishes it and checks again)."""
    for row in w.run("ingest/writers_of", record_id=rg.record_id, staged=STAGED + rg.record_id):
        if row["state"] not in UNFINISHED:
            continue
        if not _alive(row["writer"], row["age"], row["lease"]):
            raise _DeadWriter(row["record_id"])
        raise GraphBusy(f"{rg.record_id} is being written by another ingest ({row['writer']}, since "
                            f"{row['since']}); not written, run again when it has finished")


def _finish(w: GraphWriter, rg: RecordGraph) -> None:
    if rg.previous_state is not None:  # a first ingest has nothing of an earlier one to prune
        w.run("ingest/prune_record", record_id=rg.record_id, stamp=rg.stamp)
        w.run("ingest/drop_stale_labels", record_id=rg.record_id)
    w.run("ingest/prune_orphan_files")
    w.run("ingest/mark_complete", record_id=rg.record_id)


class Chunker:
    """Writes rows in committed transactions of `size` elements; a chunk the server refuses for memory is
    retried in halves (the size then stays halved for the rest of the record)."""

    def __init__(self, graph: Graph, size: int = CHUNK_ELEMENTS, fresh: _OwnPrefix | None = None) -> None:
        self.graph, self.size, self.counts = graph, size, WriteCounts()
        # nodes earlier chunks created whose ids only this write can make: an edge to one is new
        self.fresh: set[str] | _OwnPrefix = set() if fresh is None else fresh
        self._lock = threading.Lock()

    def write(self, nodes: Sequence[NodeRow], edges: Sequence[EdgeRow] = (), parallel: bool = False) -> None:
        if parallel and len(nodes) > self.size and not edges:
            # node chunks touch disjoint ids, so two run at once and Neo4j uses both cores; they share the
            # server's transaction memory, so each gets half a chunk
            half = max(MIN_CHUNK, self.size // NODE_WRITERS)
            parts = [nodes[i : i + half] for i in range(0, len(nodes), half)]
            with ThreadPoolExecutor(max_workers=NODE_WRITERS, thread_name_prefix="voe-write") as pool:
                for counts in pool.map(lambda p: self._commit(p, ()), parts):
                    self.counts.merge(counts)
            return
        i = j = 0
        while i < len(nodes) or j < len(edges):
            n = min(self.size, len(nodes) - i)
            e = min(self.size - n, len(edges) - j)
            self.counts.merge(self._commit(nodes[i : i + n], edges[j : j + e]))
            i, j = i + n, j + e

    def _commit(self, nodes: Sequence[NodeRow], edges: Sequence[EdgeRow], plan: Plan | None = None) -> WriteCounts:
        created: set[str] = set()

        def commit(shared_create: bool) -> WriteCounts:
            with self.graph.writer() as w:
                created.clear()
                created.update(_write(w, nodes, edges, self.fresh, shared_create, plan))
            return w.counts

        try:
            counts = _retrying(commit)
            if isinstance(self.fresh, set):
                with self._lock:
                    self.fresh.update(n.id for n in nodes if n.id in created and _scoped(n))
            return counts
        except Neo4jError as exc:
            total = len(nodes) + len(edges)
            if not _out_of_memory(exc) or total <= MIN_CHUNK:
                raise
            self.size = max(MIN_CHUNK, min(self.size, total) // 2)
            log.info("the server refused %d elements in one transaction for memory; chunks of %d now", total,
                     self.size)
            counts = WriteCounts()
            edges = _once(list(edges))  # now over several transactions: a CREATEd edge must come once
            for k in range(0, len(nodes), self.size):
                counts.merge(self._commit(nodes[k : k + self.size], ()))
            for k in range(0, len(edges), self.size):
                counts.merge(self._commit((), edges[k : k + self.size]))
            return counts


@dataclass
class _Rows:
    record: NodeRow
    nodes: list[NodeRow]
    files: list[NodeRow]
    file_links: list[EdgeRow]
    edges: list[EdgeRow]


def staged_prefix(record_id: str) -> str:
    """The prefix of a staged version's node ids (its Record's aside). It holds the record id: two records
    replaced at once that hold the same bytes stage the same content-addressed ids (source locations) apart,
    so one's swap never renames or merges a node the other's staged version still needs."""
    return f"{STAGED}{record_id}|"


def _staged_ids(record_id: str) -> Callable[[str], str]:
    prefix = staged_prefix(record_id)
    return lambda node_id: STAGED + node_id if node_id == record_id else prefix + node_id


def _stage(rg: RecordGraph, nodes: Sequence[NodeRow], edges: Sequence[EdgeRow], staged: bool,
           owned: set[str] | None = None) -> tuple[list[NodeRow], list[EdgeRow]]:
    """The rows as a staged version writes them: the record's own nodes (those carrying its record id) under
    `staged:` ids and record id; shared nodes (files, the archive) keep theirs. `owned` names the record's own
    node ids when `nodes` are not all of them (late rows)."""
    if not staged:
        return list(nodes), list(edges)
    rid = STAGED + rg.record_id
    own = {n.id for n in nodes if n.props.get("record_id") == rg.record_id} | (owned or set())
    sid = _staged_ids(rg.record_id)
    out_nodes = [NodeRow(sid(n.id), n.labels, {**n.props, "record_id": rid}) if n.id in own else n for n in nodes]
    out_edges = [EdgeRow(e.rel, sid(e.src) if e.src in own else e.src, e.src_label,
                         sid(e.dst) if e.dst in own else e.dst, e.dst_label, e.props)
                 if e.src in own or e.dst in own else e for e in edges]
    return out_nodes, out_edges


def _order(target: str, nodes: list[NodeRow], edges: list[EdgeRow]) -> _Rows:
    """The Record first (it carries the lease), then the other nodes, then each File together with one edge
    that points to it (so no committed File is ever unlinked, and another ingest's orphan pruning cannot take
    it), then the remaining edges."""
    record = next(n for n in nodes if n.id == target)
    others, files, links, rest = _split_files([n for n in nodes if n.id != target], edges)
    return _Rows(record, others, files, links, rest)


def _split_files(nodes: list[NodeRow], edges: list[EdgeRow]) -> tuple[list[NodeRow], list[NodeRow], list[EdgeRow],
                                                                     list[EdgeRow]]:
    """The nodes but files, the files, one edge to each file, the other edges."""
    files = [n for n in nodes if Label.FILE in n.labels]
    file_ids = {n.id for n in files}
    others = [n for n in nodes if n.id not in file_ids]
    first_link: dict[str, EdgeRow] = {}
    rest = []
    for e in edges:
        if e.dst in file_ids and e.dst not in first_link:
            first_link[e.dst] = e
        else:
            rest.append(e)
    return others, files, [first_link[f.id] for f in files if f.id in first_link], rest


def _write_files_linked(chunks: Chunker, nodes: list[NodeRow], edges: list[EdgeRow]) -> None:
    """Rows too many for one transaction: the nodes but files, then each file with one edge to it, then the other
    edges."""
    others, files, links, rest = _split_files(nodes, edges)
    chunks.write(others, parallel=True)
    by_file = {e.dst: e for e in links}
    step = max(1, chunks.size // 2)
    for k in range(0, len(files), step):
        part = files[k : k + step]
        chunks.write(part, [by_file[f.id] for f in part if f.id in by_file])
    chunks.write((), rest)


def _take(w: GraphWriter, rg: RecordGraph, target: str, lease: str) -> None:
    """The lease of `target`, or GraphBusy: another ingest created that Record first (between this one's check
    and its write)."""
    if not w.run("ingest/take_lease", record_id=target, lease=lease)[0]["ours"]:
        raise GraphBusy(f"{rg.record_id} is being written by another ingest (it began meanwhile); not written, run "
                        "again when it has finished")


@contextmanager
def _leased(graph: Graph, target: str) -> Iterator[str]:
    """A new lease for a write of `target` in several transactions, held by this process while the block runs;
    if the block fails, the Record lets go of its writer (`_let_go`)."""
    lease = _new_lease()
    try:
        yield lease
    except BaseException:
        _let_go(graph, target, lease)
        raise
    finally:
        _release(lease)


def _let_go(graph: Graph, target: str, lease: str) -> None:
    """After a failure this process survives (one past the commit point, or a delete that failed): the Record it
    still holds names no writer, so any other ingest or reader sees a dead writer and finishes it now, not when
    this process exits."""
    if not graph.answers():
        return  # the server is the failure; the lease then ages out with the pid
    try:
        graph.execute("ingest/let_go", record_id=target, lease=lease)
    except Exception:  # noqa: BLE001 - best effort: the server may be the failure; the lease then ages out with the pid
        log.debug("could not let go of %s", target, exc_info=True)


def _new_lease() -> str:
    lease = uuid.uuid4().hex
    with _HELD_LOCK:
        _HELD.add(lease)
    return lease


def _release(lease: str) -> None:
    with _HELD_LOCK:
        _HELD.discard(lease)


def _write_chunked(graph: Graph, rg: RecordGraph, late: Late | None) -> WriteCounts:
    _unhindered(graph, rg, lambda: _check(graph, rg))
    if rg.previous_state == "complete" and rg.previous_stamp == rg.stamp:
        return WriteCounts()  # the same inputs under the same rules: the graph already holds exactly this
    staged = rg.previous_state == "complete"
    target = STAGED + rg.record_id if staged else rg.record_id
    nodes, edges = _stage(rg, rg.nodes, rg.edges, staged)
    rows = _order(target, nodes, edges)
    chunks = Chunker(graph)
    with _leased(graph, target) as lease:
        return _write_chunked_steps(graph, rg, late, staged, target, rows, chunks, lease)


def _write_chunked_steps(graph: Graph, rg: RecordGraph, late: Late | None, staged: bool, target: str,
                         rows: _Rows, chunks: Chunker, lease: str) -> WriteCounts:
    def take(_: bool) -> WriteCounts:
        with graph.writer() as w:
            _take(w, rg, target, lease)
            w.nodes([rows.record])
            w.run("ingest/mark_writing", record_id=target, writer=WRITER, lease=lease,
                  replaces=rg.record_id if staged else None)
        return w.counts

    chunks.counts.merge(_retrying(take))  # GraphBusy here: nothing of this write to delete
    with _abandoning(graph, target, lease):
        _fault("lease")
        chunks.write(rows.nodes, parallel=True)
        _fault("nodes")
        by_file = {e.dst: e for e in rows.file_links}
        step = max(1, chunks.size // 2)
        for k in range(0, len(rows.files), step):
            part = rows.files[k : k + step]
            chunks.write(part, [by_file[f.id] for f in part if f.id in by_file])
        _fault("files")
        chunks.write((), rows.edges)
        _fault("edges")
        if late is not None:
            owned = {n.id for n in rg.nodes if n.props.get("record_id") == rg.record_id} if staged else set()
            late_nodes, late_edges = _stage(rg, *late(), staged, owned)
            chunks.write(late_nodes, late_edges)
        _fault("late")
    return _complete(graph, rg, target, chunks, lease, staged)


@contextmanager
def _abandoning(graph: Graph, target: str, lease: str) -> Iterator[None]:
    """The steps of a write under its lease: any failure (a kill signal too) deletes what this write staged."""
    try:
        yield
    except BaseException:
        _abandon(graph, target, lease)
        raise


def _complete(graph: Graph, rg: RecordGraph, target: str, chunks: Chunker, lease: str, staged: bool) -> WriteCounts:
    """After the last chunk: a first version becomes complete in place, a replacement is swapped in."""
    if not staged:
        with _abandoning(graph, target, lease):
            return _finish_first(graph, rg, chunks)
    return _swap(graph, rg, target, chunks, lease)


def _finish_first(graph: Graph, rg: RecordGraph, chunks: Chunker) -> WriteCounts:
    """The last step of a first ingest written in several transactions: it becomes `complete`."""
    def finish(_: bool) -> WriteCounts:
        with graph.writer() as w:
            _finish(w, rg)
        return w.counts

    chunks.counts.merge(_retrying(finish))
    return chunks.counts


def _abandon(graph: Graph, target: str, lease: str) -> None:
    """What a failed write of several transactions wrote, before its commit point: gone — if this write still
    holds the lease (a write refused at its lease wrote nothing, and the Record is another ingest's). A server
    that went away is not asked: the Record stays `writing` under a dead writer, which the next ingest removes."""
    if not graph.answers():
        return
    held = graph.query("ingest/lease_of", record_id=target)
    if held and held[0]["lease"] == lease:
        _again(graph, "ingest/delete_record", record_id=target)
        _again(graph, "ingest/prune_orphan_files")  # files only the failed write linked


def _again(graph: Graph, name: str, **params: Any) -> None:
    """An idempotent batched statement, run again when a concurrent transaction got in its way (a deadlock on
    the archive's relationships, a node another ingest deleted under it)."""
    def run(_: bool) -> WriteCounts:
        graph.execute_implicit(name, **params)
        return WriteCounts()

    _retrying(run)


def _swap(graph: Graph, rg: RecordGraph, target: str, chunks: Chunker, lease: str) -> WriteCounts:
    """A replacement's commit point, then the swap (finish_swap)."""
    def commit(_: bool) -> WriteCounts:
        with graph.writer() as w:
            done = w.run("ingest/commit_swap", record_id=rg.record_id, staged=target, writer=WRITER, lease=lease)
        if not done[0]["committed"]:
            raise GraphBusy(f"{rg.record_id}: another ingest took over this replacement before its commit point")
        return w.counts

    chunks.counts.merge(_retrying(commit))
    _fault("commit")
    chunks.counts.merge(finish_swap(graph, rg.record_id, lease))
    return chunks.counts


def finish_swap(graph: Graph, record_id: str, lease: str) -> WriteCounts:
    """After the commit point: delete the old version, rename the staged one, drop the swap's mark. Each step
    is idempotent and runs only for the holder of the staged Record's lease, so the next ingest or a reader can
    finish a swap whose writer died once it has taken its lease over (`_finish_dead`), and no one else can."""
    staged = STAGED + record_id
    state = graph.query("ingest/record_state", record_id=staged)
    if not state or [r["lease"] for r in graph.query("ingest/lease_of", record_id=staged)] != [lease]:
        return WriteCounts()
    phase = state[0]["swap"] or {"swapping": "deleting", "renaming": "renaming"}.get(state[0]["state"])
    if phase is None:
        return WriteCounts()  # before its commit point: not a swap to finish
    if phase == "deleting":
        _again(graph, "ingest/delete_superseded", record_id=record_id, lease=lease)
        graph.execute("ingest/mark_renaming", staged=staged, lease=lease)
        _fault("deleted_old")
    _again(graph, "ingest/rename_staged", staged=staged, record_id=record_id, prefix=staged_prefix(record_id),
           legacy=STAGED, lease=lease)
    # a shared id (a source location in bytes another record holds too) that another record wrote meanwhile:
    # the staged node takes it over, as a direct write would have
    _again(graph, "ingest/merge_staged", staged=staged, record_id=record_id, prefix=staged_prefix(record_id),
           legacy=STAGED, lease=lease)
    _fault("renamed")
    def complete(_: bool) -> WriteCounts:
        with graph.writer() as w:
            w.run("ingest/complete_swap", staged=staged, record_id=record_id, prefix=STAGED, lease=lease)
            w.run("ingest/prune_orphan_files")
        return w.counts

    return _retrying(complete)


def _alive(writer: str | None, age: int | None, lease: str | None = None) -> bool:
    """Whether the ingest that holds a record's lease may still be running: a process of this host that
    still exists, or any writer elsewhere younger than STALE_AFTER_S. No lease at all (an older voe) is dead."""
    if not writer or ":" not in writer:
        return False
    host, _, pid = writer.rpartition(":")
    if host == socket.gethostname() and pid.isdigit():
        if int(pid) == os.getpid():
            with _HELD_LOCK:  # another thread of this process may be writing it; else a leftover of an earlier call
                return lease is not None and lease in _HELD
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return age is not None and age < STALE_AFTER_S


def _finish_dead(graph: Graph, row: dict[str, Any]) -> bool:
    """A dead writer's unfinished record (a row of stale_writers or writers_of): its lease taken over — by
    this process only, if several try — then what it wrote before its commit point deleted (readers never saw
    it; a staged version's old record is untouched) or its swap finished. Whether this process did it."""
    rid = str(row["record_id"])
    lease = _new_lease()
    try:
        taken = graph.transact(lambda w: w.run("ingest/take_over", record_id=rid, dead=row["lease"],
                                               dead_writer=row["writer"], lease=lease, writer=WRITER))
        if not taken or not taken[0]["taken"]:
            return False
        # the state read under the lock, not the row's: the dead writer may have passed its commit point since
        if taken[0]["state"] == "writing":
            _again(graph, "ingest/delete_record", record_id=rid)
            _again(graph, "ingest/prune_orphan_files")
        else:
            finish_swap(graph, rid.removeprefix(STAGED), lease)
        return True
    finally:
        _release(lease)


def recover(graph: Graph, record_id: str) -> None:
    """Before a record is written: what a dead writer left of it (a write before its commit point, a swap
    after it) is removed or finished, so this write starts from one whole version or none."""
    for row in graph.query("ingest/writers_of", record_id=record_id, staged=STAGED + record_id):
        if row["state"] in UNFINISHED and not _alive(row["writer"], row["age"], row["lease"]):
            _finish_dead(graph, row)


def clean_stale(graph: Graph) -> list[str]:
    """What dead writers left, in every record (`recover` of each). Returns the record ids cleaned."""
    return [str(row["record_id"]) for row in graph.query("ingest/stale_writers")
            if not _alive(row["writer"], row["age"], row["lease"]) and _finish_dead(graph, row)]


def settle(graph: Graph, timeout: float = SETTLE_TIMEOUT_S, say: Callable[[str], None] | None = None) -> None:
    """Before reading records: wait for swaps live ingests are finishing, and finish those of dead ones, so
    a reader sees every record in one complete version."""
    deadline = time.monotonic() + timeout
    told: set[str] = set()
    while True:
        pending = [r for r in graph.query("ingest/stale_writers") if r["state"] != "writing"]
        if not pending:
            return
        for row in pending:
            rid = str(row["record_id"])
            if not _alive(row["writer"], row["age"], row["lease"]):
                _finish_dead(graph, row)
            elif rid not in told and say is not None:
                say(f"waiting for the ingest replacing {rid.removeprefix(STAGED)} to finish its swap")
                told.add(rid)
        if time.monotonic() > deadline:
            raise GraphBusy(f"records still being swapped after {timeout:.0f} s: "
                            + ", ".join(str(r["record_id"]) for r in pending))
        time.sleep(0.2)


def _once(edges: list[EdgeRow]) -> list[EdgeRow]:
    """Each edge once (the last row's properties, as MERGE of every row gives): an edge CREATEd because its endpoint
    is this write's own must not come twice when a large chunk is split over transactions."""
    last = {(e.rel, e.src, e.src_label, e.dst, e.dst_label): e for e in edges}
    return edges if len(last) == len(edges) else list(last.values())


def _stage_shared(rg: RecordGraph, nodes: Sequence[NodeRow], edges: Sequence[EdgeRow],
                  shared: set[str]) -> tuple[list[NodeRow], list[EdgeRow]]:
    """`_stage` for a streamed record, whose rows come a chunk at a time: every node of the record is its own but
    the shared ones (files, the archive: no `record_id` of this record), collected in `shared` as they come, so
    an edge to an earlier chunk's node is staged too."""
    rid = STAGED + rg.record_id
    shared.update(n.id for n in nodes if n.props.get("record_id") != rg.record_id)
    sid = _staged_ids(rg.record_id)
    out_nodes = [n if n.id in shared else NodeRow(sid(n.id), n.labels, {**n.props, "record_id": rid})
                 for n in nodes]
    out_edges = [EdgeRow(e.rel, e.src if e.src in shared else sid(e.src), e.src_label,
                         e.dst if e.dst in shared else sid(e.dst), e.dst_label, e.props) for e in edges]
    return out_nodes, out_edges


T = TypeVar("T")


def _pipelined(produce: Iterator[T], consume: Callable[[T], None], ahead: int = 1) -> None:
    """`consume` each item of `produce` while the next is produced in a thread (the builder's Python work
    overlaps the server's), holding at most `ahead` items in between. A failure on either side stops both and
    is raised here."""
    handoff: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=ahead)
    stop = threading.Event()

    def put(item: tuple[str, Any]) -> bool:
        while not stop.is_set():
            try:
                handoff.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def run() -> None:
        try:
            for item in produce:
                if not put(("item", item)):
                    return
            put(("done", None))
        except BaseException as exc:  # noqa: BLE001 - handed to the consuming thread, which raises it
            put(("error", exc))

    worker = threading.Thread(target=run, name="voe-build", daemon=True)
    worker.start()
    try:
        while True:
            kind, item = handoff.get()
            if kind == "done":
                return
            if kind == "error":
                raise item
            consume(item)
    finally:
        stop.set()
        worker.join()
        close = getattr(produce, "close", None)
        if close is not None:
            close()


def write_streamed(graph: Graph, stream: NerdmStream) -> WriteCounts:
    """Write a streamed record (ingest/sources/nerdm/stream.py) with the guarantees of `_write_chunked`: the Record with
    its lease first, then each chunk of components in its own transaction while the next is built, the edges
    held back for later chunks, then the finish (a first ingest) or the swap (a replacement). Nothing of it is
    visible before the last step, and a failure deletes what was written. `open_streamed` has run pass 2: the
    stamp decides whether anything is written at all."""
    rg = stream.g
    _unhindered(graph, rg, lambda: _check(graph, rg))
    if rg.previous_state == "complete" and rg.previous_stamp == rg.stamp:
        return WriteCounts()  # the same inputs under the same rules: nothing is built or written
    staged = rg.previous_state == "complete"
    target = STAGED + rg.record_id if staged else rg.record_id
    shared: set[str] = set()

    def stage(nodes: Sequence[NodeRow], edges: Sequence[EdgeRow]) -> tuple[list[NodeRow], list[EdgeRow]]:
        rg.streamed_elements += len(nodes) + len(edges)
        return _stage_shared(rg, nodes, edges, shared) if staged else (list(nodes), list(edges))

    chunks = Chunker(graph, fresh=_OwnPrefix(rg.record_id, staged))
    with _leased(graph, target) as lease, collector.relaxed():  # relaxed: prepare()'s index is frozen out of view
        return _write_stream_steps(graph, stream, rg, staged, target, stage, chunks, lease)


def _write_stream_steps(graph: Graph, stream: NerdmStream, rg: RecordGraph, staged: bool, target: str,
                        stage: Callable[[Sequence[NodeRow], Sequence[EdgeRow]], tuple[list[NodeRow], list[EdgeRow]]],
                        chunks: Chunker, lease: str) -> WriteCounts:
    head_nodes, head_edges = stage(*stream.head())
    record = next(n for n in head_nodes if n.id == target)

    def take(shared_create: bool) -> WriteCounts:
        with graph.writer() as w:
            _take(w, rg, target, lease)
            # not through chunks.fresh: take_lease created the Record in this transaction, which must not count
            # as a leftover this write merged into
            _write(w, [record], ())
            w.run("ingest/mark_writing", record_id=target, writer=WRITER, lease=lease,
                  replaces=rg.record_id if staged else None)
            _write(w, [n for n in head_nodes if n is not record], head_edges, chunks.fresh, shared_create)
        return w.counts

    chunks.counts.merge(_retrying(take))  # GraphBusy here: nothing of this write to delete
    with _abandoning(graph, target, lease):
        _fault("lease")
        written = [0]

        def write_chunk(rows: tuple[list[NodeRow], list[EdgeRow], Plan | None]) -> None:
            nodes, edges, plan = rows
            if len(nodes) + len(edges) <= chunks.size:  # the size may have halved since the plan was made
                chunks.counts.merge(chunks._commit(nodes, edges, plan))
            else:  # a chunk of many payload facts
                _write_files_linked(chunks, nodes, _once(edges))
            written[0] += 1
            if written[0] == 1:
                _fault("nodes")

        def staged_chunks() -> Iterator[tuple[list[NodeRow], list[EdgeRow], Plan | None]]:
            # staged, deduplicated and grouped for their statements in the building thread: the writing
            # thread's Python work is time the server waits for the next statement
            with closing(stream.chunks()) as produced:
                for nodes, edges in produced:
                    if len(nodes) + len(edges) <= chunks.size:  # one transaction; the plan writes an edge once
                        nodes, edges = stage(nodes, edges)
                        yield nodes, edges, _plan(graph, nodes, edges, chunks.fresh)
                    else:
                        yield *stage(nodes, _once(edges)), None

        _pipelined(staged_chunks(), write_chunk)
        _fault("files")
        late_nodes, late_edges = stream.deferred()
        chunks.write(*stage(late_nodes, _once(late_edges)))
        _fault("edges")
        _fault("late")  # a streamed record has no late rows (its schema findings come with their chunk)
    return _complete(graph, rg, target, chunks, lease, staged)
