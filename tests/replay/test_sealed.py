"""`python:` policies are sealed (DESIGN §4, issue 29): a policy that hunts for the answers from where it runs
finds none, and scores as if it could not look.

The hunting policy tries what a policy with a shell would: answers.jsonl by relative paths, the package's own
absolute path (written into the module, as a user who knows where the package is would), a walk up every parent
folder of its working folder and of its own file, every environment variable, the local Neo4j over Bolt, and
the runner's process; it looks for the value labels of `voe label` (PKG-labels, beside the package) the same
ways. When it finds an answer it submits it; when it does not, it abstains.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import pytest

from voe.artifacts.package import load_package
from voe.config import Neo4jSettings
from voe.replay.runner import run_policy
from voe.replay.sealed import PolicyFailed, SealedPolicy, namespaces_available
from voe.verifiers.labels import label_package, labels_folder

HUNTER = '''
import json, os
from pathlib import Path

PACKAGE = {package!r}
BOLT = {bolt!r}
FOUND = []


def _answers():
    candidates = [Path("answers.jsonl"), Path("../answers.jsonl"), Path("pkg/answers.jsonl"),
                  Path(PACKAGE) / "answers.jsonl", Path(PACKAGE) / "manifest.json"]
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        for folder in (start, *start.parents):
            candidates += [folder / "answers.jsonl", folder / "pkg" / "answers.jsonl"]
    for value in os.environ.values():
        if os.sep in value:
            candidates.append(Path(value) / "answers.jsonl")
    try:
        candidates.append(Path("/proc", str(os.getppid()), "cwd") / "pkg" / "answers.jsonl")
    except OSError:
        pass
    for c in candidates:
        try:
            text = c.read_text()
        except OSError:
            continue
        FOUND.append(str(c))
        return {{json.loads(line)["task_id"]: json.loads(line) for line in text.splitlines()
                if line.strip() and "task_id" in line}}
    return {{}}


def _labels():
    """The value labels `voe label` writes beside the package (PKG-labels): as secret as the answers."""
    places = [Path("pkg-labels/states.jsonl"), Path(PACKAGE + "-labels") / "states.jsonl",
              Path(PACKAGE) / "labels" / "states.jsonl"]
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        places += [folder / "pkg-labels" / "states.jsonl" for folder in (start, *start.parents)]
    for place in places:
        try:
            place.read_text()
        except OSError:
            continue
        return True
    return False


def _bolt():
    host, port = BOLT
    try:
        socket_ = __import__("socket").create_connection((host, port), timeout=1)
    except OSError:
        return False
    socket_.close()
    return True


def act(task, history, rng):
    answers = _answers()
    leaked = [k for k in os.environ if k.startswith(("NEO4J", "OPENAI", "VOE"))]
    if answers.get(task.task_id):
        gold = answers[task.task_id]
        pulled = {{h["evidence_id"] for h in history}}
        for step in gold["reference"]:
            if step.get("evidence_id") and step["evidence_id"] not in pulled:
                entry = next(e for e in task.menu if e.evidence_id == step["evidence_id"])
                return {{"action": entry.request_action.value, "evidence_id": step["evidence_id"]}}
        return {{"action": gold["reference_class"], "payload": gold["reference_payload"]}}
    if _labels():
        return {{"action": "flag_source_defect", "payload": ["leak:labels"]}}
    if leaked or _bolt():
        return {{"action": "flag_source_defect", "payload": ["leak:" + ",".join(leaked)]}}
    return {{"action": "abstain_or_escalate"}}
'''


def test_a_policy_that_hunts_for_the_answers_finds_none(package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       neo4j_settings: Neo4jSettings) -> None:
    uri = str(neo4j_settings.uri)
    host, port = uri.rsplit("/", 1)[-1].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5):
        pass  # the runner's machine reaches the graph: the policy must not
    # the user's folder holds the package beside the policy, as in README's walk-through
    work = tmp_path / "work"
    work.mkdir()
    pkg = work / "pkg"
    os.symlink(package, pkg)
    # without namespaces (not Linux, no unshare) only the relative, environment and parent-walk routes are closed
    sealed = os.environ.get("CI") == "true" or namespaces_available()
    known = str(package) if sealed else "/nonexistent"
    (work / "hunter.py").write_text(HUNTER.format(package=known, bolt=(host, int(port)) if sealed else ("", 0)))
    monkeypatch.chdir(work)
    monkeypatch.setenv("NEO4J_URI", uri)
    monkeypatch.setenv("VOE_PACKAGE", str(package))
    label_package(package)  # PKG-labels/states.jsonl: the value labels are hunted for too
    assert (labels_folder(package) / "states.jsonl").is_file()
    info = run_policy(pkg, "python:hunter:act", 1, 0, tmp_path / "run")
    assert info.sealing == ("namespaces" if sealed else "process")
    views, _, answers, _ = load_package(package)
    steps = [json.loads(line) for line in (tmp_path / "run" / "steps.jsonl").read_text().splitlines()]
    actions = {s["action"] for s in steps}
    # one abstention per task and nothing else: no answer was found, no variable leaked, Bolt was out of reach
    assert len(steps) == len(views) and actions == {"abstain_or_escalate"}, [s["raw"] for s in steps][:3]
    abstains = sum(a.reference_class.value == "abstain_or_escalate" for a in answers.values())
    assert abstains < len(views)  # finding the answers would have shown


def test_the_sealed_policy_plays_as_the_baseline_it_imitates(package: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The same moves through the pipe give the same steps as the in-process baseline."""
    (tmp_path / "mine.py").write_text(
        "def act(task, history, rng):\n"
        "    asked = {h['evidence_id'] for h in history}\n"
        "    for e in task.menu:\n"
        "        if e.evidence_id not in asked:\n"
        "            return {'action': e.request_action.value, 'evidence_id': e.evidence_id}\n"
        "    return {'action': 'submit_risk_packet', 'payload': [h['evidence_id'] for h in history\n"
        "                                                      if h['outcome'] == 'revealed']}\n")
    monkeypatch.chdir(tmp_path)
    run_policy(package, "python:mine:act", 2, 5, tmp_path / "mine")
    run_policy(package, "request_everything", 2, 5, tmp_path / "base")

    def moves(run: Path) -> list[tuple[object, ...]]:
        rows = [json.loads(x) for x in (run / "steps.jsonl").read_text().splitlines()]
        return [(r["task_id"], r["t"], r["action"], r["evidence_id"], r["payload"], r["outcome"]) for r in rows]

    assert moves(tmp_path / "mine") == moves(tmp_path / "base")


