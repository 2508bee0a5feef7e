"""Runs and scores as DataFrames (the `dataframes` extra), from the run folder alone."""

from __future__ import annotations

import json
from pathlib import Path

from voe.graph import Graph
from voe.replay.runner import run_policy
from voe.verifiers.frames import scores, trajectories
from voe.verifiers.score import score_run


def test_trajectories_and_scores_as_frames(package: Path, _session_graph: Graph, tmp_path: Path) -> None:
    run_policy(package, "random", 2, 5, tmp_path / "run")
    summary, scored = score_run(_session_graph, tmp_path / "run")
    frame = scores(tmp_path / "run")
    assert len(frame) == len(scored) == summary["tasks"] * 2
    assert set(frame["policy"]) == {"random"}
    assert frame["valid"].mean() == summary["evidence_grounded_valid"]["mean"]
    lines = (tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()
    tr = trajectories(tmp_path / "run")
    assert list(tr["trajectory_id"]) == [json.loads(line)["trajectory_id"] for line in lines]
