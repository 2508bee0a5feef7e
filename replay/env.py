"""The replay environment: `reset(task)` and `step(action)` over the seven actions, realized-only.

A request returns the observation the package holds for the item (`archived`, `referenced`, or
`unavailable` with what the archive says of it); nothing is generated. An observation larger than the budget
is shown a page at a time (voe/artifacts/observations.py): the same request with `page: k` reads page k of an item
already pulled, with the outcome `page`, spending no step of the horizon (and, pulling nothing, nothing of the cost
score); a page read before is a `duplicate`. Plumbing outcomes are recorded as such: `parse_error` (not an action
object), `off_menu` (an unknown action, an evidence id not on the menu, the wrong request action for it, or a page
the item does not have), `duplicate` (an evidence already pulled, or a page already read; three in a row end the
episode as `duplicate_loop`) and `horizon_exhausted`.
"""

from __future__ import annotations

import json
from typing import Any

from voe.artifacts.observations import page_of
from voe.artifacts.package import REQUESTS, TERMINALS, Action, EvidenceObject, TaskView
from voe.artifacts.run import End, Outcome, StepRecord, TrajectorySummary

DUPLICATE_LIMIT = 3


class ReplayEnv:
    def __init__(self, evidence: dict[str, EvidenceObject]) -> None:
        self.evidence = evidence

    def reset(self, task: TaskView, trajectory_id: str, policy: str = "", pass_index: int = 0) -> dict[str, Any]:
        self.task = task
        self.menu = {e.evidence_id: e for e in task.menu}
        self.by_entry = {e.entry_id: e for e in task.menu}
        self.tid = trajectory_id
        self.t = 0
        self.requested: list[str] = []
        self.read: dict[str, set[int]] = {}  # the pages of each pulled item shown so far
        self.page_steps = 0  # steps that read a further page: free of the horizon
        self.dup_run = 0
        self.done = False
        self.steps: list[StepRecord] = []
        self.plumbing = {"parse_error": 0, "off_menu": 0, "duplicate": 0}
        self.summary = TrajectorySummary(trajectory_id=trajectory_id, task_id=task.task_id, policy=policy,
                                         pass_index=pass_index, steps=0, requested=[], terminal_class=None, payload=[],
                                         end="running", plumbing=self.plumbing)
        return task.model_dump(mode="json")

    def _record(self, raw: Any, outcome: Outcome, **kw: Any) -> StepRecord:
        rec = StepRecord(trajectory_id=self.tid, task_id=self.task.task_id, t=self.t, raw=raw, outcome=outcome, **kw)
        self.steps.append(rec)
        self.t += 1
        return rec

    def step(self, raw: Any) -> tuple[StepRecord, bool]:
        if self.done:
            raise RuntimeError("episode is over; call reset()")
        action = raw
        if isinstance(raw, str):
            try:
                action = json.loads(raw)
            except json.JSONDecodeError:
                action = None
        if not isinstance(action, dict) or not isinstance(action.get("action"), str):
            self.plumbing["parse_error"] += 1
            self.dup_run = 0
            return self._finish_if_horizon(self._record(raw, "parse_error"))
        name = action["action"]
        if name in {a.value for a in REQUESTS}:
            self.summary.request_steps += 1
            ref = action.get("evidence_id")
            entry = self.menu.get(ref) if isinstance(ref, str) else None
            entry = entry or (self.by_entry.get(ref) if isinstance(ref, str) else None)
            if entry is None or entry.request_action.value != name:
                self.plumbing["off_menu"] += 1
                self.dup_run = 0
                return self._finish_if_horizon(self._record(raw, "off_menu", action=name,
                                                            evidence_id=ref if isinstance(ref, str) else None))
            eid = entry.evidence_id
            page = action.get("page")
            if page is not None and (isinstance(page, bool) or not isinstance(page, int)):
                self.plumbing["parse_error"] += 1
                self.dup_run = 0
                return self._finish_if_horizon(self._record(raw, "parse_error", action=name, evidence_id=eid))
            obj = self.evidence.get(eid) or EvidenceObject(evidence_id=eid, status="unavailable")
            shown = page_of(obj, page or 0)
            if shown is None:  # no such page of this item
                self.plumbing["off_menu"] += 1
                self.dup_run = 0
                return self._finish_if_horizon(self._record(raw, "off_menu", action=name, evidence_id=eid,
                                                            page=page))
            if eid in self.requested and page is not None and page not in self.read[eid]:
                self.read[eid].add(page)
                self.page_steps += 1
                return self._record(raw, "page", action=name, evidence_id=eid, page=page, observation=shown), False
            if eid in self.requested:
                self.plumbing["duplicate"] += 1
                self.dup_run += 1
                rec = self._record(raw, "duplicate", action=name, evidence_id=eid, page=page)
                if self.dup_run >= DUPLICATE_LIMIT:
                    return rec, self._end("duplicate_loop")
                return self._finish_if_horizon(rec)
            self.dup_run = 0
            self.requested.append(eid)
            self.read[eid] = {page or 0}
            outcome: Outcome = "unavailable" if obj.status == "unavailable" else "revealed"
            return self._finish_if_horizon(self._record(raw, outcome, action=name, evidence_id=eid, page=page,
                                                        observation=shown))
        if name in {a.value for a in TERMINALS}:
            payload = action.get("payload", [])
            if payload is None:
                payload = []
            if not isinstance(payload, list) or not all(isinstance(p, str) for p in payload):
                self.plumbing["parse_error"] += 1
                return self._finish_if_horizon(self._record(raw, "parse_error", action=name))
            resolved = [self.by_entry[p].evidence_id if p in self.by_entry else p for p in payload]
            if name == Action.ABSTAIN_OR_ESCALATE:
                resolved = []
            rec = self._record(raw, "terminal", action=name, payload=resolved)
            self.summary.terminal_class, self.summary.payload = name, resolved
            return rec, self._end("terminal")
        self.plumbing["off_menu"] += 1
        self.dup_run = 0
        return self._finish_if_horizon(self._record(raw, "off_menu", action=name))

    def _finish_if_horizon(self, rec: StepRecord) -> tuple[StepRecord, bool]:
        if self.t - self.page_steps >= self.task.horizon:  # pages read are free of the horizon
            return rec, self._end("horizon_exhausted")
        return rec, False

    def stop(self, how: End) -> None:
        """End the episode from outside the policy's actions (an agent whose context is full)."""
        self._end(how)

    def _end(self, how: End) -> bool:
        self.done = True
        self.summary.end = how
        self.summary.steps = self.t
        self.summary.pages = self.page_steps
        self.summary.requested = list(self.requested)
        self.summary.plumbing = dict(self.plumbing)
        return True