STAGE_NAMES = '''
import importlib


def act(task, history, rng):
    found = []
    for name in ("verifiers", "compiler", "replay", "ingest", "export", "cli", "settings", "errors"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        found.append(name + "=" + str(getattr(module, "__file__", None) or list(module.__path__)))
    return {{"action": "submit_risk_packet", "payload": found or ["{nothing}"]}}
'''


def test_the_sealed_child_sees_voe_only_as_voe(package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The child's path holds the name `voe` alone: neither voe's stage folders nor its own modules are importable
    by their bare names, so a policy importing PyPI's `verifiers` (or any such name) gets that or nothing. Without
    namespaces a source checkout's editable install still puts the checkout on the path; with them only voe's
    own folders are there."""
    sealed = os.environ.get("CI") == "true" or namespaces_available()
    if not sealed:
        pytest.skip("needs Linux namespaces (unshare); CI has them")
    (tmp_path / "stage_names.py").write_text(STAGE_NAMES.format(nothing="none"))
    monkeypatch.chdir(tmp_path)
    info = run_policy(package, "python:stage_names:act", 1, 0, tmp_path / "run")
    assert info.sealing == "namespaces"
    steps = [json.loads(line) for line in (tmp_path / "run" / "steps.jsonl").read_text().splitlines()]
    payloads = {tuple(s["payload"] or []) for s in steps}
    assert payloads == {("none",)}, payloads


@pytest.mark.parametrize("code", [127, 126], ids=["interpreter_missing", "interpreter_not_executable"])
def test_an_interpreter_that_cannot_start_is_named_not_the_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  code: int) -> None:
    """The child's interpreter exits 127 (not there) or 126 (not executable) before its first line, as a venv's
    python linked into a folder the sandbox does not hold does: one line says the interpreter could not be started,
    naming it, the file it really is and the sealing, rather than blaming a policy that never ran. The interpreter
    here is a shim whose target is gone (or not executable), as a version manager's is."""
    sealing = "namespaces" if namespaces_available() else "process"  # decided with the real interpreter
    target = tmp_path / "not-executable"
    target.write_text("")
    shim = tmp_path / "bin" / "python3"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec {tmp_path / "gone" / "python3" if code == 127 else target} "$@"\n')
    shim.chmod(0o755)
    link = tmp_path / "python"
    link.symlink_to(shim)
    (tmp_path / "abstains.py").write_text("def act(task, history, rng):\n    return {'action': 'abstain_or_escalate'}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "executable", str(link))
    with pytest.raises(PolicyFailed) as caught:
        SealedPolicy("abstains:act", tmp_path)
    message = str(caught.value)
    assert "\n" not in message
    assert "interpreter could not be started" in message and f"exit {code}" in message, message
    assert f"interpreter {link} -> {shim}" in message and f"sealing {sealing}" in message, message
    assert "stopped (its process exited" not in message
