"""Decision moments -> realized-only tasks.

The catalog query (cypher/compiler/evidence_catalog.cypher) gathers every item's facts; the gap and defect
queries (cypher/compiler/family_missing_evidence.cypher, family_source_integrity.cypher) find the moments
whose call rests on a graph fact. Nothing is invented: an item with no acquisition path answers
`unavailable`, and what a request returns is compiler/observations.py's statement of the archive's facts.

A task is a packet: a subject item and the items the packet is to rest on (its support), both named in the
question. The support of an item is its workflow's readme (a source document named readme) or, for a
release-note item, the changelog of the release that changed it; a workflow holding k >= 2 clean
calibration artifacts adds all k. One subject is one decision; its family (and the gold) follows from
verifier-only graph facts, first that applies:

  missing_evidence         the subject is a file a release removed (the archive has no acquisition path):
                           localize it, after pulling it and its support
  packet_submission        the subject was renamed by a release: submit the renamed file with the support
  (renamed)                (the name is gone, the content is not: a hard negative for "localize the unavailable")
  source_integrity         the subject (or a file inside it) has a defect: flag it, after pulling it
  packet_escalation        the subject is clean but a support item has a defect nothing in the archive
                           resolves: abstain_or_escalate, after pulling both
  calibration_sufficiency  clean subject and k >= 2 clean calibration artifacts: submit all of them
  packet_submission        clean subject and support: submit exactly the packet

Candidates a policy would answer the same way on the same pattern of facts are near-duplicate decisions:
clean submissions are capped per workflow (CLEAN_PER_WORKFLOW, CALIBRATION_PER_WORKFLOW) and a release's
removals, renames and changes per workflow (RELEASE_CAP), chosen by a hash of the subject with the items a
changelog names first; the rest still serve as menu entries. Defects and escalations are never capped.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from compiler import families
from compiler.annotate import POOL_SIZE, Candidate, Framing
from compiler.families import Moment, Subject, missing_evidence, source_integrity
from compiler.models import (
    REQUEST_FOR_KIND,
    REQUESTS,
    TERMINALS,
    Action,
    EvidenceObject,
    MenuEntry,
    ReferenceStep,
    TaskAnswer,
    TaskView,
)
from compiler.observations import observe
from voe.graph import Graph

MENU_SIZE = 6
CLEAN_PER_WORKFLOW = 1
RELEASE_CAP = 3
CALIBRATION_PER_WORKFLOW = 2
ESCALATIONS_PER_DEFECT: int | None = None
CONTRASTS = False
README_RE = re.compile(r"read_?me", re.I)
SUBJECT_KINDS = ("characterization", "process_record")


def _h(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


@dataclass
class Catalog:
    objects: dict[str, EvidenceObject]
    rows: dict[str, dict[str, Any]]
    by_workflow: dict[str, list[str]]
    workflows: dict[str, str]  # id -> title
    workflow_of: dict[str, str]  # evidence id -> workflow id
    own_defects: dict[str, list[str]] = field(default_factory=dict)  # evidence id -> defect ids bound to it


def workflow_key(row: dict[str, Any]) -> tuple[str, str]:
    """A NERDm record is one workflow; a plain folder record is one workflow per top-level folder (a
    release-note item belongs to the folder of the summary that lists it)."""
    record = str(row["record_id"]).removeprefix("record:")  # versioned: two versions are two workflows
    path = row.get("filepath") or row.get("listed_in")
    if str(row["ark"]).startswith("folder:") and path and "/" in path:
        top = path.split("/", 1)[0]
        return f"wf:{record}/{top}", f"{row['record_title']} / {top}"
    return f"wf:{record}", str(row["record_title"])


def load_catalog(graph: Graph) -> Catalog:
    objects: dict[str, EvidenceObject] = {}
    rows: dict[str, dict[str, Any]] = {}
    by_wf: dict[str, list[str]] = defaultdict(list)
    titles: dict[str, str] = {}
    wf_of: dict[str, str] = {}
    for row in graph.query("compiler/evidence_catalog"):
        if row["record_provenance"] == "reconstructed":
            continue  # a catalog written from facts about records NIST publishes: no decision rests on it
        eid = row["evidence_id"]
        row["name"] = row["title"]
        if row["provenance"] == "release_notes":  # two summaries list the same basename: say which one
            row["title"] = f"{row['name']} ({str(row.get('listed_in')).rsplit('/', 1)[-1]})"
        rows[eid] = row
        wf, title = workflow_key(row)
        titles[wf] = title
        wf_of[eid] = wf
        by_wf[wf].append(eid)
        objects[eid] = observe(row)
    cat = Catalog(objects, rows, {k: sorted(v) for k, v in by_wf.items()}, titles, wf_of)
    cat.own_defects = _bind_defects(graph, cat)
    return cat


def _bind_defects(graph: Graph, cat: Catalog) -> dict[str, list[str]]:
    """A defect in Cross_Sections/Tracks_Results shows on Cross_Sections too: bind it to the nearest folder."""
    nearest: dict[str, dict[str, Any]] = {}
    for r in graph.query(source_integrity.QUERY):
        if r["evidence_id"] not in cat.rows:
            continue
        best = nearest.get(r["defect_id"])
        if best is None or (r["depth"], r["evidence_id"]) < (best["depth"], best["evidence_id"]):
            nearest[r["defect_id"]] = r
    out: dict[str, list[str]] = defaultdict(list)
    for did, r in sorted(nearest.items()):
        out[r["evidence_id"]].append(did)
    return dict(out)


def _support(cat: Catalog, e: str) -> list[str]:
    row = cat.rows[e]
    wf = cat.workflow_of[e]
    if row["provenance"] == "release_notes":
        want = f"changelog_{row.get('release_to')}.txt"
        return [x for x in cat.by_workflow[wf] if (cat.rows[x].get("filepath") or "").endswith(want)][:1]
    readmes = [x for x in cat.by_workflow[wf] if x != e and cat.rows[x]["kind"] == "source_document"
               and cat.objects[x].status == "archived"
               and README_RE.search(f"{cat.rows[x].get('filepath') or ''} {cat.rows[x]['title']}")]
    support = readmes[:1]
    calibration = [x for x in cat.by_workflow[wf] if x != e and cat.rows[x]["kind"] == "calibration_artifact"
                   and cat.objects[x].status == "archived" and not cat.own_defects.get(x)]
    if len(calibration) >= 2:
        support += calibration
    return support


def _is_container(cat: Catalog, e: str) -> bool:
    """A folder holding other evidence folders: a packet on it would be a packet on each of them."""
    return bool(cat.rows[e]["is_folder"] and cat.rows[e]["subfolders"])


def find_moments(graph: Graph, cat: Catalog) -> list[Moment]:
    """Every subject item of the catalog through the families' chain of rules (compiler/families/): the first
    rule that applies decides its moment, or that it has none."""
    out: list[Moment] = []
    gaps = frozenset(r["evidence_id"] for r in graph.query(missing_evidence.QUERY) if r["evidence_id"] in cat.rows)
    chain = families.rules()
    release_seen: set[tuple[str, str]] = set()
    for e in sorted(cat.rows, key=lambda x: (-_release_rank(cat.rows[x]), x)):
        row = cat.rows[e]
        wf = cat.workflow_of[e]
        status = row.get("release_status")
        if row["provenance"] == "release_notes":
            if (wf, row["name"]) in release_seen or status not in ("removed", "renamed", "changed"):
                continue
            release_seen.add((wf, row["name"]))  # the latest summary that lists a file speaks for it
        elif row["kind"] not in SUBJECT_KINDS and not cat.own_defects.get(e):
            continue
        if _is_container(cat, e) or cat.objects[e].status == "referenced":
            continue
        subject = Subject(cat, e, wf, _support(cat, e), gaps)
        for r in chain:
            decided = r.match(subject)
            if decided is not None:
                if isinstance(decided, Moment):
                    out.append(decided)
                break
    return _cap(out, cat)


def _release_rank(row: dict[str, Any]) -> int:
    to = str(row.get("release_to") or "0")
    return sum(int(p) * 1000 ** (2 - i) for i, p in enumerate(to.split(".")[:3]) if p.isdigit())


def _cap(moments: list[Moment], cat: Catalog) -> list[Moment]:
    """Keep every defect and escalation; cap clean submissions per workflow and a release's removals, renames
    and changes per workflow, choosing by a hash of the subject (items a changelog names first)."""
    groups: dict[tuple[str, ...], list[Moment]] = defaultdict(list)
    caps: dict[tuple[str, ...], int] = {}
    kept: list[Moment] = []
    for m in moments:
        group = families.spec(m.family).cap_group(m, cat.rows[m.subject])
        if group is None:
            kept.append(m)
        else:
            key, cap = group
            groups[key].append(m)
            caps.setdefault(key, cap)
    flagged_ext: dict[str, set[str]] = defaultdict(set)
    flagged_held: dict[str, set[bool]] = defaultdict(set)
    flagged: Counter[str] = Counter()
    for m in kept:
        if families.spec(m.family).contrasted:
            flagged_ext[m.workflow].add(_extension(cat, m.subject))
            flagged_held[m.workflow].add(_held(cat, m.subject))
            flagged[m.workflow] += 1
    for key, ms in sorted(groups.items()):
        cap = caps[key]
        # a clean packet on the same kind of file as the workflow's defective ones first: the extension must
        # not tell a flag from a submission (a contrast pair), then the items a changelog names
        ms.sort(key=lambda m: (not _documented(cat, m.subject), _held(cat, m.subject) not in flagged_held[m.workflow],
                               _extension(cat, m.subject) not in flagged_ext[m.workflow], _h("cap", m.subject)))
        if key[0] == "clean" and CONTRASTS:  # one clean packet per flagged one (measured: it trades the
            cap = max(cap, flagged[ms[0].workflow])  # unheld shortcut for the text ones; off by default)
        kept += ms[:cap]
    return kept


def _subject_file(cat: Catalog, e: str) -> str:
    row = cat.rows[e]
    members = row.get("members") or []
    return str((members[0]["path"] if row["is_folder"] and members else row.get("filepath")) or row["name"])


def _held(cat: Catalog, e: str) -> bool:
    row = cat.rows[e]
    return bool(all(m.get("held") for m in row["members"]) if row["is_folder"] else row.get("held"))


def _extension(cat: Catalog, e: str) -> str:
    name = _subject_file(cat, e).rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[-1].lower() if "." in name else ""


def _documented(cat: Catalog, e: str) -> bool:
    """A changelog line names the item (e.g. the 2.1.0 correction of 718-SH1.xml)."""
    return any((loc.get("path") or "").rsplit("/", 1)[-1].startswith("changelog")
               for loc in cat.rows[e]["locations"])


def hard_negatives(cat: Catalog, wf: str, exclude: set[str]) -> list[str]:
    """Items whose facts look suspicious but are no defect under the rules (ingest/defects.py, 'Not
    defects'): bytes this copy does not hold, a release's rename or change, a reference the archive names
    elsewhere, a CSV with a BOM and CRLF; and defective items that are not the decision's (flagging them is
    wrong): they go on menus first so that "flag anything odd" fails."""
    out = []
    for e in cat.by_workflow[wf]:
        if e in exclude:
            continue
        row, obj = cat.rows[e], cat.objects[e]
        odd = (obj.status in ("referenced", "unavailable") or row.get("release_status") in ("renamed", "changed")
               or (obj.status == "archived" and not row.get("held") and not row["is_folder"])
               or _bom_or_crlf(row.get("local_summary")) or bool(cat.own_defects.get(e)))
        if odd:
            out.append(e)
    return out


def _bom_or_crlf(summary_json: str | None) -> bool:
    try:
        summary = json.loads(summary_json) if summary_json else {}
    except ValueError:
        return False
    return bool(summary.get("bom") or summary.get("crlf"))


FRAMING = "Workflow: {workflow}. A risk packet on {subject} is about to be assembled from this archive{support}."
INSTRUCTIONS = (
    " Request the evidence you need from the menu (each entry names its request action), then end with exactly "
    "one terminal action: submit_risk_packet (payload: exactly the evidence ids the packet rests on), "
    "flag_source_defect (the item the packet is on has a provenance or checkability defect; payload: the "
    "defective items, nothing clean), localize_missing_evidence (the archive cannot provide an item the packet "
    "needs; payload: the missing items only), or abstain_or_escalate (the packet cannot be completed as stated: "
    "an item it must rest on has a defect that nothing in the archive resolves, or its items conflict)."
)
QUESTION = FRAMING + INSTRUCTIONS  # the deterministic template's whole question


def _about(cat: Catalog, e: str) -> str:
    """Every family frames its subject the same way: a file of the item (a folder: its first member file) and
    the item's title; a release-note item by the summary that lists it."""
    row = cat.rows[e]
    if row["provenance"] == "release_notes":
        return str(row["title"])
    file = _subject_file(cat, e) if row["is_folder"] or row.get("filepath") else None
    return f"{file} (in {row['title']})" if file else str(row["title"])


