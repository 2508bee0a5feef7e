"""Sealed `python:` policies are bounded (issue 44): a policy that sleeps, allocates without end, burns CPU, answers
megabytes or JSON nested without end, or floods its output ends the trajectory it was playing with a recorded
outcome (`policy_timeout`, `policy_budget`) and the run goes on with a new process; killing the runner leaves no
policy process behind.

Each hostile policy misbehaves once (a marker in its own writable home folder, which outlives the killed child)
and abstains everywhere else, so a run is one overrun and a package of quick trajectories."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from voe.artifacts.package import load_package
from voe.graph import Graph
from voe.replay.runner import run_policy
from voe.replay.sealed import PolicyLimits
from voe.verifiers.score import score_run

ONCE = """
import os, sys
from pathlib import Path

def act(task, history, rng):
    marker = Path(os.environ["HOME"]) / "misbehaved"
    if not marker.exists():
        marker.write_text("1")
        misbehave()
    return {{"action": "abstain_or_escalate"}}

def misbehave():
{body}
"""

HOSTILE = {
    "sleeps": ("import time; time.sleep(3600)", "policy_timeout"),
    "allocates": ("hold = []\nwhile True: hold.append(bytearray(64 << 20))", "policy_budget"),
    "burns_cpu": ("while True: pass", "policy_budget"),
    "floods_stdout": ("while True: os.write(1, b'x' * (1 << 20))", "policy_budget"),
}

RETURNS = {  # policies whose misbehaviour is what they answer
    "answers_megabytes": ("x = 'y' * (64 << 20)\n        return {'action': 'submit_risk_packet', 'payload': [x]}",
                          "policy_budget"),
    "nests_without_end": ("x = []\n        for _ in range(100000): x = [x]\n        return {'action': "
                          "'submit_risk_packet', 'payload': x}", "policy_budget"),
}

RETURNING = """
import os
from pathlib import Path

def act(task, history, rng):
    marker = Path(os.environ["HOME"]) / "misbehaved"
    if not marker.exists():
        marker.write_text("1")
        {body}
    return {{"action": "abstain_or_escalate"}}
"""

LIMITS = PolicyLimits(step_timeout=3, memory=768 << 20, cpu_seconds=2)


def _policy(folder: Path, name: str) -> tuple[str, str]:
    if name in RETURNS:
        body, end = RETURNS[name]
        source = RETURNING.format(body=body)
    else:
        body, end = HOSTILE[name]
        source = ONCE.format(body=textwrap.indent(body, "    "))
    (folder / f"{name}.py").write_text(source)
    return f"python:{name}:act", end


def _ends(run: Path) -> list[str]:
    return [json.loads(line)["end"] for line in (run / "trajectories.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("name", ["sleeps", "allocates", "burns_cpu", "floods_stdout", "answers_megabytes",
                                  "nests_without_end"])
def test_a_hostile_policy_ends_its_trajectory_with_a_recorded_outcome_and_the_run_goes_on(
        package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    spec, end = _policy(tmp_path, name)
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    info = run_policy(package, spec, 1, 0, tmp_path / "run", limits=LIMITS)
    views, _, _, _ = load_package(package)
    ends = _ends(tmp_path / "run")
    assert info.trajectories == len(views) == len(ends)
    assert ends[0] == end and set(ends[1:]) == {"terminal"}, ends[:3]  # a new process played the rest
    assert info.limits is not None and info.limits["step_timeout"] == 3
    assert time.monotonic() - started < 60


def test_an_overrun_is_scored_under_its_own_label(package: Path, tmp_path: Path, _session_graph: Graph,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    spec, _ = _policy(tmp_path, "sleeps")
    monkeypatch.chdir(tmp_path)
    run_policy(package, spec, 1, 0, tmp_path / "run", limits=PolicyLimits(step_timeout=1))
    summary, scores = score_run(_session_graph, tmp_path / "run")
    assert summary["codebook"]["policy_timeout"] == 1
    assert [s.label for s in scores].count("policy_timeout") == 1 and not scores[0].valid


def test_what_a_policy_prints_to_standard_error_is_capped(package: Path, tmp_path: Path) -> None:
    (tmp_path / "loud.py").write_text(
        "import sys\n"
        "def act(task, history, rng):\n"
        "    print('z' * (4 << 20))\n"  # print() goes to standard error in the child
        "    return {'action': 'abstain_or_escalate'}\n")
    code = ("import sys; from pathlib import Path; from voe.replay.runner import run_policy; "
            "from voe.replay.sealed import PolicyLimits; "
            f"run_policy(Path({str(package)!r}), 'python:loud:act', 1, 0, Path({str(tmp_path / 'run')!r}), "
            "limits=PolicyLimits(stderr_bytes=100000))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.count("z") <= 100000 and "wrote more than 100000 bytes to standard error" in done.stderr
    assert set(_ends(tmp_path / "run")) == {"terminal"}


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _cmdline(pid: int) -> bytes:
    # a descendant may exit between the listing of /proc and this read
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes()
    except OSError:
        return b""


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_killing_the_runner_leaves_no_policy_process(package: Path, tmp_path: Path) -> None:
    (tmp_path / "sleepy.py").write_text("import time\ndef act(task, history, rng):\n    time.sleep(3600)\n")
    code = ("from pathlib import Path; from voe.replay.runner import run_policy; "
            "from voe.replay.sealed import PolicyLimits; "
            f"run_policy(Path({str(package)!r}), 'python:sleepy:act', 1, 0, Path({str(tmp_path / 'run')!r}), "
            "limits=PolicyLimits(step_timeout=3600))")
    runner = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        policy: set[int] = set()
        while time.monotonic() < deadline and not policy:
            time.sleep(0.2)
            policy = {p for p in _descendants(runner.pid)
                      if b"sealed_child" in _cmdline(p)} if _alive(runner.pid) else set()
        assert policy, "the policy's process did not start"
        everything = _descendants(runner.pid)
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(p) for p in everything):
            time.sleep(0.1)
        assert not [p for p in everything if _alive(p)]
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()


SLOW = """
import time

