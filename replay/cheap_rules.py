"""Cheap rules, and every decision list of up to three of them (DESIGN §7: "the best combination of up to three
cheap rules, every combination tried on the package").

A cheap rule reads what a policy sees after requesting the items the question names (parsed exactly,
artifacts/question.py), the items whose names succeed the subject's, and the items whose titles say calibration:
a request's outcome, a name, a title's keyword, or one look at a fact an adversary would try first. It proposes a
terminal action or passes. A decision list tries its rules in order and, when none fires, submits the named
packet (with the calibration-keyword items when the question leaves a calibration to the agent).

`status_blind` is the decision list of the rules that compare no fact (outcome, names, successor, calibration
keyword): the policy a reader of status and names would write. Every list is scored on a task from one survey
of it (the same requests for every rule), so trying all 400 lists costs one episode a task.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import permutations
from typing import Any

from voe.artifacts.observations import merged, unread
from voe.artifacts.package import Action, TaskAnswer, TaskView
from voe.artifacts.question import Reading, read
from voe.artifacts.verdict import verdict
from voe.replay.env import ReplayEnv
from voe.replay.probes import looks_odd_any
from voe.replay.registry import register

CALIBRATION_WORDS = re.compile(r"calibrat|beam[ _-]?profile|uncertainty|reference[ _-]?material|\bcrm\b|power[ _-]?meter",
                               re.I)
HEX40 = re.compile(r"\b[0-9a-f]{40}\b")
MAX_RULES = 3


@dataclass(frozen=True)
class Seen:
    """One survey of a task: the question's reading, the extra items pulled and what every request returned."""

    view: TaskView
    reading: Reading
    successors: list[str]
    calibrations: list[str]
    outcomes: dict[str, str]  # evidence id -> revealed | unavailable
    observations: dict[str, dict[str, Any]]

    @property
    def named(self) -> list[str]:
        return [e for e in self.reading.named if e in self.outcomes]

    def packet(self) -> list[str]:
        extra = self.calibrations if self.reading.calibration else []
        return [e for e in dict.fromkeys([*self.named, *extra]) if e in self.outcomes]


Rule = Callable[[Seen], "dict[str, Any] | None"]


def _name(title: str) -> str:
    return title.split(" (", 1)[0].rsplit("/", 1)[-1]


def _stem(name: str) -> str:
    return name.rsplit(".", 1)[0] if "." in name else name


def successors(view: TaskView, reading: Reading) -> list[str]:
    """Menu items whose name succeeds the subject's: the same name with `-` and `_` alike (a prefix rename), or a
    name that extends the subject's stem (`...-L7.xml` -> `...-L7-L8-L9-O1.xml`)."""
    by_id = {e.evidence_id: e for e in view.menu}
    if reading.subject not in by_id:
        return []
    name = _name(by_id[reading.subject].title)
    key, stem = name.lower().replace("-", "_"), _stem(name).lower().replace("-", "_")
    out = []
    for e in view.menu:
        other = _name(e.title)
        k = other.lower().replace("-", "_")
        if e.evidence_id != reading.subject and other != name and (k == key or _stem(k).startswith(stem + "_")):
            out.append(e.evidence_id)
    return out


def calibration_items(view: TaskView) -> list[str]:
    return [e.evidence_id for e in view.menu if e.kind == "calibration_artifact" or CALIBRATION_WORDS.search(e.title)]


def targets(view: TaskView) -> tuple[Reading, list[str], list[str], list[str]]:
    reading = read(view)
    succ, cal = successors(view, reading), calibration_items(view)
    return reading, succ, cal, list(dict.fromkeys([*reading.named, *succ, *cal]))


