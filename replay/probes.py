"""Shortcut probes: cheap policies an adversary would try first. They see only the policy-visible task and
the observations of what they request (never an answer), and the release gate keeps each far below the
reference (replay/gate.py).

- `named_item`      request the items the question names (and the menu's calibration artifacts); localize
                    those that are unavailable; else flag those whose facts disagree (a digest, size or
                    release hash that differs from another, a checksum file the record marks invalid); else
                    submit them. The 15-line label reader of issue 7, adapted to observations that show facts.
- `status_only`     request the named items; localize the unavailable ones, else submit them (never flags:
                    "the archive has it, so it is fine").
- `unheld_flag`     request the named items; localize the unavailable ones; flag the subject when this copy
                    does not hold its bytes (or a member's); else submit ("what we cannot check is suspect").
- `chained_rules`   the project's probe rules chained, as an adversary would: request the named items (and
                    the menu's calibration artifacts); localize the unavailable; escalate when a support item
                    looks odd; flag the subject when this copy does not hold it or it looks odd; else submit.
                    "Looks odd": any fact that disagrees with another (named_item's rule), or a media type
                    that does not fit the file or is a vendor or unregistered alias.
- `pull_all`        question-blind: request everything, then the same rule over every item.
- `flag_all`        request everything, flag everything.
- `localize_all`    request everything, localize everything.
- `escalate_all`    request everything, then abstain_or_escalate.
- `text_nn`         text only: the terminal class of the nearest task by visible words, scored by
                    leave-one-workflow-out cross-validation (replay/gate.py), with the payload that class
                    takes (the subject for a flag or a localize, the named items for a submit).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

from voe.artifacts.package import Action, TaskAnswer, TaskView
from voe.artifacts.question import read
from voe.ingest.rules.media_types import mismatch, unusual
from voe.replay.registry import Policy, register

HEX40 = re.compile(r"\b[0-9a-f]{40}\b")


def named_items(view: TaskView) -> list[str]:
    """The subject and the support the question names, parsed exactly (artifacts/question.py)."""
    return read(view).named


def subject_item(view: TaskView) -> str | None:
    """The item the packet is on, parsed exactly."""
    return read(view).subject


def _request(view: TaskView, eid: str) -> dict[str, Any]:
    entry = next(e for e in view.menu if e.evidence_id == eid)
    return {"action": entry.request_action.value, "evidence_id": eid}


def _file_disagrees(m: dict[str, Any]) -> bool:
    if m.get("local_sha256") and m.get("declared_sha256") and m["local_sha256"] != m["declared_sha256"]:
        return True
    if m.get("local_size") is not None and m.get("declared_size") is not None and m["local_size"] != m["declared_size"]:
        return True
    for s in m.get("checksum_files", []):
        if s.get("valid") is False:
            return True
        if s.get("content") is not None and m.get("declared_sha256") and s["content"] != m["declared_sha256"]:
            return True
        if s.get("content") is None and s.get("sha256_of_target_digest") and s.get("declared_sha256") \
                and s["declared_sha256"] != s["sha256_of_target_digest"]:
            return True
    return False


def looks_odd(obs: dict[str, Any]) -> bool:
    """Any fact of the observation that disagrees with another."""
    meta = obs.get("metadata") or {}
    if _file_disagrees(meta) or any(_file_disagrees(m) for m in meta.get("members", [])):
        return True
    hashes = {h for f in obs.get("facts", []) for h in HEX40.findall(f.get("statement", ""))}
    return len(hashes) > 1  # a file listed with two different release hashes


def _files(obs: dict[str, Any]) -> list[dict[str, Any]]:
    meta = obs.get("metadata") or {}
    return [meta, *meta.get("members", [])] if "path" in meta and "members" not in meta else meta.get("members", [])


def looks_odd_any(obs: dict[str, Any]) -> bool:
    """named_item's rule, or a media type that does not fit the file or is an unusual alias."""
    return looks_odd(obs) or any(
        f.get("path") and f.get("media_type") and (mismatch(f["path"], f["media_type"]) or unusual(f["path"],
                                                                                                    f["media_type"]))
        for f in _files(obs))


