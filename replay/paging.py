"""Policies that read whole observations, over an environment that shows large ones a page at a time
(voe/artifacts/observations.py): `reading_whole(policy)` reads every further page of an item as soon as it is
pulled (free steps: no horizon, no cost) and gives the policy the history it was written for, one step per pull
with the item's whole observation. The gate's probes are registered through it (replay/registry.py), so paging
changes none of their decisions."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from voe.artifacts.observations import merged, unread
from voe.artifacts.package import TaskAnswer, TaskView

Policy = Callable[[TaskView, TaskAnswer, list[dict[str, Any]], random.Random], dict[str, Any]]
PULLED = ("revealed", "unavailable")


def next_page(history: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A request for the first page not yet read of an item pulled, or None."""
    read: dict[str, set[int]] = {}
    first: dict[str, dict[str, Any]] = {}
    for h in history:
        eid = h.get("evidence_id")
        if eid and h.get("outcome") in (*PULLED, "page"):
            read.setdefault(eid, set()).add(int(h.get("page") or 0))
            if h.get("outcome") in PULLED:
                first[eid] = h
    for eid, h in first.items():
        page = unread(h.get("observation") or {}, read[eid])
        if page is not None:
            return {"action": h["action"], "evidence_id": eid, "page": page}
    return None


def whole_history(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`history` without its page steps, each pull's observation the item's pages merged."""
    pages: dict[str, list[dict[str, Any]]] = {}
    for h in history:
        if h.get("evidence_id") and h.get("outcome") in (*PULLED, "page") and h.get("observation"):
            pages.setdefault(h["evidence_id"], []).append(h["observation"])
    out = []
    for h in history:
        if h.get("outcome") == "page":
            continue
        if h.get("outcome") in PULLED and h.get("evidence_id") in pages:
            h = {**h, "observation": merged(pages[h["evidence_id"]])}
        out.append(h)
    return out


def reading_whole(policy: Policy) -> Policy:
    def act(view: TaskView, answer: TaskAnswer, history: list[dict[str, Any]], rng: random.Random) -> dict[str, Any]:
        more = next_page(history)
        return more if more is not None else policy(view, answer, whole_history(history), rng)
    act.__name__ = getattr(policy, "__name__", "policy")
    act.__doc__ = policy.__doc__
    return act