def candidate(m: Moment, cat: Catalog) -> Candidate:
    """The moment as an annotator sees it: workflow, subject, support, the item pool with the facts a request
    would return for each, and the template's framing and menu. Nothing verifier-only (family, gold, defects)."""
    # Menu choice and order are seeded by what the policy sees (workflow and subject) and nothing else: a
    # seed holding the family could be inverted by trying each family name against the visible order.
    seed = _h(m.workflow, m.subject)
    binding = list(dict.fromkeys(m.binding))
    odd = set(hard_negatives(cat, m.workflow, set(binding)))
    pool = [e for e in cat.by_workflow[m.workflow] if e not in binding]
    pool.sort(key=lambda e: (e not in odd, _h(seed, e)))
    default = binding + pool[: max(0, MENU_SIZE - len(binding))]
    support = ""
    if m.support:
        names = ", ".join(str(cat.rows[s]["title"]) for s in m.support)
        support = f"; it is to rest on {cat.rows[m.subject]['title']} together with {names}"
    template = Framing(title="", context=FRAMING.format(workflow=cat.workflows[m.workflow],
                                                       subject=_about(cat, m.subject), support=support),
                       question="", menu=default)
    offered = binding + pool[:POOL_SIZE]

    def item(e: str) -> dict[str, Any]:
        obj = cat.objects[e]
        return {"id": e, "kind": cat.rows[e]["kind"], "title": cat.rows[e]["title"], "status": obj.status,
                "facts": [f.statement for f in obj.facts][:12]}

    context = {"workflow": cat.workflows[m.workflow], "subject": item(m.subject),
               "required": [item(e) for e in binding], "pool": [item(e) for e in offered if e not in binding]}
    moment_id = f"moment:{_h(m.family.value, m.subject)[:16]}"
    return Candidate(moment_id=moment_id, workflow=m.workflow, subject=m.subject, support=list(m.support),
                     binding=binding, pool=offered, default_menu=default, template=template, context=context)