def _named_targets(view: TaskView) -> list[str]:
    """What the status probes request: the items the question names and the menu's calibration artifacts."""
    return list(dict.fromkeys(named_items(view) + [e.evidence_id for e in view.menu if e.kind == "calibration_artifact"]))


def _localize_unavailable(history: list[dict[str, Any]], targets: list[str]
                          ) -> tuple[dict[str, dict[str, Any]], dict[str, Any] | None]:
    """What each target's request gave, and the localize of those that came back unavailable (None if none)."""
    seen = {h["evidence_id"]: h for h in history if h["outcome"] in ("revealed", "unavailable")}
    gone = [e for e in targets if e in seen and seen[e]["outcome"] == "unavailable"]
    return seen, ({"action": Action.LOCALIZE_MISSING_EVIDENCE.value, "payload": gone} if gone else None)


def _not_held(obs: dict[str, Any]) -> bool:
    return obs.get("status") == "archived" and any(f.get("held") is False for f in _files(obs))


def chained_rules(view: TaskView, answer: TaskAnswer, history: list[dict[str, Any]],
                  rng: random.Random) -> dict[str, Any]:
    subject = subject_item(view)
    targets = _named_targets(view)

    def finish() -> dict[str, Any]:
        seen, localize = _localize_unavailable(history, targets)
        if localize:
            return localize
        obs = {e: seen[e]["observation"] for e in targets if e in seen}
        if any(looks_odd_any(o) for e, o in obs.items() if e != subject):
            return {"action": Action.ABSTAIN_OR_ESCALATE.value, "payload": []}
        if subject in obs and (_not_held(obs[subject]) or looks_odd_any(obs[subject])):
            return {"action": Action.FLAG_SOURCE_DEFECT.value, "payload": [subject]}
        return {"action": Action.SUBMIT_RISK_PACKET.value, "payload": [e for e in targets if e in seen]}
    return _pull_then(targets, view, history, finish)


def _judge(pulled: list[dict[str, Any]], among: list[str]) -> dict[str, Any]:
    seen = {h["evidence_id"]: h for h in pulled if h["outcome"] in ("revealed", "unavailable")}
    items = [e for e in among if e in seen]
    gone = [e for e in items if seen[e]["outcome"] == "unavailable"]
    if gone:
        return {"action": Action.LOCALIZE_MISSING_EVIDENCE.value, "payload": gone}
    odd = [e for e in items if looks_odd(seen[e]["observation"])]
    if odd:
        return {"action": Action.FLAG_SOURCE_DEFECT.value, "payload": odd}
    return {"action": Action.SUBMIT_RISK_PACKET.value, "payload": items}


