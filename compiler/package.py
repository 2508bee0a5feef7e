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
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from compiler.gate import GateReport, run_gate
from compiler.models import EvidenceObject, Family, Manifest, TaskAnswer, TaskView
from compiler.moments import find_moments, load_catalog, materialize
from ingest.loader import settle
from voe import __version__
from voe.errors import InputError
from voe.graph import EdgeRow, Graph, NodeRow
from voe.ontology import Label, Rel

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
    gate_passed: bool
    gate: list[dict[str, Any]]


def _jsonl(models: list[Any]) -> bytes:
    return b"".join(json.dumps(m.model_dump(mode="json"), sort_keys=True, ensure_ascii=False).encode() + b"\n"
                    for m in models)


def compile_package(graph: Graph, out: Path) -> CompileSummary:
    settle(graph)  # a record being swapped in by an ingest is read once it is whole
    cat = load_catalog(graph)
    moments = find_moments(graph, cat)
    pairs = sorted((materialize(m, cat) for m in moments), key=lambda p: p[0].task_id)
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
            continue
        owner.setdefault(visible, (view.task_id, answer))
        views.append(view)
        answers.append(answer)
    order = sorted(range(len(views)), key=lambda i: views[i].task_id)
    views, answers = [views[i] for i in order], [answers[i] for i in order]
    offered = sorted({e.evidence_id for v in views for e in v.menu})
    evidence = [cat.objects[e] for e in offered]
    records = graph.query("compiler/records")
    graph_hash = hashlib.sha256(json.dumps(records, sort_keys=True).encode()).hexdigest()

    out.mkdir(parents=True, exist_ok=True)
    files = {"tasks.jsonl": _jsonl(views), "evidence.jsonl": _jsonl(evidence), "answers.jsonl": _jsonl(answers)}
    content_hash = hashlib.sha256(b"".join(hashlib.sha256(files[n]).digest() for n in sorted(files))).hexdigest()
    for name, data in files.items():
        (out / name).write_bytes(data)
    (out / "schema").mkdir(exist_ok=True)
    for name, model in (("task", TaskView), ("evidence", EvidenceObject), ("answer", TaskAnswer), ("manifest", Manifest)):
        (out / "schema" / f"{name}.schema.json").write_text(json.dumps(model.model_json_schema(), indent=2, sort_keys=True))
    families = dict(sorted(Counter(a.family.value for a in answers).items()))
    by_item = Counter(e for a in answers for e in set(a.binding))
    decisions = len({a.decision for a in answers})
    gate = run_gate(views, {e.evidence_id: e for e in evidence}, {a.task_id: a for a in answers})
    counts: dict[str, Any] = {"rejected": len(rejected), "tasks": len(views),
                              "workflows": len({v.workflow_id for v in views}), "families": families,
                              "decisions": decisions,
                              "decisions_by_family": dict(sorted(Counter(
                                  a.family.value for a in {a.decision: a for a in answers}.values()).items())),
                              "largest_item_group": max(by_item.values(), default=0),
                              "evidence_entries": sum(len(v.menu) for v in views), "canonical_evidence": len(offered)}
    manifest = Manifest(compiler_version=COMPILER_VERSION, content_hash=content_hash, graph_hash=graph_hash,
                        sources=[{k: r[k] for k in ("ark", "version", "title", "provenance", "stamp")} for r in records],
                        counts=counts, files={n: hashlib.sha256(d).hexdigest() for n, d in sorted(files.items())},
                        annotator="deterministic template (compiler/moments.py QUESTION)",
                        gate=gate.model_dump())
    (out / "manifest.json").write_text(json.dumps(manifest.model_dump(), indent=2, sort_keys=True) + "\n")
    _store(graph, views, answers, cat.workflows, content_hash, rejected_moments)
    return CompileSummary(tasks=len(views), workflows=counts["workflows"], families=families,
                          evidence_entries=counts["evidence_entries"], canonical_evidence=len(offered),
                          content_hash=content_hash, graph_hash=graph_hash, out=str(out), decisions=decisions,
                          largest_item_group=counts["largest_item_group"], gate_passed=gate.passed,
                          gate=[r.model_dump() for r in gate.rows])


def gate_table(summary: CompileSummary) -> str:
    return GateReport.model_validate({"passed": summary.gate_passed, "rows": summary.gate}).table()


