"""Observations a model can hold (issue 43): no page of the shared package is over the budget, every fact of a large
item is reachable by paging it, a page read spends no step of the horizon and nothing of the cost score, and the
gate's probes decide on whole observations as before (replay/paging.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from voe.artifacts.observations import OBSERVATION_BUDGET, merged, pages
from voe.artifacts.package import EvidenceObject, TaskView, load_package
from voe.replay.env import ReplayEnv
from voe.replay.paging import next_page, reading_whole, whole_history
from voe.replay.policies import NO_ANSWER


def _size(value: Any) -> int:
    return len(json.dumps(value, sort_keys=True, ensure_ascii=False))


def _large(package: Path) -> tuple[list[TaskView], dict[str, EvidenceObject], TaskView, EvidenceObject]:
    views, evidence, _, _ = load_package(package)
    paged = [e for e in evidence.values() if len(pages(e)) > 1]
    assert paged, "the shared package holds folders larger than a page"
    big = max(paged, key=lambda e: _size(e.model_dump(mode="json")))
    view = next(v for v in views if big.evidence_id in {e.evidence_id for e in v.menu})
    return views, evidence, view, big


def test_no_page_is_over_the_budget_and_the_pages_are_the_whole_item(package: Path) -> None:
    _, evidence, _, _ = _large(package)
    for obj in evidence.values():
        laid = pages(obj)
        whole = obj.model_dump(mode="json")
        if len(laid) == 1:
            assert laid == [whole]  # what fits is shown as it always was
            continue
        assert all(_size(p) <= OBSERVATION_BUDGET for p in laid), obj.evidence_id
        assert merged(reversed(laid)) == whole  # every fact and member, in the archive's order, none cut
        counts = laid[0]["page"]["counts"]
        assert counts["facts"] == len(whole["facts"]) and all(p["page"]["pages"] == len(laid) for p in laid)
        held = [i for p in laid for i in range(*p["page"]["holds"].get("facts", [0, 0]))]
        assert held == list(range(len(whole["facts"])))


def _request(view: TaskView, eid: str, **extra: Any) -> dict[str, Any]:
    action = next(e.request_action.value for e in view.menu if e.evidence_id == eid)
    return {"action": action, "evidence_id": eid, **extra}


def test_a_page_read_spends_no_step_a_page_read_twice_is_a_duplicate(package: Path) -> None:
    _, evidence, view, big = _large(package)
    env = ReplayEnv(evidence)
    env.reset(view, "paging")
    first, done = env.step(_request(view, big.evidence_id))
    header = first.observation["page"]
    assert first.outcome == "revealed" and header["index"] == 0 and header["pages"] >= 2 and not done
    shown = [first.observation]
    for k in range(1, header["pages"]):
        rec, done = env.step(_request(view, big.evidence_id, page=k))
        assert rec.outcome == "page" and rec.page == k and not done
        shown.append(rec.observation)
    assert merged(shown) == big.model_dump(mode="json")
    again, _ = env.step(_request(view, big.evidence_id, page=1))
    past, _ = env.step(_request(view, big.evidence_id, page=header["pages"]))
    assert again.outcome == "duplicate" and past.outcome == "off_menu"
    assert env.page_steps == header["pages"] - 1 and env.requested == [big.evidence_id]
    # the horizon counts every step but the pages: the episode ends after `horizon` of those
    while not env.done:
        env.step({"action": "not one"})
    assert env.summary.end == "horizon_exhausted" and env.summary.steps == view.horizon + env.page_steps
    assert env.summary.pages == header["pages"] - 1


def test_a_probe_reads_every_page_and_decides_on_the_whole_observation(package: Path) -> None:
    _, evidence, view, big = _large(package)
    seen: list[list[dict[str, Any]]] = []

    def probe(v: TaskView, answer: Any, history: list[dict[str, Any]], rng: Any) -> dict[str, Any]:
        seen.append(history)
        if not history:
            return _request(v, big.evidence_id)
        return {"action": "abstain_or_escalate"}

    act = reading_whole(probe)
    env = ReplayEnv(evidence)
    env.reset(view, "probe")
    history: list[dict[str, Any]] = []
    done = False
    while not done:
        rec, done = env.step(act(view, NO_ANSWER, history, None))
        history.append(rec.model_dump(mode="json"))
    assert [h["outcome"] for h in history].count("page") == len(pages(big)) - 1
    assert next_page(history) is None
    last = seen[-1]  # the probe saw one pull with the whole item, no page step
    assert [h["outcome"] for h in last] == ["revealed"] and last[0]["observation"] == big.model_dump(mode="json")
    assert whole_history(history[:-1]) == last  # what it was given before its terminal