def survey(env: ReplayEnv, view: TaskView) -> Seen:
    reading, succ, cal, wanted = targets(view)
    env.reset(view, f"survey/{view.task_id}")
    by_id = {e.evidence_id: e for e in view.menu}
    outcomes: dict[str, str] = {}
    observations: dict[str, dict[str, Any]] = {}
    for eid in wanted[: max(0, view.horizon - 1)]:
        rec, done = env.step({"action": by_id[eid].request_action.value, "evidence_id": eid})
        d = rec.model_dump(mode="json")
        if d["outcome"] in ("revealed", "unavailable"):
            outcomes[eid] = d["outcome"]
            shown, read = [d.get("observation") or {}], {0}
            while (page := unread(shown[0], read)) is not None:  # the rest of a large item, free of the horizon
                more, _ = env.step({"action": by_id[eid].request_action.value, "evidence_id": eid, "page": page})
                shown.append(more.observation)
                read.add(page)
            observations[eid] = merged(shown)
        if done:
            break
    return Seen(view, reading, succ, cal, outcomes, observations)


# --- the rules -------------------------------------------------------------------------------------------------

def unavailable(s: Seen) -> dict[str, Any] | None:
    """A named item came back unavailable: localize it (status)."""
    gone = [e for e in s.named if s.outcomes.get(e) == "unavailable"]
    return {"action": Action.LOCALIZE_MISSING_EVIDENCE.value, "payload": gone} if gone else None


def successor(s: Seen) -> dict[str, Any] | None:
    """An item named as the subject's successor is on the menu: submit it with the support (names)."""
    succ = [e for e in s.successors if s.outcomes.get(e) == "revealed"]
    if not succ:
        return None
    return {"action": Action.SUBMIT_RISK_PACKET.value,
            "payload": [succ[0], *[e for e in s.packet() if e != s.reading.subject]]}


def calibration_keyword(s: Seen) -> dict[str, Any] | None:
    """The question leaves a calibration to the agent: submit the packet with every calibration-titled item."""
    if not s.reading.calibration:
        return None
    return {"action": Action.SUBMIT_RISK_PACKET.value, "payload": s.packet()}


def _alnum(title: str) -> str:
    return re.sub(r"[^a-z0-9]", "", title.split(" (", 1)[0].lower())


def name_match(s: Seen) -> dict[str, Any] | None:
    """The question leaves a calibration to the agent: take the calibration item whose name is most like the
    subject's (`..._RR200_...` and `RR 200 beam profile`); localize it when it came back unavailable, else submit
    it with the named packet (names only: no cell of the subject read)."""
    if not s.reading.calibration or s.reading.subject is None:
        return None
    by_id = {e.evidence_id: e for e in s.view.menu}
    subject = _alnum(by_id[s.reading.subject].title)
    cals = [e for e in s.calibrations if e in s.outcomes and e != s.reading.subject]
    if not cals:
        return None
    best = max(cals, key=lambda e: (SequenceMatcher(None, subject, _alnum(by_id[e].title)).ratio(), e))
    if s.outcomes[best] == "unavailable":
        return {"action": Action.LOCALIZE_MISSING_EVIDENCE.value, "payload": [best]}
    return {"action": Action.SUBMIT_RISK_PACKET.value, "payload": [*s.named, best]}


def _hashes(obs: dict[str, Any]) -> set[str]:
    return {h for f in obs.get("facts", []) for h in HEX40.findall(f.get("statement", ""))}


def two_release_hashes_escalate(s: Seen) -> dict[str, Any] | None:
    """The subject is listed with two release hashes: escalate (one look at a fact, no comparison with a statement)."""
    subj = s.observations.get(s.reading.subject or "")
    return {"action": Action.ABSTAIN_OR_ESCALATE.value, "payload": []} if subj and len(_hashes(subj)) > 1 else None


def _files(obs: dict[str, Any]) -> list[dict[str, Any]]:
    meta = obs.get("metadata") or {}
    return [meta, *meta.get("members", [])] if "path" in meta and "members" not in meta else meta.get("members", [])


def unheld_subject(s: Seen) -> dict[str, Any] | None:
    """This copy does not hold the subject's bytes: flag it."""
    subj = s.reading.subject
    obs = s.observations.get(subj or "")
    if not obs or obs.get("status") != "archived" or not any(f.get("held") is False for f in _files(obs)):
        return None
    return {"action": Action.FLAG_SOURCE_DEFECT.value, "payload": [subj]}


