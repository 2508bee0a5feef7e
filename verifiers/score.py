"""`voe score`: verify a run in the graph and compute its metrics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from voe.artifacts.package import load_package
from voe.artifacts.run import read_run_info
from voe.artifacts.scores import TrajectoryScore, file_sha256
from voe.errors import EmptyRun, InputError
from voe.graph import Graph
from voe.ingest import settle
from voe.jsonl import read_jsonl
from voe.replay.run_audit import write_audit
from voe.verifiers.graph_verify import verify_run
from voe.verifiers.labels import TaskLabels, read_run_steps
from voe.verifiers.metrics import clusters_of, score_trajectory, summarize, unplayed
from voe.versions import SCORES_SCHEMA_VERSION, write_schemas


def score_run(graph: Graph, run_dir: Path) -> tuple[dict[str, Any], list[TrajectoryScore]]:
    info = read_run_info(run_dir)
    package, content_hash = Path(info.package), info.content_hash
    views, _, answers, manifest = load_package(package)
    if not read_jsonl(run_dir / "trajectories.jsonl"):
        raise EmptyRun(f"{run_dir}: the run holds no trajectory (none of its {len(views)} tasks was played); "
                       "nothing to score")
    settle(graph)
    if manifest.content_hash != content_hash:
        raise InputError("the package changed since this run (content hash differs); re-run it", path=str(package))
    held = graph.query("verifiers/package_tasks", package=content_hash)[0]["tasks"]
    if held != len(views):
        raise InputError(f"the graph holds {held} of this package's {len(views)} tasks; run `voe compile` on the "
                         "graph the package came from before scoring", path=str(package))
    horizons = {v.task_id: v.horizon for v in views}
    # the cluster of the clustered intervals: tasks linked by a workflow or a gold fact
    workflows = clusters_of({v.task_id: (v.workflow_id, answers[v.task_id].gold_facts) for v in views})
    verdicts = {v.trajectory_id: v for v in verify_run(graph, run_dir)}
    # the codebook's efficiency labels are read from the step labels, not computed a second way
    labels = {v.task_id: TaskLabels(v, answers[v.task_id]) for v in views}
    steps = read_run_steps(run_dir, content_hash)
    scores = [score_trajectory(tr, verdicts[tr["trajectory_id"]], answers[tr["task_id"]], horizons[tr["task_id"]],
                               steps=labels[tr["task_id"]].steps(steps.get(tr["trajectory_id"], [])),
                               cluster=workflows[tr["task_id"]])
              for tr in read_jsonl(run_dir / "trajectories.jsonl")]
    scores += unplayed(views, answers, info.run_id, info.passes, {(s.task_id, s.pass_index) for s in scores},
                       workflows)
    summary = summarize(scores, info.policy, info.passes)
    audit = write_audit(run_dir, package)  # checked again here: a run written by another voe, or edited since
    summary["audit"] = {**audit.model_dump(exclude={"leaks"}), "leaks": len(audit.leaks), "line": audit.line()}
    summary["run_id"] = info.run_id
    summary["schema_version"] = SCORES_SCHEMA_VERSION
    # what the package can tell apart (its manifest's smallest detectable difference), for the report to state
    summary["package"] = {"content_hash": content_hash,
                          "detectable_difference": manifest.counts.get("detectable_difference")}
    # what was scored: `voe report` reads the scores back only while the run is the one scored
    summary["trajectories_sha256"] = file_sha256(run_dir / "trajectories.jsonl")
    if info.calls is not None:  # an agent run: what it cost
        summary["usage"] = {"calls": info.calls, "tokens_in": info.tokens_in, "tokens_out": info.tokens_out,
                            "cost": info.cost}
    (run_dir / "scores.jsonl").write_text("".join(json.dumps(s.model_dump()) + "\n" for s in scores))
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    write_schemas(run_dir, "scores", (("score", TrajectoryScore),))
    return summary, scores


