"""Write a run's trajectories into the graph (Run, Trajectory, Step, REQUESTED, TERMINATED_WITH) and run
the verifier as one Cypher batch over all of them (cypher/verifiers/verify_trajectories.cypher)."""

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
                 (Rel.HAS_STEP, Label.TRAJECTORY, Label.STEP), (Rel.TERMINATED_WITH, Label.TRAJECTORY, Label.STEP),
                 (Rel.REQUESTED, Label.STEP, Label.EVIDENCE))
BATCH_TRAJECTORIES = 2000


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
    """Run, Trajectory and Step nodes with IN_RUN, ATTEMPTS, HAS_STEP, REQUESTED and TERMINATED_WITH, replacing
    what an earlier scoring of the run wrote, in one transaction: the same nodes, properties and edges as the
    generic writer would make, created in batches of whole trajectories. A run the graph already holds from the
    same files (digest on the Run node, every trajectory still attached to its task) is left as it is."""
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
    by_trajectory: dict[str, list[dict[str, Any]]] = {}
    for s in steps:
        sid = f"{s['trajectory_id']}#{s['t']}"
        by_trajectory.setdefault(s["trajectory_id"], []).append({
            "props": {"id": sid, "t": s["t"], "action": s["action"], "outcome": s["outcome"],
                      "evidence_id": s["evidence_id"], "payload": s["payload"]},
            "requested": s["evidence_id"] if s["outcome"] in ("revealed", "unavailable") else None,
            "terminal": s["outcome"] == "terminal"})
    _refuse_inconsistent(run_dir, trajectories, by_trajectory)
    rows = [{"task_id": tr["task_id"], "steps": by_trajectory.get(tr["trajectory_id"], []),
             "props": {"id": tr["trajectory_id"], "task_id": tr["task_id"], "pass_index": tr["pass_index"],
                       "policy": tr["policy"], "end": tr["end"], "terminal_class": tr["terminal_class"],
                       "payload": tr["payload"], "steps": tr["steps"]}} for tr in trajectories]
    run = NodeRow(run_id, (Label.RUN,), {**{k: info[k] for k in ("policy", "passes", "seed", "content_hash", "tasks")},
                                         "files_sha256": files_sha256})

    def work(w: GraphWriter) -> None:
        held = w.run("verifiers/run_held", run_id=run_id)
        if held and held[0]["files_sha256"] == files_sha256 and held[0]["attached"] == len(rows):
            return
        w.run("verifiers/clear_run", run_id=run_id)
        w.nodes([run])
        for start in range(0, len(rows), BATCH_TRAJECTORIES):
            batch = rows[start:start + BATCH_TRAJECTORIES]
            done = w.run("verifiers/write_trajectories", run_id=run_id, rows=batch)[0]
            asked = sum(1 for r in batch for st in r["steps"] if st["requested"] is not None)
            if done["trajectories"] != len(batch) or done["requested"] != asked:
                raise OntologyViolation(
                    f"{run_dir}: {len(batch) - done['trajectories']} trajectories name a task and "
                    f"{asked - done['requested']} steps an evidence id that is not in the graph (compile and score "
                    "against the same graph)")
    return run_id, work


def _refuse_inconsistent(run_dir: Path, trajectories: list[dict[str, Any]],
                         steps: dict[str, list[dict[str, Any]]]) -> None:
    """What the batched CREATE cannot take: a trajectory id twice, a step twice, or steps of a trajectory the
    run does not list (the generic writer's MERGE hid the first two and refused the third)."""
    ids = [tr["trajectory_id"] for tr in trajectories]
    twice = sorted({i for i in ids if ids.count(i) > 1}) if len(set(ids)) != len(ids) else []
    if twice:
        raise InputError(f"trajectories.jsonl lists {twice[0]} more than once", path=str(run_dir))
    for tid, rows in steps.items():
        ts = [r["props"]["t"] for r in rows]
        if len(set(ts)) != len(ts):
            raise InputError(f"steps.jsonl holds a step of {tid} more than once", path=str(run_dir))
    orphans = sorted(set(steps) - set(ids))
    if orphans:
        raise InputError(f"steps.jsonl holds steps of {orphans[0]}, which trajectories.jsonl does not list",
                         path=str(run_dir))
