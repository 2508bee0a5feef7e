"""What `voe score` writes into a run folder (summary.json, scores.jsonl) and the verdict of one trajectory; the
reader `voe report` uses, with no Neo4j."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from voe.errors import InputError
from voe.versions import SCORES_SCHEMA_VERSION, check


class Verdict(BaseModel):
    trajectory_id: str
    task_id: str
    action_valid: bool
    payload_bound: bool
    grounded: bool
    valid: bool


class TrajectoryScore(BaseModel):
    trajectory_id: str
    task_id: str
    family: str
    pass_index: int
    valid: bool
    action_valid: bool
    requests: int
    useful_requests: int
    regret: int
    cost_score: float
    over_submit: bool
    acquired_any: bool | None
    acquired_all: bool | None
    label: str
    cluster: str = ""  # the unit of dependence for clustered intervals (clusters_of); "" = the task alone


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_scored(run_dir: Path) -> tuple[dict[str, Any], list[TrajectoryScore]]:
    """The summary and per-trajectory scores `voe score` wrote into `run_dir`, with no Neo4j: `voe report` reads
    these. Refused when the run was never scored, or changed since (its trajectories differ from the scored ones)."""
    summary_path, scores_path = run_dir / "summary.json", run_dir / "scores.jsonl"
    if not (run_dir / "run.json").is_file():
        raise InputError("not a run folder (no run.json); create one with `voe run`", path=str(run_dir))
    if not summary_path.is_file() or not scores_path.is_file():
        raise InputError(f"the run is not scored yet; run `voe score {run_dir}` first", path=str(run_dir))
    try:
        summary = json.loads(summary_path.read_text())
        scores = [TrajectoryScore.model_validate_json(line) for line in scores_path.read_text().splitlines() if line]
    except ValueError as exc:  # JSON or validation: a damaged score file, not a crash
        raise InputError(f"the scores are unreadable ({exc}); run `voe score {run_dir}` again", path=str(run_dir)) from exc
    check("scores", summary.get("schema_version") if isinstance(summary, dict) else None, SCORES_SCHEMA_VERSION,
          str(summary_path))
    scored = summary.get("trajectories_sha256")
    if scored != file_sha256(run_dir / "trajectories.jsonl"):
        why = "was scored by an older voe" if scored is None else "changed since it was scored"
        raise InputError(f"the run {why}; run `voe score {run_dir}` again", path=str(run_dir))
    return summary, scores
