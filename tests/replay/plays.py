"""Scripted plays shared by the tests of the agent surfaces (MCP, Inspect): the moves of each task, the same moves
as a `python:` policy, and the comparison of two runs made of them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from voe.artifacts.package import load_package
from voe.jsonl import read_jsonl
from voe.replay.agent import tool_action
from voe.replay.runner import run_policy

# a move: {"action": NAME, ...arguments} is one tool call; {"text": ...} a turn without one; {"calls": [move, ...]}
# a turn with several tool calls (the first is acted on)
Move = dict[str, Any]


def reference_plans(package: Path, *, detours: bool = False) -> dict[str, list[Move]]:
    """The reference's moves on every other task (entry ids, as a client sends them), an abstention elsewhere;
    with `detours`, the abstention comes after a text reply, an id on no menu, a turn of two calls and a
    duplicate request — every plumbing outcome an agent surface must record as the environment does."""
    views, _, answers, _ = load_package(package)
    plans: dict[str, list[Move]] = {}
    for i, view in enumerate(views):
        entry = {e.evidence_id: e.entry_id for e in view.menu}
        if i % 2:
            first = view.menu[0]
            request = {"action": first.request_action.value, "evidence_id": first.entry_id}
            plans[view.task_id] = ([{"text": "Let me think about the menu first."},
                                    {"action": first.request_action.value, "evidence_id": "E999"},
                                    {"calls": [request, {"action": "abstain_or_escalate"}]},
                                    dict(request)] if detours else []) + [{"action": "abstain_or_escalate"}]
            continue
        moves: list[Move] = []
        for step in answers[view.task_id].reference:
            if step.evidence_id is not None:
                moves.append({"action": step.action.value, "evidence_id": entry[step.evidence_id]})
            elif step.action.value == "abstain_or_escalate":
                moves.append({"action": "abstain_or_escalate"})
            else:
                moves.append({"action": step.action.value, "payload": sorted(entry[p] for p in step.payload or [])})
        plans[view.task_id] = moves
    return plans


def arguments(move: Move) -> dict[str, Any]:
    return {k: v for k, v in move.items() if k != "action"}


def environment_action(move: Move) -> Any:
    """What the environment receives for a move, by the rule every agent surface follows (replay/agent.py)."""
    if "text" in move:
        return move["text"]
    first = move["calls"][0] if "calls" in move else move
    return tool_action(first["action"], json.dumps(arguments(first)))


def play_as_python_policy(package: Path, plans: dict[str, list[Move]], folder: Path, out: Path) -> None:
    """The same moves as a `python:` policy (a module written to `folder`, which must be the working directory)."""
    actions = {t: [environment_action(m) for m in moves] for t, moves in plans.items()}
    (folder / "plays.py").write_text(f"PLAN = {json.dumps(actions)}\n\n\ndef act(task, history, rng):\n"
                                     "    return PLAN[task.task_id][len(history)]\n")
    run_policy(package, "python:plays:act", 1, 0, out)


def same_run(a: Path, b: Path) -> None:
    """Two runs hold the same steps, observations and trajectories but for their ids and policy names."""
    strip = ("trajectory_id", "policy")
    for name in ("steps.jsonl", "trajectories.jsonl", "observations.jsonl"):
        rows_a = [{k: v for k, v in r.items() if k not in strip} for r in read_jsonl(a / name)]
        rows_b = [{k: v for k, v in r.items() if k not in strip} for r in read_jsonl(b / name)]
        assert rows_a == rows_b, name


def verifier_only(package: Path) -> set[str]:
    """Strings of the answers file that no policy-visible file holds: none may reach an agent surface."""
    _, _, answers, _ = load_package(package)
    visible = (package / "tasks.jsonl").read_text() + (package / "evidence.jsonl").read_text()
    secrets = {a.moment_id for a in answers.values()} | {a.decision for a in answers.values()}
    secrets |= {a.family.value for a in answers.values()} | {f for a in answers.values() for f in a.gold_facts}
    return {s for s in secrets if s not in visible}


def leaky_copy(package: Path, to: Path) -> tuple[str, str]:
    """A copy of `package` whose first task names its own family in its question (as a compiler that leaks would
    write it): every run of it must fail its audit. Returns that task's id and family."""
    shutil.copytree(package, to)
    _, _, answers, _ = load_package(package)
    lines = (to / "tasks.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    family = answers[first["task_id"]].family.value
    first["question"] += f" (this is a {family} task)"
    (to / "tasks.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    return first["task_id"], family
