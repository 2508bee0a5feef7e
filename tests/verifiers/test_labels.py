"""Value and sufficiency labels (DESIGN §10, verifiers/labels.py): exact on small inline tasks, the invariants the
reference must meet on every task of the shared package, and the labels' predictions equal what `voe score`
gives a `python:` policy that plays a state and then a terminal, over hundreds of (state, action) pairs."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from voe.artifacts.package import TERMINALS, Action, MenuEntry, TaskAnswer, TaskView, load_package
from voe.graph import Graph
from voe.jsonl import read_jsonl
from voe.replay.runner import run_policy
from voe.verifiers.labels import StateLabel, TaskLabels, label_package
from voe.verifiers.score import score_run


def _task(menu: list[str], horizon: int, **answer: Any) -> TaskLabels:
    view = TaskView(task_id="t", workflow_id="w", workflow_title="W", question="q", horizon=horizon,
                    actions=list(Action),
                    menu=[MenuEntry(entry_id=f"E{i}", evidence_id=e, kind="characterization", title=e,
                                    request_action=Action.REQUEST_CHARACTERIZATION) for i, e in enumerate(menu)])
    fields: dict[str, Any] = {"task_id": "t", "family": "packet_submission", "moment_id": "m", "binding": [],
                              "reference": [], "reference_class": "submit_risk_packet", "reference_payload": [],
                              "may_bind": {}, "decision": "d", "source_facts": [], **answer}
    return TaskLabels(view, TaskAnswer.model_validate(fields))


def _state(labels: TaskLabels, ids: list[str]) -> StateLabel:
    return labels.state(labels.mask(ids), labels.max_requests - len(ids))


def test_a_packet_of_two_needs_both_and_a_distractor_costs_its_regret() -> None:
    t = _task(["A", "B", "C"], 4, accepted_classes=["submit_risk_packet"], needed=["A", "B"], useful=["A", "B"],
              must_bind={"submit_risk_packet": ["A", "B"]}, may_bind={"submit_risk_packet": ["A", "B"]})
    empty = _state(t, [])
    assert not empty.sufficient and empty.cost_to_go == 2 and empty.optimal_return == 1.0
    items = {i.evidence_id: i for i in empty.items}
    assert items["A"].needed and items["A"].useful and items["A"].value == 0.0
    assert not items["C"].needed and not items["C"].useful and items["C"].value == -0.125  # one regret of 0.5/4
    assert {(a.action, a.evidence_id) for a in empty.optimal_actions} == {("request_characterization", "A"),
                                                                          ("request_characterization", "B")}
    both = _state(t, ["A", "B"])
    assert both.sufficient and both.cost_to_go == 0
    assert [(a.action, a.payload) for a in both.optimal_actions] == [("submit_risk_packet", ["A", "B"])]
    # a premature submit scores 0: its value is the whole optimal return lost
    grounded, valid, score = t.terminal(t.mask(["A"]), "submit_risk_packet", ["A"])
    assert (grounded, valid, score) == (False, False, 0)


def test_the_horizon_bounds_what_is_reachable() -> None:
    t = _task(["A", "B", "C"], 3, accepted_classes=["submit_risk_packet"], needed=["A", "B"], useful=["A", "B"],
              must_bind={"submit_risk_packet": ["A", "B"]})
    after_c = _state(t, ["C"])  # one request left: A and B cannot both be pulled
    assert after_c.cost_to_go is None and after_c.optimal_return == 0.0
    assert {i.evidence_id: i.value for i in _state(t, []).items}["C"] == -1.0
    assert not any(i.needed for i in after_c.items)  # nothing valid is reachable, so nothing is needed for it


def test_two_ways_to_a_valid_decision_make_neither_item_needed() -> None:
    t = _task(["A", "B"], 4, accepted_classes=["flag_source_defect", "localize_missing_evidence"], needed=[],
              useful=["A"], must_bind={"flag_source_defect": ["A"], "localize_missing_evidence": ["B"]},
              may_bind={"flag_source_defect": ["A"], "localize_missing_evidence": ["B"]})
    empty = _state(t, [])
    assert empty.cost_to_go == 1 and not any(i.needed for i in empty.items)
    assert all(i.useful for i in empty.items)  # either lies on a shortest path
    values = {i.evidence_id: i.value for i in empty.items}
    assert values == {"A": 0.0, "B": -0.125}  # B is valid too, but pulls a non-useful item and misses A
    # abstaining is never valid here: the empty state is not sufficient although abstain needs no payload
    assert not empty.sufficient


def test_a_trajectorys_steps_are_labelled_against_the_state_they_were_taken_in() -> None:
    from voe.artifacts.run import StepLine

    t = _task(["A", "B", "C"], 5, accepted_classes=["submit_risk_packet"], needed=["A"], useful=["A"],
              must_bind={"submit_risk_packet": ["A"]}, may_bind={"submit_risk_packet": ["A"]})

    def step(i: int, outcome: str, action: str, evidence: str | None = None,
             payload: list[str] | None = None) -> StepLine:
        return StepLine(trajectory_id="tr", task_id="t", t=i, raw={}, action=action, evidence_id=evidence,
                        payload=payload, outcome=outcome)  # type: ignore[arg-type]

    rows = t.steps([step(0, "revealed", "request_characterization", "A"),
                    step(1, "duplicate", "request_characterization", "A"),
                    step(2, "revealed", "request_characterization", "C"),
                    step(3, "terminal", "submit_risk_packet", payload=["A"])])
    assert [r.request for r in rows] == ["needed", "wasted", "wasted", None]
    assert [r.extra_request for r in rows] == [False, True, True, False]
    assert rows[2].value == -0.1  # C is a regret of 0.5/5
    assert rows[3].valid and rows[3].grounded and not rows[3].premature and rows[3].cost_score == 0.9
    assert rows[3].state == ["A", "C"] and rows[3].left == 1


# -- the shared package ---------------------------------------------------------------------------------------

def test_the_reference_walks_a_shortest_path_to_sufficiency_on_every_task(package: Path) -> None:
    views, _, answers, _ = load_package(package)
    for view in views:
        answer = answers[view.task_id]
        labels = TaskLabels(view, answer)
        pulls = [s.evidence_id for s in answer.reference if s.evidence_id]
        empty, final = _state(labels, []), _state(labels, pulls)
        assert final.sufficient, view.task_id
        assert not empty.sufficient or (not answer.needed and not answer.must_bind.get(answer.reference_class.value))
        assert empty.cost_to_go is not None and empty.cost_to_go + 1 == len(answer.reference), view.task_id
        assert empty.optimal_return == 1.0 and final.optimal_return == 1.0
        assert any(a.action == answer.reference_class.value for a in final.optimal_actions)
        assert labels.enumerated


def _plans(package: Path, rounds: int) -> list[dict[str, list[dict[str, Any]]]]:
    """For each round, a plan per task: pull a random state's items, then a terminal of a random class whose
    payload is drawn from that state (the class's must-bind items that were pulled, now and then one more)."""
    views, _, answers, _ = load_package(package)
    rng = random.Random(7)
    plans: list[dict[str, list[dict[str, Any]]]] = []
    for _ in range(rounds):
        plan: dict[str, list[dict[str, Any]]] = {}
        for view in views:
            size = rng.randint(0, min(len(view.menu), view.horizon - 1))
            pulled = rng.sample(view.menu, size)
            moves: list[dict[str, Any]] = [{"action": e.request_action.value, "evidence_id": e.entry_id}
                                           for e in pulled]
            terminal = rng.choice(TERMINALS)
            ids = {e.evidence_id for e in pulled}
            payload = sorted(set(answers[view.task_id].must_bind.get(terminal.value, [])) & ids)
            if ids and rng.random() < 0.3:
                payload = sorted(set(payload) | {rng.choice(sorted(ids))})
            moves.append({"action": terminal.value, "payload": payload})
            plan[view.task_id] = moves
        plans.append(plan)
    return plans


@pytest.mark.slow
def test_labels_predict_what_voe_score_gives_a_policy_that_plays_the_state_and_the_action(
        package: Path, _session_graph: Graph, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    views, _, answers, _ = load_package(package)
    by_task = {v.task_id: TaskLabels(v, answers[v.task_id]) for v in views}
    monkeypatch.chdir(tmp_path)
    checked = outcomes = 0
    seen: set[tuple[bool, float]] = set()
    for k, plan in enumerate(_plans(package, 8)):
        module = f"plays_{k}"
        (tmp_path / f"{module}.py").write_text(
            f"PLAN = {json.dumps(plan)}\n\n\ndef act(task, history, rng):\n    return PLAN[task.task_id][len(history)]\n")
        run = tmp_path / f"run{k}"
        run_policy(package, f"python:{module}:act", 1, 0, run)
        score_run(_session_graph, run)
        scores = {s["task_id"]: s for s in read_jsonl(run / "scores.jsonl")}
        info = label_package(package, tmp_path / f"labels{k}", [run])
        step_labels = [r for r in read_jsonl(tmp_path / f"labels{k}" / info.step_files[str(run)])
                       if r["outcome"] == "terminal"]
        assert not (run / "step_labels.jsonl").exists()  # the run folder is left as it was
        assert len(step_labels) == len(views)
        for row in step_labels:
            labels, moves = by_task[row["task_id"]], plan[row["task_id"]]
            pulled = [e.evidence_id for e in labels.view.menu for m in moves[:-1] if m.get("evidence_id") == e.entry_id]
            _, valid, _ = labels.terminal(labels.mask(pulled), moves[-1]["action"], moves[-1]["payload"])
            score = scores[row["task_id"]]
            assert (row["valid"], row["cost_score"]) == (valid, score["cost_score"]) == (score["valid"],
                                                                                           score["cost_score"])
            assert row["premature"] == (not labels.sufficient(labels.mask(pulled)))
            seen.add((valid, score["cost_score"]))
            checked += 1
        outcomes += sum(1 for r in step_labels if r["valid"])
    assert checked >= 150 and 0 < outcomes < checked and len(seen) >= 4  # valid and invalid, several costs


def test_labels_stay_on_the_verifier_side(package: Path, tmp_path: Path) -> None:
    before = {p.name: p.read_bytes() for p in package.iterdir() if p.is_file()}
    info = label_package(package, tmp_path / "labels")
    assert {p.name: p.read_bytes() for p in package.iterdir() if p.is_file()} == before  # the package is untouched
    states = list(read_jsonl(tmp_path / "labels" / "states.jsonl"))
    assert info.states == len(states) > 0 and info.not_enumerated == []
    visible = (package / "tasks.jsonl").read_text() + (package / "evidence.jsonl").read_text()
    for key in ("sufficient", "cost_to_go", "optimal_return", "optimal_actions", "needed"):
        assert f'"{key}"' not in visible
    schema = json.loads((tmp_path / "labels" / "schema" / "state_label.schema.json").read_text())
    assert schema["$id"].startswith("urn:voe:schema:labels:1:") and set(schema["properties"]) == set(states[0])


def test_voe_label_cli(package: Path, tmp_path: Path, cli_env: dict[str, str]) -> None:
    run = tmp_path / "run"
    run_policy(package, "random", 1, 3, run)
    proc = subprocess.run([sys.executable, "-m", "voe.cli", "label", str(package), "--runs", str(run), "--out",
                           str(tmp_path / "labels"), "--json"], capture_output=True, text=True, env=cli_env)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    steps = list(read_jsonl(run / "steps.jsonl"))
    assert info["runs"] == {str(run): len(steps)} and info["schema_version"] == 1
    assert json.loads((tmp_path / "labels" / "labels.json").read_text())["states"] == info["states"]
    bad = subprocess.run([sys.executable, "-m", "voe.cli", "label", str(package), "--runs", str(tmp_path)],
                         capture_output=True, text=True, env=cli_env)
    assert bad.returncode == 2 and "not a run folder" in bad.stderr and "Traceback" not in bad.stderr


def test_the_codebook_reads_a_valid_trajectorys_efficiency_from_its_step_labels() -> None:
    """Useful beyond needed: A suffices, B is useful too (missing it costs regret), C is a distractor."""
    from voe.artifacts.run import StepLine
    from voe.artifacts.scores import Verdict
    from voe.verifiers.metrics import score_trajectory

    t = _task(["A", "B", "C"], 5, accepted_classes=["submit_risk_packet"], needed=["A"], useful=["A", "B"],
              must_bind={"submit_risk_packet": ["A"]})

    def play(pulls: list[str]) -> str:
        steps = [StepLine(trajectory_id="tr", task_id="t", t=i, raw={}, action="request_characterization",
                          evidence_id=e, outcome="revealed") for i, e in enumerate(pulls)]
        steps.append(StepLine(trajectory_id="tr", task_id="t", t=len(pulls), raw={}, action="submit_risk_packet",
                              payload=["A"], outcome="terminal"))
        labels = t.steps(steps)
        assert labels[-1].valid
        verdict = Verdict(trajectory_id="tr", task_id="t", action_valid=True, payload_bound=True, grounded=True,
                          valid=True)
        tr = {"trajectory_id": "tr", "task_id": "t", "pass_index": 0, "requested": pulls,
              "terminal_class": "submit_risk_packet", "end": "terminal", "plumbing": {}}
        return score_trajectory(tr, verdict, t.answer, 5, steps=labels).label

    assert play(["A", "B"]) == play(["B", "A"]) == "reference_path"  # every useful item, nothing else
    assert play(["A"]) == "valid_inefficient_short"  # valid, but stopped before pulling B
    assert play(["A", "B", "C"]) == play(["C", "A"]) == "valid_inefficient_extra"  # a pull that lost value
