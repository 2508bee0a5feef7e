"""Decision moments -> realized-only tasks. Every candidate comes from a family query in cypher/compiler/;
this module only arranges what those queries return (menus, framing, reference path). Nothing is invented:
a menu entry whose evidence has no acquisition path answers `unavailable`."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from compiler.models import (
    REQUEST_FOR_KIND,
    REQUESTS,
    TERMINALS,
    Action,
    EvidenceObject,
    Family,
    MenuEntry,
    ReferenceStep,
    TaskAnswer,
    TaskView,
)
from voe.graph import Graph

MENU_SIZE = 6
MAX_COMPANIONS = 2


def _h(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


@dataclass
class Catalog:
    objects: dict[str, EvidenceObject]
    rows: dict[str, dict[str, Any]]
    by_workflow: dict[str, list[str]]
    workflows: dict[str, str]  # id -> title
    workflow_of: dict[str, str]  # evidence id -> workflow id


def workflow_key(row: dict[str, Any]) -> tuple[str, str]:
    """A NERDm record is one workflow; a plain folder record is one workflow per top-level folder."""
    record = str(row["record_id"]).removeprefix("record:")  # versioned: two versions are two workflows
    if str(row["ark"]).startswith("folder:") and row.get("filepath") and "/" in row["filepath"]:
        top = row["filepath"].split("/", 1)[0]
        return f"wf:{record}/{top}", f"{row['record_title']} / {top}"
    return f"wf:{record}", str(row["record_title"])


def load_catalog(graph: Graph) -> Catalog:
    objects: dict[str, EvidenceObject] = {}
    rows: dict[str, dict[str, Any]] = {}
    by_wf: dict[str, list[str]] = defaultdict(list)
    titles: dict[str, str] = {}
    wf_of: dict[str, str] = {}
    for row in graph.query("compiler/evidence_catalog"):
        eid = row["evidence_id"]
        rows[eid] = row
        wf, title = workflow_key(row)
        titles[wf] = title
        wf_of[eid] = wf
        by_wf[wf].append(eid)
        if row["available"]:
            objects[eid] = EvidenceObject(
                evidence_id=eid, status="archived", kind=row["kind"], title=row["title"], record=row["ark"],
                provenance=row["provenance"],
                component={k: row[k] for k in ("component_path", "media_type", "declared_size", "declared_sha256",
                                               "held", "download_url")},
                defects=sorted(({k: d[k] for k in ("kind", "detail", "subject")} for d in row["defects"]),
                               key=lambda d: (d["kind"], d["subject"] or "", d["detail"])),
                locations=sorted(row["locations"], key=lambda loc: (loc["path"] or "", loc["locator"] or "")),
            )
        else:
            objects[eid] = EvidenceObject(evidence_id=eid, status="unavailable")
    return Catalog(objects, rows, {k: sorted(v) for k, v in by_wf.items()}, titles, wf_of)


@dataclass
class Moment:
    family: Family
    key: str
    workflow: str
    subject: str  # what the framing names
    binding: list[str]
    needed: list[str]
    useful: list[str]
    reference_class: Action
    reference_payload: list[str]
    accepted: list[Action]
    distractors_first: list[str]
    facts: list[str]
    pull: list[str]
    must_bind: dict[str, list[str]] | None = None


def find_moments(graph: Graph, cat: Catalog) -> list[Moment]:
    out: list[Moment] = []

    def title(evidence_id: str) -> str:
        return str(cat.rows[evidence_id]["title"])

    def about(evidence_id: str, path: str | None = None) -> str:
        """Every family frames its subject the same way, so the wording gives no family away: a file of the
        evidence item (for a folder, a member file: the defective one, else the first) and the item's title.
        An item the record only references has no file: it is named by its title."""
        row = cat.rows[evidence_id]
        file = path or row.get("first_member") or row["filepath"]
        return f"{file} (in {title(evidence_id)})" if file else title(evidence_id)

    deepest: dict[str, dict[str, Any]] = {}
    for r in graph.query("compiler/family_source_integrity"):
        # a defect in Cross_Sections/Tracks_Results shows on Cross_Sections too: bind it to the nearest folder
        best = deepest.get(r["defect_id"])
        if best is None or (r["depth"], r["evidence_id"]) < (best["depth"], best["evidence_id"]):
            deepest[r["defect_id"]] = r
    for r in sorted(deepest.values(), key=lambda row: row["defect_id"]):
        e = r["evidence_id"]
        subject = r["subject"] or cat.rows[e]["filepath"]
        if subject.endswith(".sha256"):
            subject = subject[: -len(".sha256")]  # a sidecar's defect is a question about its target
        out.append(Moment(
            family=Family.SOURCE_INTEGRITY, key=r["defect_id"], workflow=cat.workflow_of[e],
            subject=about(e, subject), binding=[e], needed=[e], useful=[e],
            # flagging is the reference; escalating after seeing the defect is accepted too, as on a packet
            # whose defect stays unresolved (the same visible question must not have two gold answers)
            reference_class=Action.FLAG_SOURCE_DEFECT, reference_payload=[e],
            accepted=[Action.FLAG_SOURCE_DEFECT, Action.ABSTAIN_OR_ESCALATE],
            distractors_first=[], facts=[r["defect_id"]], pull=[e]))
    for r in graph.query("compiler/family_missing_evidence"):
        m = r["evidence_id"]
        companions = [c for c in r["companions"] if c in cat.rows][:MAX_COMPANIONS]
        binding = [*companions, m]
        out.append(Moment(
            family=Family.MISSING_EVIDENCE, key=m, workflow=cat.workflow_of[m],
            subject=about(m),
            binding=binding, needed=binding, useful=binding, reference_class=Action.LOCALIZE_MISSING_EVIDENCE,
            reference_payload=[m], accepted=[Action.LOCALIZE_MISSING_EVIDENCE], distractors_first=[], facts=[m],
            pull=binding))
    calibration_targets: set[str] = set()
    for r in graph.query("compiler/family_calibration_sufficiency"):
        t = r["evidence_id"]
        calibration_targets.add(t)
        binding = [*sorted(r["calibration"]), t]
        out.append(Moment(
            family=Family.CALIBRATION_SUFFICIENCY, key=t, workflow=cat.workflow_of[t], subject=about(t),
            binding=binding, needed=binding, useful=binding, reference_class=Action.SUBMIT_RISK_PACKET,
            reference_payload=binding, accepted=[Action.SUBMIT_RISK_PACKET], distractors_first=[], facts=binding,
            pull=binding))
    for r in graph.query("compiler/family_packet_submission"):
        t = r["evidence_id"]
        if t in calibration_targets:
            continue  # the same question would have two gold answers: the calibration moment owns it
        out.append(Moment(
            family=Family.PACKET_SUBMISSION, key=t, workflow=cat.workflow_of[t], subject=about(t), binding=[t],
            needed=[t], useful=[t], reference_class=Action.SUBMIT_RISK_PACKET, reference_payload=[t],
            accepted=[Action.SUBMIT_RISK_PACKET], distractors_first=[n for n in r["notes"] if n in cat.rows],
            facts=[t], pull=[t]))
    for r in graph.query("compiler/family_packet_escalation"):
        bad, ok = r["evidence_id"], r["partner"]
        # seeing the unresolved defect is what justifies escalating; flagging it is an accepted answer too
        out.append(Moment(
            family=Family.PACKET_ESCALATION, key=f"{bad}|{ok}", workflow=cat.workflow_of[bad],
            subject=about(bad), binding=[bad, ok], needed=[bad], useful=[bad, ok],
            reference_class=Action.ABSTAIN_OR_ESCALATE, reference_payload=[],
            accepted=[Action.ABSTAIN_OR_ESCALATE, Action.FLAG_SOURCE_DEFECT], distractors_first=[], facts=[bad, ok],
            pull=[bad, ok], must_bind={Action.FLAG_SOURCE_DEFECT.value: [bad]}))
    return out


QUESTION = (
    "Workflow: {workflow}. A risk packet on {subject} is about to be assembled from this archive. Request the "
    "evidence you need from the menu (each entry names its request action), then end with exactly one terminal "
    "action: submit_risk_packet (payload: the evidence ids the packet rests on), flag_source_defect (payload: the "
    "evidence ids with a provenance or checkability defect), localize_missing_evidence (payload: the evidence ids "
    "the archive cannot provide), or abstain_or_escalate."
)


def materialize(m: Moment, cat: Catalog) -> tuple[TaskView, TaskAnswer]:
    # Menu choice and order come from a private seed; the task id only from what the policy sees, so it
    # cannot be inverted to the family or the gold item (a hash of family + key could be).
    seed = _h(m.family.value, m.key)
    pool = [e for e in cat.by_workflow[m.workflow] if e not in m.binding]
    pool.sort(key=lambda e: (e not in m.distractors_first, _h(seed, e)))
    chosen = list(m.binding) + pool[: max(0, MENU_SIZE - len(m.binding))]
    chosen.sort(key=lambda e: _h(seed, "order", e))
    question = QUESTION.format(workflow=cat.workflows[m.workflow], subject=m.subject)
    task_id = f"task:{_h(m.workflow, question, *chosen)[:16]}"
    menu = [MenuEntry(entry_id=f"E{i}", evidence_id=e, kind=cat.rows[e]["kind"], title=cat.rows[e]["title"],
                      request_action=REQUEST_FOR_KIND[cat.rows[e]["kind"]]) for i, e in enumerate(chosen, start=1)]
    view = TaskView(task_id=task_id, workflow_id=m.workflow, workflow_title=cat.workflows[m.workflow],
                    question=question, menu=menu,
                    actions=[*REQUESTS, *TERMINALS], horizon=len(menu) + 3)
    steps = [ReferenceStep(action=REQUEST_FOR_KIND[cat.rows[e]["kind"]], evidence_id=e) for e in m.pull]
    steps.append(ReferenceStep(action=m.reference_class, payload=m.reference_payload))
    must_bind = dict(m.must_bind or {})
    if m.reference_payload:
        must_bind[m.reference_class.value] = list(m.reference_payload)
    flawed = [e for e in chosen if cat.objects[e].status != "archived" or cat.objects[e].defects]
    answer = TaskAnswer(task_id=task_id, family=m.family, moment_id=f"moment:{seed[:16]}",
                        accepted_classes=m.accepted, binding=m.binding, needed=m.needed, useful=m.useful,
                        reference=steps, reference_class=m.reference_class, reference_payload=m.reference_payload,
                        must_bind=must_bind, must_not_submit=flawed, source_facts=m.facts)
    return view, answer
