"""Decision moments -> realized-only tasks.

The catalog query (cypher/compiler/evidence_catalog.cypher) gathers every item's facts and the defects behind
each (defects_by_evidence.cypher); a family whose call rests on another graph fact names its query in its spec
(missing_evidence: the gaps), run here once per compile. Nothing is invented: an item with no acquisition path answers
`unavailable`, and what a request returns is compiler/observations.py's statement of the archive's facts.

A task is a packet: a subject item and what the packet is to rest on (its support), named in the question.
A subject has up to three packets, by what they rest on (`Shape`): the subject alone; the subject with its
workflow's readme (for a release-note item, the changelog of that release); and the subject with its readme
and the calibration the archive names for its measurement (compiler/families/calibration_sufficiency.py), which
the question leaves to the agent to find. Each packet goes through the families' chain of rules
(compiler/families/, CHAIN); the first rule that applies decides its gold. docs/golds.md, generated from
the families' specs and the chain, lists the families and the rules in order with what each decides.

Which packets become tasks is compiler/select.py's choice: at most two tasks rest on one fact of the archive,
one task a subject, and clean submissions are kept to the package's class balance, chosen to contrast the
defects (clean subjects this copy does not hold, in every workflow with defects) and to look odd while being
fine (hard negatives).
"""

from __future__ import annotations

from itertools import zip_longest
from typing import Any

from voe.artifacts.package import REQUEST_FOR_KIND, REQUESTS, TERMINALS, Action, MenuEntry, ReferenceStep, TaskAnswer, TaskView
from voe.artifacts.question import CALIBRATION, FRAMING, INSTRUCTIONS, QUESTION, SUBJECT_OF, SUPPORT, listed
from voe.compiler import families
from voe.compiler.admission import Admission
from voe.compiler.annotate import Candidate, Framing
from voe.compiler.caps import DEFAULT, Caps
from voe.compiler.catalog import (
    Catalog,
    calibrators,
    hard_negatives,
    load_catalog,
    named_calibrations,
    readme_of,
    subject_file,
    unstated_change,
    version_change,
    workflow_key,
)
from voe.compiler.catalog import h as _h
from voe.compiler.families import Moment, Subject
from voe.compiler.families.base import Shape
from voe.compiler.select import select
from voe.graph import Graph

SUBJECT_KINDS = ("characterization", "process_record")
__all__ = ["QUESTION", "Catalog", "load_catalog", "workflow_key", "find_moments", "candidate", "materialize", "question_of",
           "task_key"]


def packets(cat: Catalog, e: str) -> list[tuple[Shape, list[str], list[str]]]:
    """The packets a subject can be framed as: (shape, support, calibration)."""
    row = cat.rows[e]
    if row["provenance"] == "release_notes":
        want = f"changelog_{row.get('release_to')}.txt"
        log = sorted(x for x, r in cat.rows.items() if r["record_id"] == row["record_id"]
                     and (r.get("filepath") or "").endswith(want))
        return [("document", log[:1], [])] if log else [("alone", [], [])]
    if row["provenance"] == "measurement":  # a measurement rests on the calibration its metadata names, always
        return [("calibration", [], calibrators(cat, e))]
    readme = readme_of(cat, e)
    out: list[tuple[Shape, list[str], list[str]]] = []
    if readme:
        out.append(("document", [readme], []))
    out.append(("alone", [], []))
    return out


def _is_container(cat: Catalog, e: str) -> bool:
    """A folder holding other evidence folders: a packet on it would be a packet on each of them."""
    return bool(cat.rows[e]["is_folder"] and cat.rows[e]["subfolders"])


