"""`voe compile`: find moments, materialize tasks, store them in the graph, write a versioned package.

Package layout (every file deterministic: sorted keys, sorted rows, no timestamps):
  tasks.jsonl      policy-visible TaskView per line
  evidence.jsonl   what each request returns (archived object or `unavailable`), policy-visible on request
  answers.jsonl    verifier-only TaskAnswer per line (never given to a policy)
  manifest.json    compiler version, graph hash, source records and versions, counts, file hashes
  schema/*.json    JSON Schema of each file, generated from the pydantic models
The content hash is sha256 over the three data files; compiling the same graph twice gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from voe import __version__
from voe.artifacts.clusters import clusters_of, detectable_difference
from voe.artifacts.observations import context_needs
from voe.artifacts.package import (
    GateReport,
    Manifest,
    TaskAnswer,
    TaskView,
    package_content_hash,
    write_package,
)
from voe.compiler.admission import Admission
from voe.compiler.annotate import PROMPT_VERSION as ANNOTATOR_PROMPT_VERSION
from voe.compiler.annotate import Annotator, Framing, filter_failures, menu_failures
from voe.compiler.caps import DEFAULT, Caps
from voe.compiler.families import Moment, priority_order
from voe.compiler.judge import CALIBRATION_TOLERANCE, CalibrationFailed, CalibrationResult, Judge, Verdict, judge_input
from voe.compiler.judge import PROMPT_VERSION as JUDGE_PROMPT_VERSION
from voe.compiler.moments import candidate, find_moments, load_catalog, materialize
from voe.graph import EdgeRow, Graph, GraphWriter, NodeRow
from voe.ingest import settle
from voe.jsonl import dump_models
from voe.ontology import Label, Rel, answer_id
from voe.progress import Progress

COMPILER_VERSION = f"voe-compiler/{__version__}"


class CompileSummary(BaseModel):
    tasks: int
    workflows: int
    families: dict[str, int]
    evidence_entries: int
    canonical_evidence: int
    content_hash: str
    graph_hash: str
    out: str
    decisions: int
    largest_item_group: int
    gold_facts: int
    largest_fact_group: int
    by_archive: dict[str, dict[str, int]]
    families_absent: dict[str, str]
    gate_passed: bool
    gate: list[dict[str, Any]]


class Audit:
    """What the admission decided about each candidate, for the graph (Annotation, JudgeVerdict, Calibration)
    and the manifest."""

    def __init__(self, annotator: Annotator, judge: Judge | None) -> None:
        self.annotator, self.judge = annotator, judge
        self.rows: dict[str, dict[str, Any]] = {}  # moment id -> annotation facts
        self.verdicts: dict[str, Verdict] = {}
        self.calibration: CalibrationResult | None = None
        self.rejected: list[tuple[TaskView, TaskAnswer, list[str]]] = []  # materialized, then refused by a filter

    def note(self, moment_id: str, framing: Framing | None, failures: list[str], task_id: str | None = None) -> None:
        self.rows[moment_id] = {"framing": framing, "failures": failures, "task_id": task_id}

    def summary(self) -> dict[str, Any]:
        rules = Counter(f.split(":", 1)[0] for r in self.rows.values() for f in r["failures"])
        return {"annotator": self.annotator.name, "candidates": len(self.rows),
                "admitted": sum(1 for r in self.rows.values() if not r["failures"]),
                "rejected_by_rule": dict(sorted(rules.items())),
                "judge": None if self.judge is None else {
                    "model": self.judge.model, "prompt_version": JUDGE_PROMPT_VERSION,
                    "rejected": sum(1 for v in self.verdicts.values() if not v.accept),
                    "failures": sum(1 for v in self.verdicts.values() if v.error),
                    "calibration": None if self.calibration is None else
                    f"{self.calibration.correct}/{self.calibration.cases} correct"}}


def compile_package(graph: Graph, out: Path, admission: Admission, annotator: Annotator | None = None,
                    judge: Judge | None = None, progress: Progress | None = None,
                    caps: Caps = DEFAULT) -> CompileSummary:
    """Compile the graph's decision moments into a package, admitted and gated by `admission`
    (compiler/admission.py; `voe compile` hands it voe.replay.admission's). `annotator` frames each moment (default: the
    deterministic template); a model's framings pass the deterministic filters and then, with `judge`, the
    calibrated judge. Raises CalibrationFailed (exit 1) before anything is written when the judge fails its
    calibration. `progress` (voe.progress) gets a message per stage and a bar over the moments framed and
    judged (the long part with a model)."""
    progress = progress or Progress(enabled=False)
    settle(graph)  # a record being swapped in by an ingest is read once it is whole
    annotator = annotator or Annotator()
    audit = Audit(annotator, judge)
    if judge is not None:
        progress.say(f"calibrating the judge {judge.model}")
        audit.calibration, verdicts = judge.calibrate()
        _store_calibration(graph, audit.calibration)
        if not audit.calibration.passed:
            # a judge that could not be asked is not a judge that answered wrong: say which it was
            failed = sorted({v.error for k, v in verdicts.items() if v.error and k in audit.calibration.misclassified})
            raise CalibrationFailed(
                f"the judge {judge.model} misclassified {len(audit.calibration.misclassified)} of "
                f"{audit.calibration.cases} calibration cases (tolerance {CALIBRATION_TOLERANCE:.0%}): "
                + ", ".join(audit.calibration.misclassified) + "; it is not used and nothing was compiled"
                + (f" ({failed[0]}" + (f", and {len(failed) - 1} other errors" if len(failed) > 1 else "") + ")"
                   if failed else ""))
    cat = load_catalog(graph)
    refused: dict[str, str] = {}
    moments = find_moments(graph, cat, admission, caps, refused=refused)
    progress.say(f"{len(moments)} decision moments in {len({m.workflow for m in moments})} workflows")
    pairs = _frame(moments, cat, annotator, judge, audit, progress, admission, caps)
    seen: set[str] = set()
    views: list[TaskView] = []
    answers: list[TaskAnswer] = []
    rejected: dict[str, list[str]] = {}
    rejected_moments: list[tuple[TaskView, TaskAnswer, list[str]]] = []
    owner: dict[str, tuple[str, TaskAnswer]] = {}
    # families in priority order: when two moments look the same to a policy, the earlier family keeps it
    pairs.sort(key=lambda p: (FAMILY_ORDER.index(p[1].family), p[0].task_id))
    for view, answer in pairs:
        if view.task_id in seen:  # two queries can reach the same moment; keep one
            continue
        seen.add(view.task_id)
        failures = admission_failures(view, answer, set(cat.rows))
        # the question alone: a policy cannot tell two tasks apart by their distractors
        visible = view.question
        if visible in owner and _gold(owner[visible][1]) != _gold(answer):
            failures.append(f"same visible question as {owner[visible][0]} with another gold answer")
        if failures:
            rejected[view.task_id] = failures
            rejected_moments.append((view, answer, failures))
            if answer.moment_id in audit.rows:
                audit.rows[answer.moment_id]["failures"].extend(f"admission: {f}" for f in failures)
            continue
        owner.setdefault(visible, (view.task_id, answer))
        views.append(view)
        answers.append(answer)
    rejected_moments += audit.rejected
    progress.say(f"release gate: {len(views)} tasks through the reference, the baselines and the probes")
    before = {v.task_id for v in views}
    views, gate, filtered = admission.gate(views, cat.objects, {a.task_id: a for a in answers}, keep=_is_defect)
    kept_ids = {v.task_id for v in views}
    trimmed = sorted(before - kept_ids)
    answers = [a for a in answers if a.task_id in kept_ids]
    order = sorted(range(len(views)), key=lambda i: views[i].task_id)
    views, answers = [views[i] for i in order], [answers[i] for i in order]
    offered = sorted({e.evidence_id for v in views for e in v.menu})
    evidence = [cat.objects[e] for e in offered]
    records = graph.query("compiler/records")
    graph_hash = hashlib.sha256(json.dumps(records, sort_keys=True).encode()).hexdigest()

    files = {"tasks.jsonl": dump_models(views), "evidence.jsonl": dump_models(evidence),
             "answers.jsonl": dump_models(answers)}
    content_hash = package_content_hash(files)
    families = dict(sorted(Counter(a.family.value for a in answers).items()))
    by_item = Counter(e for a in answers for e in set(a.binding))
    decisions = len({a.decision for a in answers})
    counts: dict[str, Any] = {"rejected": len(rejected), "tasks": len(views),
                              "workflows": len({v.workflow_id for v in views}), "families": families,
                              "decisions": decisions,
                              "decisions_by_family": dict(sorted(Counter(
                                  a.family.value for a in {a.decision: a for a in answers}.values()).items())),
                              "largest_item_group": max(by_item.values(), default=0),
                              "evidence_entries": sum(len(v.menu) for v in views), "canonical_evidence": len(offered),
                              **fact_counts(answers), "by_archive": by_archive(views, answers, cat),
                              "by_format": by_format(answers, cat),
                              "filtered": filtered,
                              # why a candidate is not a task: a probe's limit kept it out (selection), or the gate's
                              # classifiers dropped it after (trimming); by task id, stable across compiles
                              "held_back": {**{t: f"selection: {why}" for t, why in refused.items()},
                                            **{t: "trimmed: a classifier of the gate solves it" for t in trimmed}},
                              "families_absent": families_absent(families),
                              # what the observations ask of a model's context (voe run warns against it)
                              "observations": context_needs(views, {e.evidence_id: e for e in evidence}),
                              "detectable_difference": detectable_difference(clusters_of(
                                  {a.task_id: (v.workflow_id, a.gold_facts) for v, a in zip(views, answers, strict=True)}))}
    manifest = Manifest(compiler_version=COMPILER_VERSION, content_hash=content_hash, graph_hash=graph_hash,
                        sources=[{k: r[k] for k in ("ark", "version", "title", "provenance", "stamp")}
                                 | {k: r[k] for k in ("license", "publisher", "landing_page") if isinstance(r[k], str)}
                                 for r in records],
                        counts=counts, files={n: hashlib.sha256(d).hexdigest() for n, d in sorted(files.items())},
                        annotator=annotator.name, gate=gate.model_dump())
    if annotator.model is not None or judge is not None:  # the template's package stays byte for byte as it was
        manifest.counts["admission"] = audit.summary()
    write_package(out, files, manifest)
    _store(graph, views, answers, cat.workflows, content_hash, rejected_moments)
    _store_audit(graph, audit, content_hash, {a.moment_id for a in answers} | {a.moment_id for _, a, _ in rejected_moments})
    return CompileSummary(tasks=len(views), workflows=counts["workflows"], families=families,
                          evidence_entries=counts["evidence_entries"], canonical_evidence=len(offered),
                          content_hash=content_hash, graph_hash=graph_hash, out=str(out), decisions=decisions,
                          largest_item_group=counts["largest_item_group"], gold_facts=counts["gold_facts"],
                          largest_fact_group=counts["largest_fact_group"], by_archive=counts["by_archive"],
                          families_absent=counts["families_absent"], gate_passed=gate.passed,
                          gate=[r.model_dump() for r in gate.rows])


def _frame(moments: list[Moment], cat: Any, annotator: Annotator, judge: Judge | None,
           audit: Audit, progress: Progress, admission: Admission, caps: Caps) -> list[tuple[TaskView, TaskAnswer]]:
    """Each moment framed by the annotator; a model framing that fails a filter or the judge is rejected (and
    noted); the template's framing goes straight on to the compiler's own admission checks."""
    candidates = [candidate(m, cat, caps) for m in moments]
    with progress.bar("frame", len(candidates), "moments") as bar:
        framings = annotator.annotate(candidates, done=bar.advance)
    known = set(cat.rows)
    pairs: list[tuple[TaskView, TaskAnswer]] = []
    for m, c in zip(moments, candidates, strict=True):
        f = framings[c.moment_id]
        if isinstance(f, str):
            audit.note(c.moment_id, None, [f"annotation.invalid: {f}"])
            continue
        if annotator.model is not None:
            if early := menu_failures(f, c, known):
                audit.note(c.moment_id, f, early)
                continue
        view, answer = materialize(m, cat, f, caps)
        failures = filter_failures(f, c, view, answer, known, {x for x in answer.source_facts if x.startswith(
            "defect:")}, admission.reference_path) if annotator.model is not None else []
        audit.note(c.moment_id, f, failures, view.task_id)
        if not failures:
            pairs.append((view, answer))
        else:
            audit.rejected.append((view, answer, failures))
    if judge is not None and pairs:
        inputs = {v.task_id: judge_input(v, a, cat.objects) for v, a in pairs}
        with progress.bar("judge", len(inputs), "tasks") as bar:
            verdicts = judge.judge_all(inputs, done=bar.advance)
        kept = []
        for v, a in pairs:
            verdict = verdicts[v.task_id]
            audit.verdicts[a.moment_id] = verdict
            if verdict.accept:
                kept.append((v, a))
            else:
                broken = [k for k, c in verdict.criteria.items() if not c.passed]
                audit.rows[a.moment_id]["failures"].append(
                    f"judge.rejected: {verdict.error or ', '.join(broken)}")
                audit.rejected.append((v, a, audit.rows[a.moment_id]["failures"]))
        pairs = kept
    return sorted(pairs, key=lambda p: p[0].task_id)


def _store_calibration(graph: Graph, result: CalibrationResult) -> None:
    node = NodeRow(_calibration_id(result), (Label.CALIBRATION,), {
        "model": result.model, "prompt_version": result.prompt_version, "cases": result.cases,
        "correct": result.correct, "misclassified": result.misclassified, "tolerance": result.tolerance,
        "passed": result.passed, "at": datetime.now(UTC).isoformat(timespec="seconds")})
    graph.transact(lambda w: w.nodes([node]))


def _calibration_id(result: CalibrationResult) -> str:
    return f"calibration:{result.model}:v{result.prompt_version}"


def _store_audit(graph: Graph, audit: Audit, package: str, stored: set[str]) -> None:
    """Every annotation with its filter verdicts, and every judge verdict, linked to its decision moment and
    task, so a reviewer sees in Browser why each candidate was admitted or rejected."""
    nodes: list[NodeRow] = []
    edges: list[EdgeRow] = []
    now = datetime.now(UTC).isoformat(timespec="seconds")
    settings = audit.annotator.settings_json() if hasattr(audit.annotator, "settings_json") else None
    for moment_id, row in sorted(audit.rows.items()):
        framing: Framing | None = row["framing"]
        aid = f"annotation:{moment_id.removeprefix('moment:')}:{package[:12]}"
        nodes.append(NodeRow(aid, (Label.ANNOTATION,), {
            "annotator": audit.annotator.name, "model": audit.annotator.model, "settings": settings,
            "prompt_version": ANNOTATOR_PROMPT_VERSION if audit.annotator.model else None,
            "title": framing.title if framing else None, "context": framing.context if framing else None,
            "question": framing.question if framing else None, "menu": framing.menu if framing else [],
            "filter_failures": row["failures"], "admitted": not row["failures"], "package": package, "at": now}))
        nodes[-1].props["moment_id"] = moment_id
        if moment_id in stored:  # materialized: _store wrote its DecisionMoment (admitted or with its reasons)
            edges.append(EdgeRow(Rel.ANNOTATES, aid, Label.ANNOTATION, moment_id, Label.DECISION_MOMENT))
            if not row["failures"]:
                edges.append(EdgeRow(Rel.FRAMED_BY, row["task_id"], Label.TASK, aid, Label.ANNOTATION))
        if (verdict := audit.verdicts.get(moment_id)) is not None and audit.judge is not None:
            vid = f"verdict:{moment_id.removeprefix('moment:')}:{package[:12]}"
            nodes.append(NodeRow(vid, (Label.JUDGE_VERDICT,), {
                "model": audit.judge.model, "prompt_version": JUDGE_PROMPT_VERSION, "accept": verdict.accept,
                "error": verdict.error, "criteria": json.dumps({k: {"pass": c.passed, "reason": c.reason}
                                                               for k, c in verdict.criteria.items()}, sort_keys=True),
                "failed_criteria": [k for k, c in verdict.criteria.items() if not c.passed], "package": package,
                "at": now}))
            edges.append(EdgeRow(Rel.JUDGES, vid, Label.JUDGE_VERDICT, aid, Label.ANNOTATION))
            if audit.calibration is not None:
                edges.append(EdgeRow(Rel.CALIBRATED_BY, vid, Label.JUDGE_VERDICT, _calibration_id(audit.calibration),
                                     Label.CALIBRATION))
    def work(w: GraphWriter) -> None:
        w.run("compiler/clear_annotations", package=package)
        w.nodes(nodes)
        w.edges(edges)

    graph.transact(work)


def since(old: Path, new: Path) -> dict[str, Any]:
    """What changed from the package at `old` to the one at `new`: the tasks added, kept and removed (a task's id
    is its gold facts and its packet, so the same decision keeps its id), each removed one with why, from the new
    manifest: a probe's limit kept it out, the gate's classifiers trimmed it, or the graph no longer holds it."""
    from voe.artifacts.package import load_package

    old_views, _, old_answers, _ = load_package(old)
    new_views, _, new_answers, manifest = load_package(new)
    before, after = {v.task_id for v in old_views}, {v.task_id for v in new_views}
    held = manifest.counts.get("held_back", {})
    return {"old": str(old), "added": sorted(after - before), "kept": len(before & after),
            "gold_changed": sorted(t for t in before & after
                                   if _gold(old_answers[t]) != _gold(new_answers[t])),
            "removed": {t: held.get(t, "not a candidate of this graph (its facts or packet changed, or its archive "
                                       "is gone)") for t in sorted(before - after)},
            "removed_families": dict(sorted(Counter(old_answers[t].family.value for t in before - after).items()))}


def gate_table(summary: CompileSummary) -> str:
    return GateReport.model_validate({"passed": summary.gate_passed, "rows": summary.gate}).table()


FAMILY_ORDER = priority_order()  # compiler/families/: each family's priority

# Why a family can be absent from a package: the data hold nothing that supports it under its rule (the
# family's gold would be weak, so none is shipped).
ABSENT: dict[str, str] = {
    "source_integrity": "no item of these archives has a defect that breaks provenance or checkability",
    "missing_evidence": "these archives attest no item they cannot supply (no stated removal without a named "
                        "replacement, no checksum file of a file the record lacks, no calibration a measurement row "
                        "names that nothing holds)",
    "calibration_sufficiency": "no measurement's metadata names a calibration these archives hold (a keyword in a "
                               "title is not a statement)",
    "packet_submission": "no clean packet fits the package's class balance",
    "packet_escalation": "no packet rests on a defective item other than its subject, on a calibration only "
                         "claimed, on a change no changelog states, or on an item whose material its record contradicts",
}


def _is_defect(answer: TaskAnswer) -> bool:
    """A task resting on a defect: never dropped for balance."""
    return answer.reference_class.value in ("flag_source_defect", "abstain_or_escalate")


def fact_counts(answers: list[TaskAnswer]) -> dict[str, Any]:
    """Distinct gold facts and how many tasks rest on each (DESIGN §7: at most two)."""
    per_fact = Counter(f for a in answers for f in set(a.gold_facts))
    return {"gold_facts": len(per_fact), "largest_fact_group": max(per_fact.values(), default=0),
            "gold_facts_by_kind": dict(sorted(Counter(f.split(":", 1)[0] for f in per_fact).items())),
            # a submission whose gold rests only on clean items: past half the tasks, "submit what is named" wins
            "clean_submissions": sum(1 for a in answers
                                     if a.gold_facts and all(f.startswith("clean:") for f in a.gold_facts))}


def by_archive(views: list[TaskView], answers: list[TaskAnswer], cat: Any) -> dict[str, dict[str, int]]:
    """Tasks per archive (the record or folder a workflow belongs to) and family."""
    family = {a.task_id: a.family.value for a in answers}
    out: dict[str, Counter[str]] = {}
    for v in views:
        record = v.workflow_id.removeprefix("wf:").split("/", 1)[0] if v.workflow_id.startswith("wf:folder:") \
            else v.workflow_id.removeprefix("wf:")
        out.setdefault(record, Counter())[family[v.task_id]] += 1
    return {k: dict(sorted(c.items())) for k, c in sorted(out.items())}


def by_format(answers: list[TaskAnswer], cat: Any) -> dict[str, dict[str, Any]]:
    """Tasks, distinct gold facts and tasks per family for each source format the subject was read from (a NERDm
    record, a collection of records, a plain folder, an RO-Crate, a BagIt bag): how far the package reaches into
    what archives publish, and whether a format gives more than one kind of decision."""
    tasks: Counter[str] = Counter()
    facts: dict[str, set[str]] = {}
    families: dict[str, Counter[str]] = {}
    for a in answers:
        fmt = str(cat.rows[a.binding[0]].get("source_format") or "nerdm") if a.binding[0] in cat.rows else "unknown"
        tasks[fmt] += 1
        facts.setdefault(fmt, set()).update(a.gold_facts)
        families.setdefault(fmt, Counter())[a.family.value] += 1
    return {f: {"tasks": tasks[f], "gold_facts": len(facts[f]), "families": dict(sorted(families[f].items()))}
            for f in sorted(tasks)}


def families_absent(families: dict[str, int]) -> dict[str, str]:
    return {f.value: ABSENT[f.value] for f in FAMILY_ORDER if f.value not in families}


def _gold(answer: TaskAnswer) -> tuple[Any, ...]:
    return (frozenset(answer.accepted_classes), tuple(sorted((k, tuple(v)) for k, v in answer.must_bind.items())))


def admission_failures(view: TaskView, answer: TaskAnswer, known: set[str]) -> list[str]:
    """The deterministic filters of DESIGN §7 (the LLM judge comes after them); empty means admitted."""
    failures = []
    menu = {e.evidence_id for e in view.menu}
    visible = view.model_dump_json()
    # TaskView forbids extra fields, so a verifier-only field can only leak as a value: look for the answer's
    # own identifiers (moment id, defect ids) in what the policy sees
    if answer.moment_id in visible or any(f.startswith("defect:") and f in visible for f in answer.source_facts):
        failures.append("a verifier-only value or answer artifact (moment or defect id) is visible to the policy")
    if unknown := menu - known:
        failures.append(f"offers evidence refs that do not exist {sorted(unknown)}")
    if not set(answer.binding) <= menu:
        failures.append("binds evidence that is not on its menu")
    pulls = [s.evidence_id for s in answer.reference if s.evidence_id]
    if not set(pulls) <= menu or not set(answer.reference_payload) <= set(pulls):
        failures.append("the reference path does not match the episode (pulls off the menu, or binds unpulled evidence)")
    if answer.reference_class not in answer.accepted_classes or not set(answer.needed) <= set(pulls):
        failures.append("the verifier does not match the episode (reference class not accepted, or not grounded)")
    ref_payload = set(answer.reference_payload)
    allowed = answer.may_bind.get(answer.reference_class.value)
    if not set(answer.must_bind.get(answer.reference_class.value, [])) <= ref_payload or (
            allowed is not None and not ref_payload <= set(allowed)):
        failures.append("the reference payload fails its own binding rule")
    if set(answer.must_bind) - {c.value for c in answer.accepted_classes}:
        failures.append("binding rules for a class the task does not accept")
    return failures


BINDING_CLASSES = ("flag_source_defect", "localize_missing_evidence", "submit_risk_packet")


def _store(graph: Graph, views: list[TaskView], answers: list[TaskAnswer], workflows: dict[str, str],
           package: str, rejected: list[tuple[TaskView, TaskAnswer, list[str]]] | None = None) -> None:
    """Workflows, moments and tasks go into the graph too, so Browser shows what was compiled and the
    verifiers can run as graph queries. The answers are Answer nodes no relationship reaches (voe.ontology
    ANSWER): a reviewer who expands nodes in Browser never meets one (policies never read the graph)."""
    nodes: list[NodeRow] = []
    edges: list[EdgeRow] = []
    used = {v.workflow_id for v in views} | {v.workflow_id for v, _, _ in rejected or []}
    for wf in sorted(used):
        nodes.append(NodeRow(wf, (Label.WORKFLOW,), {"title": workflows[wf]}))
    by_task = {a.task_id: a for a in answers}
    for v in views:
        a = by_task[v.task_id]
        # what a reviewer may expand to: the moment and the task hold nothing of the answer
        nodes.append(NodeRow(a.moment_id, (Label.DECISION_MOMENT,), {
            "admitted": True, "package": package, "caption": "decision moment"}))
        nodes.append(NodeRow(v.task_id, (Label.TASK,), {
            "package": package, "horizon": v.horizon, "question": v.question, "admitted": True,
            "admission": "deterministic filters passed: evidence refs exist, binding on the menu, reference path "
                         "and verifier match the episode, no answer artifact visible, question not ambiguous"}))
        # the answer: a node no relationship reaches (Browser's expansion follows relationships only); the verifiers
        # and `voe browse --answers` join it by id
        nodes.append(NodeRow(answer_id(v.task_id), (Label.ANSWER,), {
            "task_id": v.task_id, "moment_id": a.moment_id, "package": package, "family": a.family.value,
            "source_facts": a.source_facts, "accepted_classes": [c.value for c in a.accepted_classes],
            "reference_class": a.reference_class.value, "needed": a.needed, "useful": a.useful,
            "binding": a.binding, "decision": a.decision, "caption": "answer",
            **{f"must_bind_{cls}": a.must_bind.get(cls, []) for cls in BINDING_CLASSES},
            **{f"may_bind_{cls}": a.may_bind.get(cls, []) for cls in BINDING_CLASSES}}))
        edges += [EdgeRow(Rel.IN_WORKFLOW, a.moment_id, Label.DECISION_MOMENT, v.workflow_id, Label.WORKFLOW),
                  EdgeRow(Rel.IN_WORKFLOW, v.task_id, Label.TASK, v.workflow_id, Label.WORKFLOW),
                  EdgeRow(Rel.DERIVED_FROM, v.task_id, Label.TASK, a.moment_id, Label.DECISION_MOMENT)]
        edges += [EdgeRow(Rel.OFFERS, v.task_id, Label.TASK, e.evidence_id, Label.EVIDENCE, {"entry_id": e.entry_id})
                  for e in v.menu]
    # every admission decision is stored: a rejected candidate stays a DecisionMoment with its reasons
    for v, a, reasons in rejected or []:
        nodes.append(NodeRow(a.moment_id, (Label.DECISION_MOMENT,), {
            "admitted": False, "package": package, "rejection": reasons, "caption": "decision moment"}))
        nodes.append(NodeRow(answer_id(a.moment_id), (Label.ANSWER,), {
            "moment_id": a.moment_id, "package": package, "family": a.family.value, "source_facts": a.source_facts,
            "admitted": False, "caption": "answer"}))
        edges.append(EdgeRow(Rel.IN_WORKFLOW, a.moment_id, Label.DECISION_MOMENT, v.workflow_id, Label.WORKFLOW))
    def work(w: GraphWriter) -> None:
        # an earlier compile's (or an earlier voe's) tasks and moments of these ids lose every property and edge
        # they had: none of the answer an older graph put on them may stay where a reviewer can expand to it
        w.run("compiler/clear_task_edges", task_ids=[v.task_id for v in views],
              moment_ids=sorted({by_task[v.task_id].moment_id for v in views} | {a.moment_id for _, a, _ in rejected or []}))
        w.nodes(nodes)
        w.edges(edges)

    graph.transact(work)
