"""Runs and scores as pandas DataFrames, for analysis in a notebook (the `dataframes` extra: pip install
'voe-evidence[dataframes]'). Reads the run folder only (what `voe run` and `voe score` wrote); no Neo4j."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from voe.artifacts.scores import load_scored
from voe.errors import InputError, UsageError


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as exc:
        raise UsageError("DataFrames need pandas: pip install 'voe-evidence[dataframes]'") from exc
    return pandas


def trajectories(run_dir: Path) -> Any:
    """One row per trajectory (trajectories.jsonl): task, pass, steps, requested, terminal class, payload, end."""
    path = run_dir / "trajectories.jsonl"
    if not path.is_file():
        raise InputError("not a run folder (no trajectories.jsonl); create one with `voe run`", path=str(run_dir))
    return _pandas().DataFrame([json.loads(line) for line in path.read_text().splitlines() if line])


def scores(run_dir: Path) -> Any:
    """One row per scored trajectory (scores.jsonl), with the run's policy: valid, action valid, requests,
    regret, cost score, codebook label, family, cluster."""
    summary, rows = load_scored(run_dir)
    frame = _pandas().DataFrame([s.model_dump() for s in rows])
    frame.insert(0, "policy", summary["policy"])
    return frame
