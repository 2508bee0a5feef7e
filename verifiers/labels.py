"""Value and sufficiency labels (DESIGN §10): for each task, every state an episode can reach within its horizon,
and for each step of a stored trajectory, what its state was worth and what its action gained or lost.

A state is the set of menu items pulled so far (evidence ids), with `left` requests still possible before the
terminal (a horizon of H steps allows H - 1 requests and one terminal; a wasted step — a duplicate, an off-menu or
unparseable action — uses one up). Every label comes from the verifier's own definitions (voe/artifacts/verdict.py,
the Python twin of the graph's verdict, and the cost score there):

- `sufficient(s)`: some terminal class with a payload drawn from `s` is evidence-grounded valid. A class's smallest
  payload is its `must_bind` set; any valid payload contains it and is allowed only if it is, so checking that one
  payload per accepted class decides sufficiency exactly.
- `cost_to_go(s)`: the fewest further requests before a sufficient state (None: none within the requests left).
- for an item `e` not in `s`: `needed` (a sufficient state is reachable from `s`, and none without `e`), `useful`
  (pulling `e` lies on a shortest path: `cost_to_go(s + e) = cost_to_go(s) - 1`), `value` = V(s + e) - V(s).
- V(s), the optimal return: the best cost score any continuation from `s` ends with (a terminal scores
  max(0, valid - 0.5 * regret / H) over the items pulled by then); `value` of a terminal is its score - V(s).
- the optimal actions at `s`: the requests and terminals (with their smallest valid payload) that reach V(s).

Values are computed in exact fractions and written as floats. Menus are small (the shared package: 2-6 items), so
every state is enumerated; a task whose states would pass STATE_LIMIT is labelled on the states its reference
and the given runs visit only, and says so (`enumerated: false`).
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from fractions import Fraction
from functools import lru_cache
from itertools import combinations
from math import comb
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from voe.artifacts.package import REQUESTS, TERMINALS, Action, TaskAnswer, TaskView, load_package
from voe.artifacts.run import StepLine, read_run_info
from voe.artifacts.verdict import cost_fraction, cost_score, verdict
from voe.jsonl import read_jsonl
from voe.versions import LABELS_SCHEMA_VERSION, write_schemas

STATE_LIMIT = 1 << 16  # states of one task enumerated at most (a menu of 16 items within a long horizon)


class ActionValue(BaseModel):
    action: str
    evidence_id: str | None = None  # a request's item
    payload: list[str] | None = None  # a terminal's smallest valid payload
    value: float  # Q(s, a) - V(s): 0 for an optimal action


class ItemLabel(BaseModel):
    evidence_id: str
    needed: bool
    useful: bool
    value: float


class StateLabel(BaseModel):
    """One reachable state of a task (verifier-only: never shown to a policy)."""

    task_id: str
    state: list[str]  # evidence ids pulled, sorted
    left: int  # requests still possible before the terminal
    sufficient: bool
    cost_to_go: int | None  # None: no sufficient state within the requests left
    optimal_return: float
    items: list[ItemLabel]  # every menu item not yet pulled (when a request is still possible)
    optimal_actions: list[ActionValue]


class StepLabel(BaseModel):
    """One step of a stored trajectory, labelled against the state it was taken in (verifier-only)."""

    trajectory_id: str
    task_id: str
    t: int
    action: str | None
    outcome: str
    state: list[str]  # what was pulled before this step
    left: int
    sufficient_before: bool
    extra_request: bool  # a request made when the state was already sufficient
    request: str | None  # a request's kind: needed, useful or wasted (a duplicate or off-menu one: wasted)
    value: float  # this action's Q - V(state): 0 when it was an optimal one
    best_value: float  # V(state), what the best continuation would have scored
    premature: bool | None = None  # a terminal from an insufficient state
    grounded: bool | None = None  # a terminal's verdict, check (3)
    valid: bool | None = None  # a terminal's verdict, all three checks
    cost_score: float | None = None  # a terminal's cost score


class TaskLabels:
    """The labels of one task, computed on demand and cached (a state is a bitmask over the menu)."""

    def __init__(self, view: TaskView, answer: TaskAnswer) -> None:
        self.view, self.answer = view, answer
        self.items: list[str] = [e.evidence_id for e in view.menu]
        self.bit = {eid: 1 << i for i, eid in enumerate(self.items)}
        self.horizon = view.horizon
        self.max_requests = max(0, view.horizon - 1)
        self.terminals = [a for a in view.actions if a in TERMINALS]
        self.requests_allowed = any(a in REQUESTS for a in view.actions)
        self.states = sum(comb(len(self.items), k) for k in range(min(len(self.items), self.max_requests) + 1))
        self.enumerated = self.states <= STATE_LIMIT
        self._suff = lru_cache(maxsize=None)(self._sufficient)
        self._ctg = lru_cache(maxsize=None)(self._cost_to_go)
        self._v = lru_cache(maxsize=None)(self._value)

    # -- sets and masks ---------------------------------------------------------------------------------------
    def mask(self, ids: Iterable[str]) -> int:
        m = 0
        for eid in ids:
            m |= self.bit.get(eid, 0)
        return m

    def ids(self, mask: int) -> list[str]:
        return sorted(eid for eid in self.items if mask & self.bit[eid])

    def _payload(self, action: Action) -> list[str]:
        return [] if action == Action.ABSTAIN_OR_ESCALATE else sorted(self.answer.must_bind.get(action.value, []))

    def terminal(self, mask: int, action: str, payload: Sequence[str]) -> tuple[bool, bool, Fraction]:
        """(grounded, valid, cost score) of a terminal from `mask`: the verifier's checks, the cost score."""
        pulled = self.ids(mask)
        action_valid, bound, grounded = verdict(action, payload, pulled, self.answer)
        valid = action_valid and bound and grounded
        return grounded, valid, cost_fraction(valid, pulled, self.answer.useful, self.horizon)

    # -- the three recursions ---------------------------------------------------------------------------------
    def _sufficient(self, mask: int) -> bool:
        return any(self.terminal(mask, a.value, self._payload(a))[1] for a in self.terminals)

    def sufficient(self, mask: int) -> bool:
        return bool(self._suff(mask))

    def _next(self, mask: int, left: int, banned: int = 0) -> list[int]:
        if left <= 0 or not self.requests_allowed:
            return []
        return [b for b in self.bit.values() if not mask & b and not banned & b]

    def _cost_to_go(self, mask: int, left: int, banned: int = 0) -> int | None:
        if self.sufficient(mask):
            return 0
        best: int | None = None
        for b in self._next(mask, left, banned):
            rest = self._ctg(mask | b, left - 1, banned)
            if rest is not None and (best is None or rest + 1 < best):
                best = rest + 1
        return best

    def cost_to_go(self, mask: int, left: int, banned: int = 0) -> int | None:
        result: int | None = self._ctg(mask, left, banned)
        return result

    def _terminal_best(self, mask: int) -> Fraction:
        return max((self.terminal(mask, a.value, self._payload(a))[2] for a in self.terminals), default=Fraction(0))

    def _value(self, mask: int, left: int) -> Fraction:
        best = self._terminal_best(mask)
        for b in self._next(mask, left):
            best = max(best, self._v(mask | b, left - 1))
        return best

    def value(self, mask: int, left: int) -> Fraction:
        result: Fraction = self._v(mask, left)
        return result

    # -- labels -----------------------------------------------------------------------------------------------
    def state(self, mask: int, left: int) -> StateLabel:
        v = self.value(mask, left)
        ctg = self.cost_to_go(mask, left)
        items: list[ItemLabel] = []
        optimal: list[ActionValue] = []
        for b in self._next(mask, left):
            eid = self.ids(b)[0]
            after = self.cost_to_go(mask | b, left - 1)
            gain = self.value(mask | b, left - 1) - v
            needed = ctg is not None and self.cost_to_go(mask, left, banned=b) is None
            useful = ctg is not None and ctg > 0 and after is not None and after == ctg - 1
            items.append(ItemLabel(evidence_id=eid, needed=needed, useful=useful, value=float(gain)))
            if gain == 0:
                entry = next(e for e in self.view.menu if e.evidence_id == eid)
                optimal.append(ActionValue(action=entry.request_action.value, evidence_id=eid, value=0.0))
        for a in self.terminals:
            payload = self._payload(a)
            _, valid, score = self.terminal(mask, a.value, payload)
            if valid and score == v:
                optimal.append(ActionValue(action=a.value, payload=payload, value=0.0))
        return StateLabel(task_id=self.view.task_id, state=self.ids(mask), left=left,
                          sufficient=self.sufficient(mask), cost_to_go=ctg, optimal_return=float(v), items=items,
                          optimal_actions=optimal)

    def all_states(self, extra: Iterable[tuple[int, int]] = ()) -> list[StateLabel]:
        """Every state reachable within the horizon (each with the requests left after pulling it step by
        step), or, past STATE_LIMIT, the reference's states and `extra` ones."""
        if self.enumerated:
            keys = [(self.mask(combo), self.max_requests - k) for k in range(min(len(self.items), self.max_requests) + 1)
                    for combo in combinations(self.items, k)]
        else:
            pulls = [s.evidence_id for s in self.answer.reference if s.evidence_id]
            keys = sorted({(self.mask(pulls[:k]), self.max_requests - k) for k in range(len(pulls) + 1)} | set(extra))
        return [self.state(m, left) for m, left in keys]

    def steps(self, steps: Sequence[StepLine]) -> list[StepLabel]:
        """The labels of one trajectory's steps (in order of t)."""
        out: list[StepLabel] = []
        mask = 0
        free = 0  # pages read so far: steps the horizon does not count (replay/env.py)
        for step in sorted(steps, key=lambda s: s.t):
            left = max(0, self.max_requests - (step.t - free))
            v = self.value(mask, left)
            suff = self.sufficient(mask)
            row: dict[str, Any] = {"trajectory_id": step.trajectory_id, "task_id": step.task_id, "t": step.t,
                                   "action": step.action, "outcome": step.outcome, "state": self.ids(mask),
                                   "left": left, "sufficient_before": suff, "best_value": float(v)}
            if step.outcome == "terminal":
                payload = step.payload or []
                grounded, valid, score = self.terminal(mask, step.action or "", payload)
                row.update(extra_request=False, request=None, value=float(score - v), premature=not suff,
                           grounded=grounded, valid=valid,
                           cost_score=cost_score(valid, self.ids(mask), self.answer.useful, self.horizon))
            elif step.outcome in ("revealed", "unavailable") and step.evidence_id in self.bit:
                b = self.bit[step.evidence_id]
                ctg = self.cost_to_go(mask, left)
                after = self.cost_to_go(mask | b, left - 1)
                needed = ctg is not None and self.cost_to_go(mask, left, banned=b) is None
                useful = ctg is not None and ctg > 0 and after is not None and after == ctg - 1
                row.update(extra_request=suff and step.action in {a.value for a in REQUESTS},
                           request="needed" if needed else "useful" if useful else "wasted",
                           value=float(self.value(mask | b, left - 1) - v))
                mask |= b
            elif step.outcome == "page":  # a further page of an item pulled: nothing spent, the state unchanged
                free += 1
                row.update(extra_request=False, request=None, value=0.0)
            else:  # a duplicate, off-menu or unparseable action: a step spent, the state unchanged
                is_request = step.action in {a.value for a in REQUESTS}
                row.update(extra_request=suff and is_request, request="wasted" if is_request else None,
                           value=float(self.value(mask, max(0, left - 1)) - v))
            out.append(StepLabel.model_validate(row))
        return out


