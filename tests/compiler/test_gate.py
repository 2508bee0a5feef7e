"""The release gate of `voe compile` on graphs other than the shared package's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from voe.graph import Graph


def test_a_package_that_fails_the_gate_is_written_and_the_compile_exits_1(
    graph: Graph, archives: Path, cli_env: dict[str, str], tmp_path: Path
) -> None:
    """The challenge repository alone holds only clean build files: no decision in it needs judgment (a clean
    packet alone would be answered by "submit whatever the archive has"), so the compiler keeps no clean packet
    without a fact-resting task to balance it, the package is empty, and the gate says so."""
    out = tmp_path / "pkg"
    proc = subprocess.run([sys.executable, "-m", "voe.cli", "compile", "--archive", str(archives / "amb2025-template"),
                           "--out", str(out)], capture_output=True, text=True, env=cli_env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "fails the release gate" in proc.stderr
    assert "| tasks | empty |" in proc.stdout and "FAIL" in proc.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["gate"]["passed"] is False
    assert (out / "tasks.jsonl").read_text() == "" and (out / "answers.jsonl").read_text() == ""
    assert set(manifest["counts"]["families_absent"]) == {"source_integrity", "missing_evidence",
                                                          "calibration_sufficiency", "packet_submission",
                                                          "packet_escalation"}
    failing = [r for r in manifest["gate"]["rows"] if not r["passed"]]
    assert failing and all(r["rate"] > r["limit"] for r in failing if r["limit"] is not None)
