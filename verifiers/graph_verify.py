"""Write a run's trajectories into the graph (Run, Trajectory, Step, REQUESTED, TERMINATED_WITH) and run
the verifier as one Cypher batch over all of them (cypher/verifiers/verify_trajectories.cypher)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from voe.graph import EdgeRow, Graph, NodeRow
from voe.jsonl import read_jsonl
from voe.ontology import Label, Rel


class Verdict(BaseModel):
    trajectory_id: str
    task_id: str
    action_valid: bool
    payload_bound: bool
    grounded: bool
    valid: bool


def write_run(graph: Graph, run_dir: Path) -> str:
    info = json.loads((run_dir / "run.json").read_text())
    run_id = info["run_id"]
    steps = read_jsonl(run_dir / "steps.jsonl")
    trajectories = read_jsonl(run_dir / "trajectories.jsonl")
    graph.execute("verifiers/clear_run", run_id=run_id)
    nodes = [NodeRow(run_id, (Label.RUN,), {k: info[k] for k in ("policy", "passes", "seed", "content_hash", "tasks")})]
    edges: list[EdgeRow] = []
    for tr in trajectories:
        nodes.append(NodeRow(tr["trajectory_id"], (Label.TRAJECTORY,), {
            "task_id": tr["task_id"], "pass_index": tr["pass_index"], "policy": tr["policy"], "end": tr["end"],
            "terminal_class": tr["terminal_class"], "payload": tr["payload"], "steps": tr["steps"]}))
        edges.append(EdgeRow(Rel.IN_RUN, tr["trajectory_id"], Label.TRAJECTORY, run_id, Label.RUN))
        edges.append(EdgeRow(Rel.ATTEMPTS, tr["trajectory_id"], Label.TRAJECTORY, tr["task_id"], Label.TASK))
    for s in steps:
        sid = f"{s['trajectory_id']}#{s['t']}"
        nodes.append(NodeRow(sid, (Label.STEP,), {"t": s["t"], "action": s["action"], "outcome": s["outcome"],
                                                   "evidence_id": s["evidence_id"], "payload": s["payload"]}))
        edges.append(EdgeRow(Rel.HAS_STEP, s["trajectory_id"], Label.TRAJECTORY, sid, Label.STEP))
        if s["outcome"] in ("revealed", "unavailable"):
            edges.append(EdgeRow(Rel.REQUESTED, sid, Label.STEP, s["evidence_id"], Label.EVIDENCE))
        if s["outcome"] == "terminal":
            edges.append(EdgeRow(Rel.TERMINATED_WITH, s["trajectory_id"], Label.TRAJECTORY, sid, Label.STEP))
    with graph.writer() as w:
        w.nodes(nodes)
        w.edges(edges)
    return str(run_id)


def verify_run(graph: Graph, run_dir: Path) -> list[Verdict]:
    run_id = write_run(graph, run_dir)
    return [Verdict(**row) for row in graph.query("verifiers/verify_trajectories", run_id=run_id)]
