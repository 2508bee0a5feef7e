"""Write a run's trajectories into the graph (Run, Trajectory with its steps as list properties, IN_RUN,
ATTEMPTS, REQUESTED) and verify them with Cypher: as each batch is written (cypher/verifiers/write_trajectories),
or, for a run the graph holds already, in one query over all of them (verify_trajectories). Both run the same
checks (cypher/verifiers/verdict, which each includes)."""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from voe import collector
from voe.artifacts.scores import Verdict
from voe.errors import InputError, OntologyViolation
from voe.graph import Graph, GraphWriter, NodeRow
from voe.jsonl import iter_jsonl, read_bytes
from voe.ontology import Label, Rel

# the edges write_trajectories.cypher creates, checked against the ontology before anything is written
WRITTEN_EDGES = ((Rel.IN_RUN, Label.TRAJECTORY, Label.RUN), (Rel.ATTEMPTS, Label.TRAJECTORY, Label.TASK),
                 (Rel.REQUESTED, Label.TRAJECTORY, Label.EVIDENCE))
BATCH_TRAJECTORIES = 300
# The first and the last batch are small: the server starts writing while the second is built, and the verifier
# query, which waits for the last batch's write, waits for a short one.
EDGE_BATCH_TRAJECTORIES = 50
# How a run's trajectories sit in the graph, kept on the Run node: a run written in another shape is rewritten even
# from the same files. Shape 1 had a Step node per step, with HAS_STEP, REQUESTED and TERMINATED_WITH edges; shape 2
# folded the steps into list properties of the trajectory; shape 3 drops the trajectory's copies of what the graph
# holds once elsewhere (task_id: its ATTEMPTS edge; policy: its Run; steps: the length of its step lists); shape 4
# puts on each REQUESTED edge the step `t` that asked (the Browser draws the requests in order).
GRAPH_SHAPE = 4
T = TypeVar("T")
ASKED = ("revealed", "unavailable")  # the outcomes of a request the environment answered


RUN_FILES = ("run.json", "steps.jsonl", "trajectories.jsonl")  # what the graph's copy of a run is made from


def run_files_sha256(run_dir: Path) -> str:
    """One digest of the files a scoring reads, kept on the Run node: scoring the same files again writes
    nothing."""
    return _digest({name: read_bytes(run_dir / name) for name in RUN_FILES})


def _digest(files: dict[str, bytes]) -> str:
    digest = hashlib.sha256()
    for name in RUN_FILES:
        data = files[name]
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def _digest_meanwhile(files: dict[str, bytes]) -> Callable[[], str]:
    """_digest in a thread of its own, while the caller parses the files (hashlib lets go of the GIL over large
    buffers, so the two use both cores); what is returned waits for it."""
    found: list[str] = []
    worker = threading.Thread(target=lambda: found.append(_digest(files)), name="voe-run-digest", daemon=True)
    worker.start()

    def digest() -> str:
        worker.join()
        return found[0]
    return digest


def write_run(graph: Graph, run_dir: Path) -> str:
    """Run and Trajectory nodes with IN_RUN, ATTEMPTS and REQUESTED, replacing what an earlier scoring of the run
    wrote, in one transaction: the same nodes, properties and edges as the generic writer would make, created in
    batches of whole trajectories. A trajectory's steps are its `step_action`, `step_outcome` and
    `step_evidence_id` lists (index = t; "" where a step has none) and one REQUESTED edge per step the
    environment answered with the evidence or `unavailable` (the step is where the evidence id sits in
    `step_evidence_id` with that outcome). A run the graph already holds from the same
    files in this shape (digest and GRAPH_SHAPE on the Run node, every trajectory still attached to its task) is
    left as it is."""
    run = _read_run(graph, run_dir)
    _transact(graph, run, lambda w, written: None)
    return run.run_id


