"""`voe report` on scored run folders (no Neo4j: it reads what `voe score` wrote): the trajectory scores reach the
per-task table of report.html, beside the plots."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tests.verifiers.test_metrics import _score
from voe.artifacts.scores import TrajectoryScore, file_sha256
from voe.cli import cli
from voe.verifiers.metrics import summarize
from voe.versions import SCORES_SCHEMA_VERSION


def _scored_run(folder: Path, policy: str, scores: list[TrajectoryScore]) -> Path:
    """The files `voe score` leaves in a run folder, as `load_scored` reads them."""
    folder.mkdir()
    (folder / "run.json").write_text("{}")
    (folder / "trajectories.jsonl").write_text("".join(f'{{"trajectory_id": "{s.trajectory_id}"}}\n' for s in scores))
    summary = {**summarize(scores, policy, 2), "schema_version": SCORES_SCHEMA_VERSION,
               "trajectories_sha256": file_sha256(folder / "trajectories.jsonl")}
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "scores.jsonl").write_text("".join(s.model_dump_json() + "\n" for s in scores))
    return folder


def test_voe_report_writes_the_per_task_table_from_the_runs_scores(tmp_path: Path) -> None:
    good = _scored_run(tmp_path / "good", "reference",
                       [_score(f"t{t}", True, cluster=f"w{t}", pass_index=p) for t in range(3) for p in range(2)])
    bad = _scored_run(tmp_path / "bad", "random",
                      [_score(f"t{t}", t == 1 and p == 0, cluster=f"w{t}", pass_index=p) for t in range(3) for p in range(2)])
    result = CliRunner().invoke(cli, ["report", str(good), str(bad), "--out", str(tmp_path / "report"),
                                      "--against", str(good)])
    assert result.exit_code == 0, result.output
    assert "report written to" in result.output
    page = (tmp_path / "report" / "report.html").read_text()
    table = page.split("class=sortable", 1)[1]
    assert table.count("<tr>") == 1 + 2 * 3  # the header, then one row per task and run
    # a task by its question where its package is at hand (here it is not: by its id); never by its family
    assert "<td>t1</td><td></td><td>" in table and "<td class=num data-v=0.5>1/2</td>" in table
    assert "source_integrity" not in table
    assert table.count("<td class=num data-v=1>2/2</td>") == 3 and table.count("data-v=0>0/2</td>") == 2
    assert "## Paired difference" in (tmp_path / "report" / "report.md").read_text()
    for plot in ("validity", "by_family", "codebook"):
        assert (tmp_path / "report" / f"{plot}.svg").is_file()


def test_voe_report_curator_adds_the_families_in_their_own_section(tmp_path: Path) -> None:
    run = _scored_run(tmp_path / "run", "reference", [_score(f"t{t}", True, cluster=f"w{t}") for t in range(2)])
    result = CliRunner().invoke(cli, ["report", str(run), "--out", str(tmp_path / "report"), "--curator"])
    assert result.exit_code == 0, result.output
    md = (tmp_path / "report" / "report.md").read_text()
    assert "## Curator's section" in md and "| t1 | t1 | source_integrity |" in md
    again = CliRunner().invoke(cli, ["report", str(run), "--out", str(tmp_path / "report")])
    assert again.exit_code != 0 and "--force replaces it" in str(again.exception)  # one --out rule
    forced = CliRunner().invoke(cli, ["report", str(run), "--out", str(tmp_path / "report"), "--force"])
    assert forced.exit_code == 0 and "Curator" not in (tmp_path / "report" / "report.md").read_text()