class LabelsInfo(BaseModel):
    """labels.json: what was labelled, from which package and runs."""

    schema_version: int = LABELS_SCHEMA_VERSION
    package: str
    content_hash: str
    tasks: int
    states: int
    not_enumerated: list[str]  # tasks labelled on the visited states only (too many states)
    runs: dict[str, int]  # run folder -> steps labelled
    step_files: dict[str, str] = {}  # run folder -> its step labels, a path inside the labels folder
    seconds: float


def labels_folder(pkg: Path) -> Path:
    """Where `voe label PKG` writes by default: beside the package (PKG-labels), never into it or into a run."""
    return pkg.parent / f"{pkg.name}-labels"


def step_files(runs: Sequence[Path]) -> dict[Path, str]:
    """Each run's step-labels file inside the labels folder: step_labels/<run folder's name>.jsonl (numbered when
    two runs share a name)."""
    out: dict[Path, str] = {}
    taken: set[str] = set()
    for run in runs:
        name, k = run.name or "run", 1
        while name in taken:
            k += 1
            name = f"{run.name}-{k}"
        taken.add(name)
        out[run] = f"step_labels/{name}.jsonl"
    return out


def label_package(pkg: Path, out: Path | None = None, runs: Sequence[Path] = ()) -> LabelsInfo:
    """Write the package's state labels and each run's step labels into `out` (default `labels_folder(pkg)`),
    beside the package and the runs, not into them: labels are verifier-only, and a package or run folder handed
    to someone stays what it was."""
    started = time.perf_counter()
    views, _, answers, manifest = load_package(pkg)
    by_task = {v.task_id: TaskLabels(v, answers[v.task_id]) for v in views}
    run_steps: dict[Path, dict[str, list[StepLine]]] = {}
    for run in runs:
        run_steps[run] = read_run_steps(run, manifest.content_hash)
    visited: dict[str, set[tuple[int, int]]] = defaultdict(set)
    labelled: dict[Path, list[StepLabel]] = {}
    for run, trajectories in run_steps.items():
        rows: list[StepLabel] = []
        for steps in trajectories.values():
            labels = by_task[steps[0].task_id]
            rows.extend(step_rows := labels.steps(steps))
            visited[labels.view.task_id] |= {(labels.mask(r.state), r.left) for r in step_rows}
        labelled[run] = rows
    out = out if out is not None else labels_folder(pkg)
    out.mkdir(parents=True, exist_ok=True)
    files = step_files(list(runs))
    count = 0
    with (out / "states.jsonl").open("w") as fh:
        for v in views:
            for state in by_task[v.task_id].all_states(visited.get(v.task_id, ())):
                fh.write(state.model_dump_json() + "\n")
                count += 1
    write_schemas(out, "labels", (("state_label", StateLabel), ("step_label", StepLabel)))
    for run, rows in labelled.items():
        (out / files[run]).parent.mkdir(exist_ok=True)
        (out / files[run]).write_text("".join(r.model_dump_json() + "\n" for r in rows))
    info = LabelsInfo(package=str(pkg), content_hash=manifest.content_hash, tasks=len(views), states=count,
                      not_enumerated=sorted(t for t, lab in by_task.items() if not lab.enumerated),
                      runs={str(run): len(rows) for run, rows in labelled.items()},
                      step_files={str(run): files[run] for run in labelled},
                      seconds=round(time.perf_counter() - started, 3))
    (out / "labels.json").write_text(json.dumps(info.model_dump(), indent=2) + "\n")
    return info


def read_run_steps(run: Path, content_hash: str) -> dict[str, list[StepLine]]:
    """A run's steps by trajectory, after checking the run is one of the package with `content_hash`."""
    read_run_info(run, content_hash)
    trajectories: dict[str, list[StepLine]] = defaultdict(list)
    for row in read_jsonl(run / "steps.jsonl"):
        step = StepLine.model_validate(row)
        trajectories[step.trajectory_id].append(step)
    return dict(trajectories)