def verify_run(graph: Graph, run_dir: Path) -> list[Verdict]:
    """write_run and the verifier in the same transaction (one commit, and the verdicts are of exactly what was
    written): each batch's statement returns the verdicts of the trajectories it wrote, computed by the graph from
    the task and evidence nodes it linked them to; a run the graph holds already from the same files is verified
    by the verify query over the graph's copy."""
    run = _read_run(graph, run_dir)

    def then(w: GraphWriter, written: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
        return written if written is not None else w.run("verifiers/verify_trajectories", run_id=run.run_id)
    return verdicts(_transact(graph, run, then))


def verdicts(rows: list[dict[str, Any]]) -> list[Verdict]:
    """The verifier's rows (the verify query's one, or one per batch written) as a Verdict per trajectory, in
    trajectory id order. A row's `verdicts` are [trajectory_id, task_id, action_valid, payload_bound, grounded]."""
    found = [Verdict(trajectory_id=tid, task_id=task, action_valid=a, payload_bound=p, grounded=g,
                     valid=a and p and g)
             for row in rows for tid, task, a, p, g in row["verdicts"]]
    return sorted(found, key=lambda v: v.trajectory_id)


@dataclass(frozen=True)
class _Run:
    dir: Path
    run_id: str
    node: NodeRow
    files_sha256: str
    steps: bytes  # steps.jsonl, parsed as the batches are written
    trajectories: list[dict[str, Any]]

    def refuse(self, why: str) -> InputError:
        return InputError(why, path=str(self.dir))


class _NotInOrder(Exception):  # noqa: N818 -- a signal between two functions of this module, not an error
    """steps.jsonl does not list the steps trajectory by trajectory in the order of trajectories.jsonl (as the
    runner writes them), a trajectory has no steps, a trajectory's steps are refused (read as a stream they may be
    only the first of its steps), a step names a trajectory the run does not list, or a batch names a task or
    evidence the graph lacks: the streamed write is rolled back and the run is written again from the whole file,
    every step checked before the first write, so that the input error, if there is one, is the one reported."""


def _read_run(graph: Graph, run_dir: Path) -> _Run:
    files = {name: read_bytes(run_dir / name) for name in RUN_FILES}
    try:
        info = json.loads(files["run.json"])
    except ValueError as exc:
        raise InputError(f"run.json is not JSON ({exc})", path=str(run_dir)) from exc
    missing = sorted(RUN_KEYS - info.keys()) if isinstance(info, dict) else sorted(RUN_KEYS)
    if missing:
        raise InputError(f"run.json is not a voe run record (no {', '.join(missing)})", path=str(run_dir))
    digest = _digest_meanwhile(files)
    trajectories = list(iter_jsonl(files["trajectories.jsonl"], run_dir / "trajectories.jsonl"))
    for n, tr in enumerate(trajectories, 1):
        why = _summary_problem(tr)
        if why:
            raise InputError(f"trajectories.jsonl: summary {n} {why}", path=str(run_dir))
    for rel, src, dst in WRITTEN_EDGES:
        graph.ontology.check_edge(rel, src, dst)
    files_sha256 = digest()
    run = _Run(run_dir, str(info["run_id"]), NodeRow(str(info["run_id"]), (Label.RUN,), {
        **{k: info[k] for k in ("policy", "passes", "seed", "content_hash", "tasks")},
        "files_sha256": files_sha256, "graph_shape": GRAPH_SHAPE}), files_sha256, files["steps.jsonl"], trajectories)
    ids = [tr["trajectory_id"] for tr in trajectories]
    # the runner names a trajectory by its run, task and pass: an id without its run's name in front (a run.json
    # edited by hand) would be another run's trajectory to the graph's id constraint
    prefix = run.run_id + "/"
    stray = next((i for i in ids if not i.startswith(prefix)), None)
    if stray is not None:
        raise run.refuse(f"trajectories.jsonl lists {stray}, which is not a trajectory of {run.run_id} (its id "
                         f"does not begin with {prefix})")
    if len(set(ids)) != len(ids):
        raise run.refuse(f"trajectories.jsonl lists {sorted({i for i in ids if ids.count(i) > 1})[0]} more than once")
    return run


def _transact(graph: Graph, run: _Run, then: Callable[[GraphWriter, list[dict[str, Any]] | None], T]) -> T:
    """The run written (unless the graph holds it already) and then `then` with the rows the batches returned
    (None when nothing was written), in one transaction. The steps are read as the batches go: while the server
    writes one batch, the next is parsed and built."""
    def work(whole: bool) -> Callable[[GraphWriter], T]:
        def write_then(w: GraphWriter) -> T:
            return then(w, _write(w, run, whole))
        return write_then
    with collector.relaxed():  # the rows in flight are thousands of small containers that live until the commit
        try:
            return graph.transact(work(whole=False))
        except _NotInOrder:
            pass  # written again below, outside this handler: the streamed attempt's parse state is let go first
        return graph.transact(work(whole=True))


def _write(w: GraphWriter, run: _Run, whole: bool) -> list[dict[str, Any]] | None:
    """The rows of the run's batches, each with the verdicts of its trajectories; None when the graph holds the run
    already (from the same files, in this shape)."""
    held = w.run("verifiers/run_held", run_id=run.run_id)
    if (held and held[0]["files_sha256"] == run.files_sha256 and held[0]["graph_shape"] == GRAPH_SHAPE
            and held[0]["attached"] == len(run.trajectories)):
        return None
    trajectories = _steps_by_trajectory(run, whole)
    batches = ([_row(tr, steps) for tr, steps in itertools.islice(trajectories, size)]
               for size in _batch_sizes(len(run.trajectories)))
    cleared = w.start("verifiers/clear_run", run_id=run.run_id)
    first = next(batches, None)  # built while the server clears
    cleared()
    w.nodes([run.node])
    done: list[dict[str, Any]] = []
    pending: Callable[[], dict[str, Any]] | None = None
    for rows in itertools.chain([] if first is None else [first], batches):
        # sent before the previous batch's result is read: the server goes on to this batch the moment it is done
        # with that one (the driver keeps the earlier result's rows for _wait)
        sent = _send(w, run, rows)
        if pending is not None:
            done.append(_wait(pending, whole))
        pending = sent
    # every trajectory is in a batch: read to its end, the generator checks what is left of steps.jsonl (the steps
    # of a run that lists no trajectories, say); not an assert, which `python -O` would drop with the read
    if next(trajectories, None) is not None:
        raise RuntimeError("a trajectory of the run was left out of its batches")
    if pending is not None:
        done.append(_wait(pending, whole))
    return done


def _batch_sizes(n: int) -> list[int]:
    """How many trajectories each batch of a run of `n` takes: EDGE_BATCH_TRAJECTORIES first and last,
    BATCH_TRAJECTORIES in between."""
    edge = min(EDGE_BATCH_TRAJECTORIES, BATCH_TRAJECTORIES)
    if n <= 2 * edge:
        return [size for size in (min(n, edge), n - min(n, edge)) if size]
    middle = n - 2 * edge
    return [edge, *[min(BATCH_TRAJECTORIES, middle - k) for k in range(0, middle, BATCH_TRAJECTORIES)], edge]


def _wait(pending: Callable[[], dict[str, Any]], whole: bool) -> dict[str, Any]:
    """A batch's result. Streamed, a task or evidence the graph lacks sends the run to the whole-file path: a step
    further on that the run's files get wrong is the error to report, not what the graph lacks."""
    try:
        return pending()
    except OntologyViolation:
        if whole:
            raise
        raise _NotInOrder from None


def _first_asked(steps: list[dict[str, Any]]) -> dict[str, int]:
    """Evidence id -> the step (t) that first asked for it and was answered, in the order of the steps."""
    first: dict[str, int] = {}
    for t, s in enumerate(steps):
        if s["outcome"] in ASKED:
            first.setdefault(s["evidence_id"], t)
    return first


def _row(tr: dict[str, Any], steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {"task_id": tr["task_id"],
            # once per evidence object, as MERGE would (the environment answers a repeat as a duplicate)
            "requested": list(first := _first_asked(steps)),
            "requested_t": list(first.values()),
            # every property a trajectory holds costs its commit (a third of `voe score` for request_everything):
            # what the graph holds elsewhere is not copied here (GRAPH_SHAPE)
            "props": {"id": tr["trajectory_id"], "pass_index": tr["pass_index"], "end": tr["end"],
                      "terminal_class": tr["terminal_class"], "payload": tr["payload"],
                      "step_action": [s.get("action") or "" for s in steps],
                      "step_outcome": [s["outcome"] for s in steps],
                      "step_evidence_id": [s.get("evidence_id") or "" for s in steps]}}


def _send(w: GraphWriter, run: _Run, rows: list[dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    """One batch sent; what is returned waits for its row (with the verdicts of its trajectories) and refuses the
    run when the graph lacks a task or an evidence object it names."""
    evidence = sorted({e for r in rows for e in r["requested"]})
    position = {e: k for k, e in enumerate(evidence)}
    sent = [{**r, "requested": [position[e] for e in r["requested"]]} for r in rows]
    asked = sum(len(r["requested"]) for r in rows)
    written = w.start("verifiers/write_trajectories", run_id=run.run_id, rows=sent, evidence=evidence)

    def check() -> dict[str, Any]:
        done = written()[0]
        if done["trajectories"] != len(rows) or done["requested"] != asked:
            raise OntologyViolation(
                f"{run.dir}: {len(rows) - done['trajectories']} trajectories name a task and "
                f"{asked - done['requested']} steps an evidence id that is not in the graph (compile and score "
                "against the same graph)")
        return done
    return check


def _steps_by_trajectory(run: _Run, whole: bool) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Each trajectory of trajectories.jsonl, in its order, with its steps checked and in the order of t.
    Streamed (whole=False), steps.jsonl is parsed as the trajectories are taken, and _NotInOrder is raised where
    it does not list them one after another in that order; whole, it is parsed, grouped and checked first."""
    path = run.dir / "steps.jsonl"
    order = run.trajectories
    position = {tr["trajectory_id"]: k for k, tr in enumerate(order)}
    lines = (_step(run, n, r) for n, r in enumerate(iter_jsonl(run.steps, path), 1))
    if whole:
        by_trajectory: dict[str, list[dict[str, Any]]] = {}
        for r in lines:
            by_trajectory.setdefault(r["trajectory_id"], []).append(r)
        orphans = sorted(set(by_trajectory) - set(position))
        if orphans:
            raise _orphan(run, orphans[0])
        # every trajectory checked before the first is written (an input error is reported before what the
        # graph lacks)
        yield from [(tr, _checked(run, tr, by_trajectory.get(tr["trajectory_id"], []))) for tr in order]
        return
    def checked(tr: dict[str, Any], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        try:
            return _checked(run, tr, rows)
        except InputError:
            raise _NotInOrder from None

    k, current = 0, list[dict[str, Any]]()
    for r in lines:
        p = position.get(r["trajectory_id"])
        if p is None:
            raise _NotInOrder  # the whole-file path names the first such trajectory in id order
        if p != k:
            if p != k + 1 or not current:
                raise _NotInOrder
            yield order[k], checked(order[k], current)
            k, current = p, []
        current.append(r)
    if order:
        if k != len(order) - 1 or not current:
            raise _NotInOrder
        yield order[k], checked(order[k], current)


RUN_KEYS = frozenset({"run_id", "policy", "passes", "seed", "content_hash", "tasks"})
SUMMARY_KEYS = frozenset({"trajectory_id", "task_id", "pass_index", "policy", "end", "terminal_class", "payload",
                          "steps"})


def _summary_problem(tr: Any) -> str | None:
    """What makes a line of trajectories.jsonl unwritable as a Trajectory node, if anything."""
    if type(tr) is not dict:  # orjson and json give plain dicts
        return "is not a JSON object"
    if not SUMMARY_KEYS <= tr.keys():
        return f"has no {', '.join(sorted(SUMMARY_KEYS - tr.keys()))}"
    if type(tr["trajectory_id"]) is not str or type(tr["task_id"]) is not str:
        return "has a trajectory_id or task_id that is not a string"
    payload = tr["payload"]
    if payload is not None and (type(payload) is not list or not all(type(p) is str for p in payload)):
        return f"of {tr['trajectory_id']} has a payload that is not a list of ids"
    return None


def _step(run: _Run, n: int, r: Any) -> dict[str, Any]:
    """A line of steps.jsonl, refused by its position when it is not a step the step lists can hold."""
    if not isinstance(r, dict) or not isinstance(r.get("trajectory_id"), str) or "t" not in r:
        raise run.refuse(f"steps.jsonl: step {n} is not a step (a JSON object with a trajectory_id and a t)")
    if not isinstance(r.get("outcome"), str) or not all(
            r.get(k) is None or isinstance(r[k], str) for k in ("action", "evidence_id")):
        raise run.refuse(f"steps.jsonl: step {n} has an outcome, action or evidence_id that is not a string")
    return r


def _orphan(run: _Run, trajectory_id: str) -> InputError:
    return run.refuse(f"steps.jsonl holds steps of {trajectory_id}, which trajectories.jsonl does not list")


def _checked(run: _Run, tr: dict[str, Any], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A trajectory's steps in the order of t, refusing what the batched CREATE and the step lists cannot take:
    steps that are not t = 0, 1, 2, ... once each, a second terminal step, a summary whose terminal class or
    payload is not its terminal step's (the graph keeps one copy of them), a terminal step without an action, a
    step without an evidence id that says the environment answered a request, a payload on a step that is not
    terminal, or a summary whose step count or policy is not its steps' and its run's (the graph keeps the steps
    and the run's policy, not the summary's copies)."""
    tid = tr["trajectory_id"]
    ts = [r["t"] for r in rows]
    if ts != list(range(len(ts))):  # the runner writes them in order: sort only when they are not
        if any(type(t) is not int for t in ts):
            raise run.refuse(f"steps.jsonl: a step of {tid} has a t that is not an integer ({ts[:8]})")
        rows.sort(key=lambda r: r["t"])
        ts = [r["t"] for r in rows]
        if len(set(ts)) != len(ts):
            raise run.refuse(f"steps.jsonl holds a step of {tid} more than once")
        if ts != list(range(len(ts))):
            raise run.refuse(f"steps.jsonl: the steps of {tid} are not numbered 0, 1, 2, ... (t = {ts[:8]})")
    terminal = None
    for r in rows:
        outcome = r["outcome"]
        if outcome == "terminal":
            if terminal is not None:
                raise run.refuse(f"steps.jsonl: {tid} has more than one terminal step (t = {terminal['t']}, {r['t']})")
            terminal = r
        elif r.get("payload") is not None:
            raise run.refuse(f"steps.jsonl: step {r['t']} of {tid} carries a payload but is not terminal")
        if outcome in ASKED and not r.get("evidence_id"):
            raise run.refuse(f"steps.jsonl: step {r['t']} of {tid} is {outcome} but names no evidence id")
    if terminal is not None and not terminal.get("action"):
        raise run.refuse(f"steps.jsonl: the terminal step of {tid} names no action")
    ended = (terminal.get("action"), terminal.get("payload") or []) if terminal is not None else (None, [])
    if ended != (tr["terminal_class"], tr["payload"] or []):
        raise run.refuse(f"trajectories.jsonl: {tid} ends with {tr['terminal_class']} {tr['payload']}, its steps "
                         f"with {ended[0]} {ended[1]}")
    if tr["steps"] != len(rows):
        raise run.refuse(f"trajectories.jsonl: {tid} counts {tr['steps']} steps, steps.jsonl holds {len(rows)}")
    if tr["policy"] != run.node.props["policy"]:
        raise run.refuse(f"trajectories.jsonl: {tid} is of policy {tr['policy']}, the run of "
                         f"{run.node.props['policy']}")
    return rows