def is_subject(cat: Catalog, e: str, release_seen: set[tuple[str, str]]) -> bool:
    row = cat.rows[e]
    if row["provenance"] == "release_notes":
        key = (cat.workflow_of[e], row["name"])
        if key in release_seen or row.get("release_status") not in ("removed", "renamed", "changed"):
            return False
        release_seen.add(key)  # the latest summary that lists a file speaks for it
        # a removal or rename no changelog states decides nothing; a change decides when an item names it, or
        # when nothing in the changelog covers it (an unstated change), not when only a blanket item covers it
        return bool(row.get("release_stated")) or unstated_change(row)
    if row["provenance"] == "attested":
        return True
    if row["provenance"] == "named":
        return False  # a calibration a measurement names: the measurement is the subject
    if row["provenance"] == "version_notes":  # a file a later version dropped: a subject unless a statement covers it
        return version_change(row) in ("denied", "none")
    if row["provenance"] == "measurement":
        return not row.get("calibration_flag") and bool(named_calibrations(cat, e) or row.get("calibration_claims"))
    if row["kind"] not in SUBJECT_KINDS and not cat.own_defects.get(e) and e not in cat.resolved:
        return False
    if _is_container(cat, e) and not cat.own_defects.get(e):  # a defect bound to a folder is its decision
        return False
    return not (cat.objects[e].status == "referenced" or e in cat.undecided)


def candidates(graph: Graph, cat: Catalog) -> list[Moment]:
    """Every packet of every subject item through the families' chain of rules: the first rule that applies
    decides its moment, or that it has none."""
    out: list[Moment] = []
    found = {s.family: frozenset(r["evidence_id"] for r in graph.query(s.query) if r["evidence_id"] in cat.rows)
             for s in families.specs() if s.query is not None}
    chain = families.rules()
    release_seen: set[tuple[str, str]] = set()
    for e in sorted(cat.rows, key=lambda x: (-_release_rank(cat.rows[x]), x)):
        if not is_subject(cat, e, release_seen):
            continue
        for shape, support, cal in packets(cat, e):
            subject = Subject(cat, e, cat.workflow_of[e], support, found, shape, tuple(cal))
            for r in chain:
                decided = r.match(subject)
                if decided is not None:
                    if isinstance(decided, Moment):
                        out.append(decided)
                    break
    return out


def find_moments(graph: Graph, cat: Catalog, admission: Admission, caps: Caps = DEFAULT,
                 refused: dict[str, str] | None = None) -> list[Moment]:
    """The candidates the selection keeps, with the probes `admission` replays on each (compiler/select.py);
    `refused` gets each candidate a probe's limit kept out, by its task id, with the probes that kept it."""
    def framed(m: Moment, c: Catalog) -> tuple[TaskView, TaskAnswer]:
        return materialize(m, c, caps=caps)

    return select(candidates(graph, cat), cat, admission.solver(cat, framed), caps, refused=refused, key=task_key)


def _release_rank(row: dict[str, Any]) -> int:
    to = str(row.get("release_to") or "0")
    return sum(int(p) * 1000 ** (2 - i) for i, p in enumerate(to.split(".")[:3]) if p.isdigit())




def _about(cat: Catalog, e: str) -> str:
    """Every family frames its subject the same way: a file of the item (a folder: its first member file) and
    the item's title; a release-note item by the summary that lists it."""
    row = cat.rows[e]
    if row["provenance"] == "release_notes":
        return str(row["title"])
    file = subject_file(cat, e) if row["is_folder"] or row.get("filepath") else None
    return f"{file}{SUBJECT_OF.format(title=row['title'])}" if file else str(row["title"])


def _support_clause(cat: Catalog, m: Moment) -> str:
    names = [str(cat.rows[s]["title"]) for s in m.support]
    if m.shape == "calibration":
        names.append(CALIBRATION)
    if not names:
        return ""
    return SUPPORT.format(subject=cat.rows[m.subject]["title"], listed=listed(names))


def moment_id(m: Moment) -> str:
    return f"moment:{_h(m.family.value, m.subject, m.shape)[:16]}"


def task_key(m: Moment) -> str:
    """A task's id: its packet (the subject, what it rests on, and whether it leaves a calibration to the agent),
    nothing else: a task keeps its id when another archive is compiled beside it or a model frames it (its menu
    or wording may differ; its decision does not), and one subject is one task. Only what a policy sees goes in
    (the subject and support are named by the question): an id hashed from the gold facts or the family could be
    inverted by trying each candidate fact against it."""
    return f"task:{_h('task', m.subject, m.shape, *m.support)[:16]}"


