"""Write a run's trajectories into the graph (Run, Trajectory with its steps as list properties, IN_RUN,
ATTEMPTS, REQUESTED) and run the verifier as one Cypher batch over all of them
(cypher/verifiers/verify_trajectories.cypher)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from voe.errors import InputError, OntologyViolation
from voe.graph import Graph, GraphWriter, NodeRow
from voe.jsonl import read_jsonl
from voe.ontology import Label, Rel


class Verdict(BaseModel):
    trajectory_id: str
    task_id: str
    action_valid: bool
    payload_bound: bool
    grounded: bool
    valid: bool


# the edges write_trajectories.cypher creates, checked against the ontology before anything is written
WRITTEN_EDGES = ((Rel.IN_RUN, Label.TRAJECTORY, Label.RUN), (Rel.ATTEMPTS, Label.TRAJECTORY, Label.TASK),
                 (Rel.REQUESTED, Label.TRAJECTORY, Label.EVIDENCE))
BATCH_TRAJECTORIES = 2000
# How a run's trajectories sit in the graph, kept on the Run node: a run written in another shape (shape 1 had a
# Step node per step, with HAS_STEP, REQUESTED and TERMINATED_WITH edges) is rewritten even from the same files.
GRAPH_SHAPE = 2
ASKED = ("revealed", "unavailable")  # the outcomes of a request the environment answered


RUN_FILES = ("run.json", "steps.jsonl", "trajectories.jsonl")  # what the graph's copy of a run is made from


def run_files_sha256(run_dir: Path) -> str:
    """One digest of the files a scoring reads, kept on the Run node: scoring the same files again writes
    nothing."""
    digest = hashlib.sha256()
    for name in RUN_FILES:
        data = (run_dir / name).read_bytes()
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def write_run(graph: Graph, run_dir: Path) -> str:
    """Run and Trajectory nodes with IN_RUN, ATTEMPTS and REQUESTED, replacing what an earlier scoring of the run
    wrote, in one transaction: the same nodes, properties and edges as the generic writer would make, created in
    batches of whole trajectories. A trajectory's steps are its `step_action`, `step_outcome` and
    `step_evidence_id` lists (index = t; "" where a step has none) and one REQUESTED edge per step the
    environment answered with the evidence or `unavailable` (the step is where the evidence id sits in
    `step_evidence_id` with that outcome). A run the graph already holds from the same
    files in this shape (digest and GRAPH_SHAPE on the Run node, every trajectory still attached to its task) is
    left as it is."""
    run_id, work = _run_writer(graph, run_dir)
    graph.transact(work)
    return run_id


def verify_run(graph: Graph, run_dir: Path) -> list[Verdict]:
    """write_run and the verifier query in the same transaction (one commit, and the verdicts are of exactly
    what was written)."""
    run_id, write = _run_writer(graph, run_dir)

    def work(w: GraphWriter) -> list[dict[str, Any]]:
        write(w)
        return w.run("verifiers/verify_trajectories", run_id=run_id)

    return verdicts(graph.transact(work))


def verdicts(rows: list[dict[str, Any]]) -> list[Verdict]:
    """The verifier query's one row of parallel lists, as a Verdict per trajectory (in trajectory id order)."""
    (row,) = rows
    return [Verdict(trajectory_id=tid, task_id=task, action_valid=a, payload_bound=p, grounded=g,
                    valid=a and p and g)
            for tid, task, a, p, g in zip(row["trajectory_id"], row["task_id"], row["action_valid"],
                                          row["payload_bound"], row["grounded"], strict=True)]