def act(task, history, rng):
    time.sleep(0.05)
    asked = {h["evidence_id"] for h in history}
    for e in task.menu[:2]:
        if e.evidence_id not in asked:
            return {"action": e.request_action.value, "evidence_id": e.evidence_id}
    return {"action": "submit_risk_packet", "payload": [e.entry_id for e in task.menu[:2]]}
"""


def test_a_python_run_killed_midway_resumes_to_the_run_an_uninterrupted_one_makes(
        package: Path, tmp_path: Path, cli_env: dict[str, str]) -> None:
    (tmp_path / "slow.py").write_text(SLOW)
    command = [sys.executable, "-m", "voe.cli", "run", str(package), "--policy", "python:slow:act", "--seed", "3",
               "-q", "--out"]
    runner = subprocess.Popen([*command, str(tmp_path / "run")], cwd=tmp_path, env=cli_env,
                              stderr=subprocess.DEVNULL)
    parts = tmp_path / ".run.resumable.partial" / "parts" / "log.jsonl"  # beside the run, swapped in once whole
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and runner.poll() is None:
        if parts.is_file() and len(parts.read_text().splitlines()) >= 3:
            break
        time.sleep(0.05)
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    kept = len(parts.read_text().splitlines())
    assert 3 <= kept < len(load_package(package)[0]) and not (tmp_path / "run").exists()
    refused = subprocess.run([*command, str(tmp_path / "run")], cwd=tmp_path, env=cli_env, capture_output=True,
                             text=True)
    assert refused.returncode == 2 and "--resume" in refused.stderr
    resumed = subprocess.run([*command, str(tmp_path / "run"), "--resume"], cwd=tmp_path, env=cli_env,
                             capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert not parts.parent.parent.exists()
    clean = subprocess.run([*command, str(tmp_path / "clean")], cwd=tmp_path, env=cli_env, capture_output=True,
                           text=True)
    assert clean.returncode == 0, clean.stderr
    for name in ("steps.jsonl", "observations.jsonl", "trajectories.jsonl"):
        assert (tmp_path / "run" / name).read_bytes() == (tmp_path / "clean" / name).read_bytes(), name
