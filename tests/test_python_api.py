"""`import voe` is the Python API (voe/api.py): help(voe) lists it, and docs/guide/python.md's session runs as
written against the test server (its paths rooted where the test puts them)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from voe.graph import Graph

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "guide" / "python.md"
API = ["compile", "export_crate", "export_training", "ingest_archives", "label", "report", "run", "score"]


def test_help_lists_the_api() -> None:
    proc = subprocess.run([sys.executable, "-c", "import voe; help(voe)"], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PAGER": "cat"})
    assert proc.returncode == 0, proc.stderr
    listed = set(re.findall(r"^    ([a-z_]+)\(", proc.stdout, flags=re.M))
    assert set(API) <= listed, listed
    # `import voe` alone loads no stage: the API is loaded on first use
    quiet = subprocess.run([sys.executable, "-c", "import sys, voe; print(sorted(m for m in sys.modules "
                            "if m.startswith(('voe.ingest', 'voe.compiler', 'voe.replay', 'voe.api'))))"],
                           capture_output=True, text=True)
    assert quiet.stdout.strip() == "[]"


def test_the_docs_session_runs_as_written(archives: Path, tmp_path: Path, cli_env: dict[str, str],
                                          _session_graph: Graph) -> None:
    _session_graph.clear()  # the session's graph is the one archive the example ingests
    _session_graph.apply_schema()
    (code,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    code = code.replace("../shared/archives", str(archives))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=cli_env, cwd=tmp_path,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "gate passed:" in lines[0] and lines[1].startswith("{'random':")
    assert lines[2].startswith("audit passed")
    assert "voe 0.1.0" in lines[3] and "Package" in lines[3]
    assert (tmp_path / "out" / "py-report" / "report.html").is_file()


def test_a_failed_audit_is_returned_by_run_and_score_not_raised(archives: Path, graph: Graph,
                                                                  tmp_path: Path) -> None:
    """Where `voe run` and `voe score` exit 1, `voe.run` and `voe.score` return the run with its audit failed
    (docs/guide/python.md): a notebook looks at the run; a clean run's audit passes."""
    import voe
    from tests.replay.plays import leaky_copy

    assert voe.ingest_archives(archives / "mds2-2525", graph=graph).errors == []
    voe.compile(tmp_path / "pkg", graph=graph)
    task_id, family = leaky_copy(tmp_path / "pkg", tmp_path / "leaky")

    ran = voe.run(tmp_path / "leaky", "random", tmp_path / "run")
    assert isinstance(ran, voe.RunResult) and ran.trajectories > 0
    assert not ran.audit.passed and ran.audit.line.startswith("audit FAILED: 1 message(s)")
    assert [(x.kind, x.trajectory_id.split("/")[-2]) for x in ran.audit.leaks] == [("family", task_id)]
    assert ran.audit.file == tmp_path / "run" / "audit.json" and family not in ran.audit.file.read_text()

    scored = voe.score(tmp_path / "run", graph=graph)
    assert not scored.audit.passed and scored.audit.line == scored.summary["audit"]["line"]
    assert scored.audit.leaks == ran.audit.leaks

    clean = voe.run(tmp_path / "pkg", "random", tmp_path / "clean")
    assert clean.audit.passed and clean.audit.line.startswith("audit passed") and clean.audit.leaks == []