def question_of(framing: Framing) -> str:
    """The policy-visible question: the framing, then the fixed instructions (never written by a model)."""
    return " ".join(x for x in (framing.title, framing.context, framing.question) if x) + INSTRUCTIONS


def materialize(m: Moment, cat: Catalog, framing: Framing | None = None) -> tuple[TaskView, TaskAnswer]:
    c = candidate(m, cat)
    framing = framing or c.template
    seed = _h(m.workflow, m.subject)
    binding = c.binding
    chosen = list(dict.fromkeys(framing.menu))
    chosen.sort(key=lambda e: _h(seed, "order", e))
    question = question_of(framing)
    task_id = f"task:{_h(m.workflow, question, *chosen)[:16]}"
    menu = [MenuEntry(entry_id=f"E{i}", evidence_id=e, kind=cat.rows[e]["kind"], title=cat.rows[e]["title"],
                      request_action=REQUEST_FOR_KIND[cat.rows[e]["kind"]]) for i, e in enumerate(chosen, start=1)]
    view = TaskView(task_id=task_id, workflow_id=m.workflow, workflow_title=cat.workflows[m.workflow],
                    question=question, menu=menu, actions=[*REQUESTS, *TERMINALS], horizon=len(menu) + 3)
    steps = [ReferenceStep(action=REQUEST_FOR_KIND[cat.rows[e]["kind"]], evidence_id=e) for e in m.pull]
    steps.append(ReferenceStep(action=m.reference_class, payload=m.reference_payload))
    defective = [e for e in chosen if cat.own_defects.get(e)]
    localizable = set(families.spec(m.family).missing(m))
    missing = [e for e in chosen if e in binding and e in localizable]
    must_bind: dict[str, list[str]] = {}
    if m.reference_payload:
        must_bind[m.reference_class.value] = list(m.reference_payload)
    # strict payloads: a flag names defective items only, a localize the missing items only, a submit exactly
    # the packet; a class the task does not accept may name anything (it is wrong anyway)
    may_bind = {Action.FLAG_SOURCE_DEFECT.value: defective, Action.LOCALIZE_MISSING_EVIDENCE.value: missing,
                Action.SUBMIT_RISK_PACKET.value: list(m.reference_payload)
                if m.reference_class == Action.SUBMIT_RISK_PACKET else []}
    gold = (m.reference_class.value, tuple(sorted(must_bind.get(m.reference_class.value, []))))
    answer = TaskAnswer(task_id=task_id, family=m.family, moment_id=f"moment:{_h(m.family.value, m.subject)[:16]}",
                        accepted_classes=[m.reference_class], binding=binding, needed=m.needed, useful=m.useful,
                        reference=steps, reference_class=m.reference_class, reference_payload=m.reference_payload,
                        must_bind=must_bind, may_bind=may_bind, decision=_h(question, repr(gold))[:16],
                        source_facts=m.facts)
    return view, answer