def candidate(m: Moment, cat: Catalog, caps: Caps = DEFAULT) -> Candidate:
    """The moment as an annotator sees it: workflow, subject, support, the item pool with the facts a request
    would return for each, and the template's framing and menu. Nothing verifier-only (family, gold, defects)."""
    # Menu choice and order are seeded by what the policy sees (workflow and subject) and nothing else: a
    # seed holding the family could be inverted by trying each family name against the visible order.
    seed = _h(m.workflow, m.subject)
    binding = list(dict.fromkeys(m.binding))
    odd = set(hard_negatives(cat, m.workflow, set(binding)))
    pool = [e for e in cat.by_workflow[m.workflow] if e not in binding and e not in cat.undecided]
    # items like the ones the packet rests on besides its subject (another calibration, another calibration the
    # archive lacks): "take every calibration on the menu" fails; then odd-looking distractors and plain ones in
    # turn: odd ones so that "flag anything odd" fails, plain ones so that "submit whatever the archive returns"
    # fails too. All three in turn, so that the menu's shape is the workflow's, not the answer's.
    alike = {(cat.rows[e]["kind"], cat.objects[e].status) for e in binding if e != m.subject}
    confusers = sorted((e for e in pool if (cat.rows[e]["kind"], cat.objects[e].status) in alike),
                       key=lambda e: _h(seed, e))
    odd_first = sorted((e for e in pool if e in odd and e not in confusers), key=lambda e: _h(seed, e))
    plain = sorted((e for e in pool if e not in odd and e not in confusers), key=lambda e: _h(seed, e))
    pool = [e for trio in zip_longest(confusers, odd_first, plain) for e in trio if e is not None]
    default = binding + pool[: max(0, caps.menu - len(binding))]
    template = Framing(title="", context=FRAMING.format(workflow=cat.workflows[m.workflow],
                                                       subject=_about(cat, m.subject), support=_support_clause(cat, m)),
                       question="", menu=default)
    offered = binding + pool[:caps.pool]

    def item(e: str) -> dict[str, Any]:
        obj = cat.objects[e]
        return {"id": e, "kind": cat.rows[e]["kind"], "title": cat.rows[e]["title"], "status": obj.status,
                "facts": [f.statement for f in obj.facts][:12]}

    named = [e for e in binding if e not in m.calibrators]
    context = {"workflow": cat.workflows[m.workflow], "subject": item(m.subject),
               "required": [item(e) for e in named], "pool": [item(e) for e in offered if e not in named]}
    return Candidate(moment_id=moment_id(m), workflow=m.workflow, subject=m.subject, support=list(m.support),
                     binding=binding, pool=offered, default_menu=default, template=template, context=context)


def question_of(framing: Framing) -> str:
    """The policy-visible question: the framing, then the fixed instructions (never written by a model)."""
    return " ".join(x for x in (framing.title, framing.context, framing.question) if x) + INSTRUCTIONS


def materialize(m: Moment, cat: Catalog, framing: Framing | None = None,
                caps: Caps = DEFAULT) -> tuple[TaskView, TaskAnswer]:
    c = candidate(m, cat, caps)
    framing = framing or c.template
    seed = _h(m.workflow, m.subject)
    binding = c.binding
    chosen = list(dict.fromkeys(framing.menu))
    chosen.sort(key=lambda e: _h(seed, "order", e))
    question = question_of(framing)
    task_id = task_key(m)
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
    answer = TaskAnswer(task_id=task_id, family=m.family, moment_id=moment_id(m),
                        accepted_classes=[m.reference_class], binding=binding, needed=m.needed, useful=m.useful,
                        reference=steps, reference_class=m.reference_class, reference_payload=m.reference_payload,
                        must_bind=must_bind, may_bind=may_bind, decision=_h(question, repr(gold))[:16],
                        source_facts=m.facts, gold_facts=sorted(set(m.gold_facts)))
    return view, answer