def _pull_then(targets: list[str], view: TaskView, history: list[dict[str, Any]],
               finish: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    done = {h.get("evidence_id") for h in history}
    for eid in targets:
        if eid not in done:
            return _request(view, eid)
    return finish()


def named_item(view: TaskView, answer: TaskAnswer, history: list[dict[str, Any]], rng: random.Random) -> dict[str, Any]:
    targets = named_items(view) + [e.evidence_id for e in view.menu if e.kind == "calibration_artifact"]
    targets = list(dict.fromkeys(targets))
    return _pull_then(targets, view, history, lambda: _judge(history, targets))


def status_only(view: TaskView, answer: TaskAnswer, history: list[dict[str, Any]],
                rng: random.Random) -> dict[str, Any]:
    targets = list(dict.fromkeys(named_items(view) + [e.evidence_id for e in view.menu
                                                        if e.kind == "calibration_artifact"]))

    def finish() -> dict[str, Any]:
        seen = {h["evidence_id"]: h["outcome"] for h in history if h["outcome"] in ("revealed", "unavailable")}
        gone = [e for e in targets if seen.get(e) == "unavailable"]
        if gone:
            return {"action": Action.LOCALIZE_MISSING_EVIDENCE.value, "payload": gone}
        return {"action": Action.SUBMIT_RISK_PACKET.value, "payload": [e for e in targets if e in seen]}
    return _pull_then(targets, view, history, finish)


def unheld_flag(view: TaskView, answer: TaskAnswer, history: list[dict[str, Any]],
                rng: random.Random) -> dict[str, Any]:
    subject = subject_item(view)
    targets = _named_targets(view)

    def finish() -> dict[str, Any]:
        seen, localize = _localize_unavailable(history, targets)
        if localize:
            return localize
        meta = (seen[subject]["observation"].get("metadata") or {}) if subject in seen else {}
        files = [meta, *meta.get("members", [])] if "held" in meta else meta.get("members", [])
        if subject and any(f.get("held") is False for f in files):
            return {"action": Action.FLAG_SOURCE_DEFECT.value, "payload": [subject]}
        return {"action": Action.SUBMIT_RISK_PACKET.value, "payload": [e for e in targets if e in seen]}
    return _pull_then(targets, view, history, finish)


def named_packet(view: TaskView, answer: TaskAnswer, history: list[dict[str, Any]],
                 rng: random.Random) -> dict[str, Any]:
    """Request exactly the items the question names, then submit them: "the packet is what it says"."""
    targets = named_items(view)
    return _pull_then(targets, view, history, lambda: {"action": Action.SUBMIT_RISK_PACKET.value,
                                                       "payload": list(targets)})


def pull_all(view: TaskView, answer: TaskAnswer, history: list[dict[str, Any]], rng: random.Random) -> dict[str, Any]:
    targets = [e.evidence_id for e in view.menu]
    return _pull_then(targets, view, history, lambda: _judge(history, targets))


def _blanket(action: Action, with_payload: bool) -> Policy:
    def policy(view: TaskView, answer: TaskAnswer, history: list[dict[str, Any]], rng: random.Random) -> dict[str, Any]:
        targets = [e.evidence_id for e in view.menu]
        return _pull_then(targets, view, history,
                          lambda: {"action": action.value, "payload": targets if with_payload else []})
    return policy


def predicted(action: str) -> Policy:
    """`text_nn`'s policy for one task once its class is predicted: pull everything, then that class with the
    payload the class takes (a flag or a localize: the subject; a submit: the items the question names)."""
    def policy(view: TaskView, answer: TaskAnswer, history: list[dict[str, Any]], rng: random.Random) -> dict[str, Any]:
        targets = [e.evidence_id for e in view.menu]
        subject = subject_item(view)
        if action == Action.ABSTAIN_OR_ESCALATE.value:
            payload: list[str] = []
        elif action == Action.SUBMIT_RISK_PACKET.value:
            payload = named_items(view)
        else:
            payload = [subject] if subject else []
        return _pull_then(targets, view, history, lambda: {"action": action, "payload": payload})
    return policy


register("probe:named_item", named_item, kind="probe",
         about="pulls the items the question names, then judges by whether they look odd")
register("probe:status_only", status_only, kind="probe",
         about="decides from request outcomes alone (unavailable: localize, else submit)")
register("probe:unheld_flag", unheld_flag, kind="probe",
         about="flags whatever this copy does not hold the bytes of")
register("probe:chained_rules", chained_rules, kind="probe",
         about="chains the probe rules: unavailable -> localize, odd support -> escalate, odd or unheld subject -> flag")
register("probe:named_packet", named_packet, kind="probe",
         about="requests the items the question names, then submits exactly them")
register("probe:pull_all", pull_all, kind="probe", about="pulls the whole menu, then judges by whether anything looks odd")
register("probe:flag_all", _blanket(Action.FLAG_SOURCE_DEFECT, True), kind="probe",
         about="pulls the menu, then flags all of it")
register("probe:localize_all", _blanket(Action.LOCALIZE_MISSING_EVIDENCE, True), kind="probe",
         about="pulls the menu, then localizes all of it as missing")
register("probe:escalate_all", _blanket(Action.ABSTAIN_OR_ESCALATE, False), kind="probe",
         about="pulls the menu, then escalates")