def _odd(obs: dict[str, Any]) -> bool:
    return looks_odd_any(obs)  # the probes' "looks odd", one definition


def odd_subject(s: Seen) -> dict[str, Any] | None:
    """Any fact of the subject looks odd (a disagreeing digest, a `valid: false`, an unusual media type): flag it."""
    subj = s.reading.subject
    obs = s.observations.get(subj or "")
    return {"action": Action.FLAG_SOURCE_DEFECT.value, "payload": [subj]} if obs and _odd(obs) else None


def odd_support(s: Seen) -> dict[str, Any] | None:
    """A support item looks odd: escalate."""
    odd = [e for e in s.packet() if e != s.reading.subject and s.observations.get(e) and _odd(s.observations[e])]
    return {"action": Action.ABSTAIN_OR_ESCALATE.value, "payload": []} if odd else None


RULES: dict[str, Rule] = {
    "unavailable": unavailable,
    "successor": successor,
    "calibration_keyword": calibration_keyword,
    "name_match": name_match,
    "two_release_hashes": two_release_hashes_escalate,
    "unheld_subject": unheld_subject,
    "odd_subject": odd_subject,
    "odd_support": odd_support,
}
STATUS_BLIND = ("unavailable", "successor", "calibration_keyword")  # no fact compared (names: name_match, a rule)


def default(s: Seen) -> dict[str, Any]:
    return {"action": Action.SUBMIT_RISK_PACKET.value, "payload": s.packet()}


def decide(s: Seen, names: Sequence[str]) -> dict[str, Any]:
    for n in names:
        if (a := RULES[n](s)) is not None:
            return a
    return default(s)


def combinations() -> list[tuple[str, ...]]:
    """Every decision list of one to three distinct rules, in order (8 + 56 + 336)."""
    return [c for k in range(1, MAX_RULES + 1) for c in permutations(RULES, k)]


def combo_name(names: Sequence[str]) -> str:
    return "rules:" + ">".join(names)


def right(s: Seen, answer: TaskAnswer, action: dict[str, Any]) -> bool:
    return all(verdict(action["action"], action.get("payload") or [], list(s.outcomes), answer))


def scored(s: Seen, answer: TaskAnswer) -> frozenset[str]:
    """The decision lists (by combo_name) that are right on this surveyed task."""
    fired = {n: RULES[n](s) for n in RULES}
    ok = {n: a is not None and right(s, answer, a) for n, a in fired.items()}
    base = right(s, answer, default(s))
    out = set()
    for combo in combinations():
        first = next((n for n in combo if fired[n] is not None), None)
        if (ok[first] if first is not None else base):
            out.add(combo_name(combo))
    return frozenset(out)


def decision_list(names: Sequence[str]) -> Callable[[TaskView, TaskAnswer, list[dict[str, Any]], random.Random],
                                                     dict[str, Any]]:
    """The decision list as a policy: request the survey's items, then decide."""
    def policy(view: TaskView, answer: TaskAnswer, history: list[dict[str, Any]], rng: random.Random) -> dict[str, Any]:
        reading, succ, cal, wanted = targets(view)
        done = {h.get("evidence_id") for h in history}
        by_id = {e.evidence_id: e for e in view.menu}
        for eid in wanted[: max(0, view.horizon - 1)]:
            if eid not in done:
                return {"action": by_id[eid].request_action.value, "evidence_id": eid}
        seen = {h["evidence_id"]: h for h in history if h.get("outcome") in ("revealed", "unavailable")}
        s = Seen(view, reading, succ, cal, {e: h["outcome"] for e, h in seen.items()},
                 {e: h.get("observation") or {} for e, h in seen.items()})
        return decide(s, names)
    return policy


register("probe:status_blind", decision_list(STATUS_BLIND), kind="probe",
         about="reads no fact: unavailable -> localize; a successor by name -> submit it; else submit the named "
               "packet with the calibration-titled items")
