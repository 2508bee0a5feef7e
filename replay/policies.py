"""Deterministic baselines. `reference` is the authored decision policy: it reads the verifier-only answer
and is valid on every task by construction; the others are the null policies of the release gate."""

from __future__ import annotations

import random
from typing import Any

from voe.artifacts.package import TERMINALS, Action, TaskAnswer, TaskView
from voe.replay.registry import register


def reference(view: TaskView, answer: TaskAnswer, history: list[dict[str, Any]], rng: random.Random) -> dict[str, Any]:
    step = answer.reference[len(history)]
    if step.evidence_id is not None:
        return {"action": step.action.value, "evidence_id": step.evidence_id}
    return {"action": step.action.value, "payload": list(step.payload or [])}


def request_everything(view: TaskView, answer: TaskAnswer, history: list[dict[str, Any]],
                       rng: random.Random) -> dict[str, Any]:
    if len(history) < len(view.menu):
        entry = view.menu[len(history)]
        return {"action": entry.request_action.value, "evidence_id": entry.evidence_id}
    pulled = [h["evidence_id"] for h in history if h["outcome"] == "revealed"]
    return {"action": Action.SUBMIT_RISK_PACKET.value, "payload": pulled}


def submit_all(view: TaskView, answer: TaskAnswer, history: list[dict[str, Any]], rng: random.Random) -> dict[str, Any]:
    return {"action": Action.SUBMIT_RISK_PACKET.value, "payload": [e.evidence_id for e in view.menu]}


def refuse_all(view: TaskView, answer: TaskAnswer, history: list[dict[str, Any]], rng: random.Random) -> dict[str, Any]:
    return {"action": Action.ABSTAIN_OR_ESCALATE.value}


def random_policy(view: TaskView, answer: TaskAnswer, history: list[dict[str, Any]],
                  rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.6 and len(history) < view.horizon - 1:
        entry = rng.choice(view.menu)
        return {"action": entry.request_action.value, "evidence_id": entry.evidence_id}
    terminal = rng.choice(TERMINALS)
    pulled = sorted({h["evidence_id"] for h in history if h.get("evidence_id")})
    payload = [e for e in pulled if rng.random() < 0.5]
    return {"action": terminal.value, "payload": payload}


class _Hidden:
    """Stands in for the answer given to non-reference policies: any attribute access is a bug."""

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"policies other than reference may not read answer.{name}")


NO_ANSWER: Any = _Hidden()

register("reference", reference, kind="reference",
         about="replays the verifier-only reference path (the only policy given the answers)")
register("request_everything", request_everything, kind="baseline", about="requests every menu entry, then submits what it got")
register("submit_all", submit_all, kind="baseline", about="submits every menu entry at once")
register("refuse_all", refuse_all, kind="baseline", about="abstains or escalates at once")
register("random", random_policy, kind="baseline", about="random requests, then a random terminal and payload")