def _run_writer(graph: Graph, run_dir: Path) -> tuple[str, Callable[[GraphWriter], None]]:
    info = json.loads((run_dir / "run.json").read_text())
    run_id = str(info["run_id"])
    files_sha256 = run_files_sha256(run_dir)
    steps = read_jsonl(run_dir / "steps.jsonl")
    trajectories = read_jsonl(run_dir / "trajectories.jsonl")
    for rel, src, dst in WRITTEN_EDGES:
        graph.ontology.check_edge(rel, src, dst)
    ordered = _ordered_steps(run_dir, trajectories, steps)
    rows = []
    for tr in trajectories:
        tr_steps = ordered.get(tr["trajectory_id"], [])
        rows.append({"task_id": tr["task_id"],
                     # once per evidence object, as MERGE would (the environment answers a repeat as a duplicate)
                     "requested": list(dict.fromkeys([s["evidence_id"] for s in tr_steps if s["outcome"] in ASKED])),
                     "props": {"id": tr["trajectory_id"], "task_id": tr["task_id"], "pass_index": tr["pass_index"],
                               "policy": tr["policy"], "end": tr["end"], "terminal_class": tr["terminal_class"],
                               "payload": tr["payload"], "steps": tr["steps"],
                               "step_action": [s.get("action") or "" for s in tr_steps],
                               "step_outcome": [s["outcome"] for s in tr_steps],
                               "step_evidence_id": [s.get("evidence_id") or "" for s in tr_steps]}})
    run = NodeRow(run_id, (Label.RUN,), {**{k: info[k] for k in ("policy", "passes", "seed", "content_hash", "tasks")},
                                         "files_sha256": files_sha256, "graph_shape": GRAPH_SHAPE})

    def work(w: GraphWriter) -> None:
        held = w.run("verifiers/run_held", run_id=run_id)
        if (held and held[0]["files_sha256"] == files_sha256 and held[0]["graph_shape"] == GRAPH_SHAPE
                and held[0]["attached"] == len(rows)):
            return
        w.run("verifiers/clear_run", run_id=run_id)
        w.nodes([run])
        for start in range(0, len(rows), BATCH_TRAJECTORIES):
            batch = rows[start:start + BATCH_TRAJECTORIES]
            evidence = sorted({e for r in batch for e in r["requested"]})
            position = {e: k for k, e in enumerate(evidence)}
            sent = [{**r, "requested": [position[e] for e in r["requested"]]} for r in batch]
            done = w.run("verifiers/write_trajectories", run_id=run_id, rows=sent, evidence=evidence)[0]
            asked = sum(len(r["requested"]) for r in batch)
            if done["trajectories"] != len(batch) or done["requested"] != asked:
                raise OntologyViolation(
                    f"{run_dir}: {len(batch) - done['trajectories']} trajectories name a task and "
                    f"{asked - done['requested']} steps an evidence id that is not in the graph (compile and score "
                    "against the same graph)")
    return run_id, work


def _ordered_steps(run_dir: Path, trajectories: list[dict[str, Any]],
                   steps: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each trajectory's steps in the order of t, refusing what the batched CREATE and the step lists cannot
    take: a trajectory id twice, steps of a trajectory that are not t = 0, 1, 2, ... once each, steps of a
    trajectory the run does not list, a second terminal step, a summary whose terminal class or payload is not
    its terminal step's (the graph keeps one copy of them), a terminal step without an action, a step without an
    evidence id that says the environment answered a request, or a payload on a step that is not terminal."""
    def refuse(why: str) -> InputError:
        return InputError(why, path=str(run_dir))

    by_trajectory: dict[str, list[dict[str, Any]]] = {}
    for r in steps:
        by_trajectory.setdefault(r["trajectory_id"], []).append(r)
    ids = [tr["trajectory_id"] for tr in trajectories]
    if len(set(ids)) != len(ids):
        raise refuse(f"trajectories.jsonl lists {sorted({i for i in ids if ids.count(i) > 1})[0]} more than once")
    orphans = sorted(set(by_trajectory) - set(ids))
    if orphans:
        raise refuse(f"steps.jsonl holds steps of {orphans[0]}, which trajectories.jsonl does not list")
    for tr in trajectories:
        tid = tr["trajectory_id"]
        rows = by_trajectory.get(tid, [])
        ts = [r["t"] for r in rows]
        if ts != list(range(len(ts))):  # the runner writes them in order: sort only when they are not
            if any(type(t) is not int for t in ts):
                raise refuse(f"steps.jsonl: a step of {tid} has a t that is not an integer ({ts[:8]})")
            rows.sort(key=lambda r: r["t"])
            ts = [r["t"] for r in rows]
            if len(set(ts)) != len(ts):
                raise refuse(f"steps.jsonl holds a step of {tid} more than once")
            if ts != list(range(len(ts))):
                raise refuse(f"steps.jsonl: the steps of {tid} are not numbered 0, 1, 2, ... (t = {ts[:8]})")
        terminal = None
        for r in rows:
            outcome = r["outcome"]
            if outcome == "terminal":
                if terminal is not None:
                    raise refuse(f"steps.jsonl: {tid} has more than one terminal step (t = {terminal['t']}, {r['t']})")
                terminal = r
            elif r.get("payload") is not None:
                raise refuse(f"steps.jsonl: step {r['t']} of {tid} carries a payload but is not terminal")
            if outcome in ASKED and not r.get("evidence_id"):
                raise refuse(f"steps.jsonl: step {r['t']} of {tid} is {outcome} but names no evidence id")
        if terminal and not terminal.get("action"):
            raise refuse(f"steps.jsonl: the terminal step of {tid} names no action")
        ended = (terminal.get("action"), terminal.get("payload") or []) if terminal else (None, [])
        if ended != (tr["terminal_class"], tr["payload"] or []):
            raise refuse(f"trajectories.jsonl: {tid} ends with {tr['terminal_class']} {tr['payload']}, its steps "
                         f"with {ended[0]} {ended[1]}")
    return by_trajectory