FAMILY_ORDER = [Family.SOURCE_INTEGRITY, Family.MISSING_EVIDENCE, Family.CALIBRATION_SUFFICIENCY,
                Family.PACKET_SUBMISSION, Family.PACKET_ESCALATION]


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
    verifiers can run as graph queries (BINDS is verifier-only; policies never read the graph)."""
    nodes: list[NodeRow] = []
    edges: list[EdgeRow] = []
    used = {v.workflow_id for v in views} | {v.workflow_id for v, _, _ in rejected or []}
    for wf in sorted(used):
        nodes.append(NodeRow(wf, (Label.WORKFLOW,), {"title": workflows[wf]}))
    by_task = {a.task_id: a for a in answers}
    for v in views:
        a = by_task[v.task_id]
        nodes.append(NodeRow(a.moment_id, (Label.DECISION_MOMENT,), {
            "family": a.family.value, "source_facts": a.source_facts, "admitted": True, "package": package}))
        nodes.append(NodeRow(v.task_id, (Label.TASK,), {
            "family": a.family.value, "package": package, "accepted_classes": [c.value for c in a.accepted_classes],
            "reference_class": a.reference_class.value, "needed": a.needed, "useful": a.useful, "horizon": v.horizon,
            "question": v.question, "admitted": True, "decision": a.decision,
            **{f"must_bind_{cls}": a.must_bind.get(cls, []) for cls in BINDING_CLASSES},
            **{f"may_bind_{cls}": a.may_bind.get(cls, []) for cls in BINDING_CLASSES},
            "admission": "deterministic filters passed: evidence refs exist, binding on the menu, reference path "
                         "and verifier match the episode, no answer artifact visible, question not ambiguous"}))
        edges += [EdgeRow(Rel.IN_WORKFLOW, a.moment_id, Label.DECISION_MOMENT, v.workflow_id, Label.WORKFLOW),
                  EdgeRow(Rel.IN_WORKFLOW, v.task_id, Label.TASK, v.workflow_id, Label.WORKFLOW),
                  EdgeRow(Rel.DERIVED_FROM, v.task_id, Label.TASK, a.moment_id, Label.DECISION_MOMENT)]
        edges += [EdgeRow(Rel.OFFERS, v.task_id, Label.TASK, e.evidence_id, Label.EVIDENCE, {"entry_id": e.entry_id})
                  for e in v.menu]
        edges += [EdgeRow(Rel.BINDS, v.task_id, Label.TASK, e, Label.EVIDENCE) for e in a.binding]
    # every admission decision is stored: a rejected candidate stays a DecisionMoment with its reasons
    for v, a, reasons in rejected or []:
        nodes.append(NodeRow(a.moment_id, (Label.DECISION_MOMENT,), {
            "family": a.family.value, "source_facts": a.source_facts, "admitted": False, "package": package,
            "rejection": reasons}))
        edges.append(EdgeRow(Rel.IN_WORKFLOW, a.moment_id, Label.DECISION_MOMENT, v.workflow_id, Label.WORKFLOW))
    with graph.writer() as w:
        w.run("compiler/clear_task_edges", task_ids=[v.task_id for v in views])
        w.nodes(nodes)
        w.edges(edges)


def load_package(pkg: Path) -> tuple[list[TaskView], dict[str, EvidenceObject], dict[str, TaskAnswer], Manifest]:
    """Read a package folder; anything missing or malformed is an InputError naming the file and line."""

    def lines(name: str) -> list[dict[str, Any]]:
        path = pkg / name
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text (byte {exc.start})", path=str(path)) from exc
        except OSError as exc:
            raise InputError(f"not a task package ({exc.strerror or exc}); create one with `voe compile`",
                             path=str(path)) from exc
        out = []
        for n, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise InputError(f"line {n} is not JSON ({exc.msg})", path=str(path)) from exc
        return out

    try:
        views = [TaskView.model_validate(x) for x in lines("tasks.jsonl")]
        evidence = {x["evidence_id"]: EvidenceObject.model_validate(x) for x in lines("evidence.jsonl")}
        answers = {x["task_id"]: TaskAnswer.model_validate(x) for x in lines("answers.jsonl")}
        manifest = Manifest.model_validate_json((pkg / "manifest.json").read_text())
    except (ValidationError, KeyError, OSError, TypeError, UnicodeDecodeError) as exc:
        raise InputError(f"package files do not match the package schema: {str(exc).splitlines()[0]}",
                         path=str(pkg)) from exc
    return views, evidence, answers, manifest
