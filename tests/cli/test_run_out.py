"""`voe run --out`: an existing run is refused unless --force replaces it, Ctrl-C exits 130 and leaves nothing
half-written (an older run in --out stays whole), and a run is swapped in only once complete."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

SLOW = """
import time


def act(task, history, rng):
    time.sleep(0.2)
    return {"action": "abstain_or_escalate"}
"""


def _interruptible() -> None:
    """Ctrl-C as a user's terminal delivers it: a suite started in the background of a non-interactive shell (`cmd &`)
    inherits SIGINT ignored, and a program keeps an ignored SIGINT ignored, as nohup relies on."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def voe(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "voe.cli", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600)


def test_an_existing_run_is_refused_unless_forced(package: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert voe("run", str(package), "--policy", "random", "--out", str(out), cwd=tmp_path).returncode == 0
    first = (out / "run.json").read_bytes()
    (out / "scores.jsonl").write_text("{}\n")  # what `voe score` wrote into the older run

    again = voe("run", str(package), "--policy", "refuse_all", "--out", str(out), cwd=tmp_path)
    assert again.returncode == 2 and f"{out} exists and is not empty: --force replaces it" in again.stderr
    assert (out / "run.json").read_bytes() == first and again.stdout == ""

    forced = voe("run", str(package), "--policy", "refuse_all", "--out", str(out), "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert json.loads((out / "run.json").read_text())["policy"] == "refuse_all"
    assert not (out / "scores.jsonl").exists()  # the older run's scores went with it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # nothing staged or set aside is left

    resumed = voe("run", str(package), "--policy", "random", "--out", str(out), "--resume", cwd=tmp_path)
    assert resumed.returncode == 2 and "--resume continues an agent run" in resumed.stderr


def test_ctrl_c_exits_130_and_leaves_the_older_run_whole(package: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert voe("run", str(package), "--policy", "random", "--out", str(out), cwd=tmp_path).returncode == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    (tmp_path / "slow.py").write_text(SLOW)
    proc = subprocess.Popen([sys.executable, "-m", "voe.cli", "run", str(package), "--policy", "python:slow:act",
                             "--out", str(out), "--force"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_interruptible)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob(".run.*.partial")) and time.monotonic() < deadline:
        time.sleep(0.1)  # the new run is being written aside
    assert list(tmp_path.glob(".run.*.partial")), "the run never started"
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    # a python: run can last hours: what it finished is kept beside the older run, for --resume, never in it
    kept = tmp_path / ".run.resumable.partial"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".run.resumable.partial", "run", "slow.py"]
    assert (kept / "run.plan.json").is_file() and not (kept / "run.json").exists()
    again = voe("run", str(package), "--policy", "python:slow:act", "--out", str(out), cwd=tmp_path)
    assert again.returncode == 2 and "--resume continues" in again.stderr
    resumed = voe("run", str(package), "--policy", "python:slow:act", "--out", str(out), "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "slow.py"]
    assert json.loads((out / "run.json").read_text())["policy"] == "python:slow:act"
