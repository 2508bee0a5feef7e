"""The release gate `voe compile` runs on every package (DESIGN §7), replayed over every task and scored with the
verifier's checks (voe/artifacts/verdict.py):

- the reference, valid on every task; the null policies and the rule probes (replay/probes.py, replay/cheap_rules.py:
  status_only, named_item, chained_rules, the status-blind rule that compares no fact, ...), each at most
  PROBE_LIMIT of the tasks;
- the best combination of up to three cheap rules (replay/cheap_rules.py: every decision list of one to three of
  them tried on the package, the best one reported with its rules), at most PROBE_LIMIT;
- the structure-only classifiers (compiler/shortcuts.py: random forest, gradient boosting, logistic regression
  over held or not, extension, kind, media type, menu shape, question template) at most PROBE_LIMIT, and the text
  classifiers (TF-IDF nearest neighbour and logistic regression) at most TEXT_LIMIT, leave-one-workflow-out; their
  leave-one-task-out figures are recorded beside them; the subject's file extension alone (the majority class of
  other workflows' tasks with the same extension) at most PROBE_LIMIT.

A row that cannot run is a failed row (kind `error`, the reason in its detail), never a skipped one. A package with
no task fails (nothing in it needs judgment). A failing package is still written; the table says why.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

from voe.artifacts.clusters import lineage
from voe.artifacts.package import EvidenceObject, GateKind, GateReport, GateRow, TaskAnswer, TaskView
from voe.artifacts.verdict import verdict
from voe.compiler.admission import PROBE_LIMIT, TEXT_LIMIT
from voe.compiler.shortcuts import structure_probes, text_probes
from voe.replay.cheap_rules import combinations, combo_name, scored, survey
from voe.replay.env import ReplayEnv
from voe.replay.policies import NO_ANSWER
from voe.replay.probes import predicted
from voe.replay.registry import Policy, specs

GATE_KIND: dict[str, GateKind] = {"reference": "reference", "baseline": "null", "probe": "probe"}  # by policy kind


def episode(env: ReplayEnv, view: TaskView, answer: TaskAnswer, act: Policy, seed: int = 0,
            reads_answer: bool = False) -> bool:
    rng = random.Random(int(hashlib.sha256(f"{seed}|{view.task_id}|0".encode()).hexdigest()[:16], 16))
    env.reset(view, f"gate/{view.task_id}")
    history: list[dict[str, Any]] = []
    done = False
    while not done:
        rec, done = env.step(act(view, answer if reads_answer else NO_ANSWER, history, rng))
        history.append(rec.model_dump(mode="json"))
    s = env.summary
    return all(verdict(s.terminal_class, s.payload, s.requested, answer))


def subject_extension(view: TaskView) -> str:
    """The extension of the file the question frames the packet on ("A risk packet on <file> (in ...)")."""
    rest = view.question.split("A risk packet on ", 1)[-1]
    name = rest.split(" (", 1)[0].rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[-1].lower() if "." in name else ""


def extension_classes(views: list[TaskView], answers: dict[str, TaskAnswer], by: str = "workflow") -> dict[str, str]:
    """Each task's class as the majority class of the other tasks whose subject has the same file extension
    (the shortcut issue 7 found at 84%), the voters from other workflows, the versions of one archive one workflow
    (`by="workflow"`) or any other task
    (`by="task"`, leave-one-out, recorded)."""
    out: dict[str, str] = {}
    for v in views:
        votes = Counter(answers[u.task_id].reference_class.value for u in views
                        if u.task_id != v.task_id and subject_extension(u) == subject_extension(v)
                        and (by == "task" or lineage(u.workflow_id) != lineage(v.workflow_id)))
        out[v.task_id] = min(votes.items(), key=lambda kv: (-kv[1], kv[0]))[0] if votes else "submit_risk_packet"
    return out


def best_combination(env: ReplayEnv, views: list[TaskView], answers: dict[str, TaskAnswer]) -> tuple[str, set[str]]:
    """The decision list of up to three cheap rules right on the most tasks (ties: the first in
    replay/cheap_rules.py's order), and the tasks it is right on."""
    right: dict[str, set[str]] = {combo_name(c): set() for c in combinations()}
    for v in views:
        for name in scored(survey(env, v), answers[v.task_id]):
            right[name].add(v.task_id)
    best = max(right, key=lambda n: len(right[n]))  # max keeps the first of equals: the order of combinations()
    return best, right[best]


def run_gate(views: list[TaskView], evidence: dict[str, EvidenceObject], answers: dict[str, TaskAnswer]) -> GateReport:
    env = ReplayEnv(evidence)
    n = len(views)
    rows: list[GateRow] = []
    solved: dict[str, set[str]] = {}

    def add(name: str, kind: GateKind, right: set[str], limit: float | None, detail: str | None = None) -> None:
        valid = len(right)
        solved[name] = right
        rate = valid / n if n else 0.0
        ok = valid == n if kind == "reference" else (limit is None or rate <= limit)  # no limit: recorded only
        rows.append(GateRow(policy=name, kind=kind, valid=valid, tasks=n, rate=round(rate, 4), limit=limit, passed=ok,
                            detail=detail))

    def guarded(name: str, kind: GateKind, run: Callable[[], None]) -> None:
        """A row that cannot run fails the gate, with the reason."""
        try:
            run()
        except Exception as exc:  # noqa: BLE001 - any failure of a probe is the gate's to report, not to skip
            rows.append(GateRow(policy=name, kind="error", valid=0, tasks=n, rate=0.0, limit=None, passed=False,
                                detail=f"{type(exc).__name__}: {exc}"[:300]))

    if not views:
        rows.append(GateRow(policy="tasks", kind="empty", valid=0, tasks=0, rate=0.0, limit=None, passed=False))
        return GateReport(passed=False, rows=rows)
    for spec in specs("reference", "baseline", "probe"):  # the registry's order: reference, baselines, probes
        def one(spec: Any = spec) -> None:
            right = {v.task_id for v in views
                     if episode(env, v, answers[v.task_id], spec.act, reads_answer=spec.reads_answer)}
            add(spec.short, GATE_KIND[spec.kind], right, None if spec.gate != "limit" else PROBE_LIMIT)
        guarded(spec.short, GATE_KIND[spec.kind], one)

    def combination() -> None:
        best, right = best_combination(env, views, answers)
        add("best_rules", "rules_probe", right, PROBE_LIMIT, best.removeprefix("rules:"))
    guarded("best_rules", "rules_probe", combination)

    def replayed(classes: dict[str, str]) -> set[str]:
        return {v.task_id for v in views if episode(env, v, answers[v.task_id], predicted(classes[v.task_id]))}

    labels = [answers[v.task_id].reference_class.value for v in views]

    def classifiers(kind: GateKind, limit: float, probes: Callable[[], dict[str, dict[str, str]]]) -> None:
        for name, classes in probes().items():
            add(name, kind, replayed(classes), limit if name.endswith("_lowo") else None)
    guarded("structure", "structure_probe",
            lambda: classifiers("structure_probe", PROBE_LIMIT, lambda: structure_probes(views, labels, evidence)))
    guarded("text", "text_probe", lambda: classifiers("text_probe", TEXT_LIMIT, lambda: text_probes(views, labels)))

    def extensions() -> None:
        for name, by, limit in (("text_extension", "workflow", PROBE_LIMIT), ("text_extension_loo", "task", None)):
            add(name, "text_probe", replayed(extension_classes(views, answers, by)), limit)
    guarded("text_extension", "text_probe", extensions)
    report = GateReport(passed=all(r.passed for r in rows), rows=rows)
    report._solved = solved
    return report


def trim(views: list[TaskView], evidence: dict[str, EvidenceObject], answers: dict[str, TaskAnswer],
         keep: Callable[[TaskAnswer], bool]) -> tuple[list[TaskView], GateReport, int]:
    """Adversarial filtering of the package against the gate's classifiers (the rule probes are held by
    compiler/select.py before a task is made): while only classifiers fail, drop the task the most failing
    classifiers are right on (never one `keep` protects: a defect), from the workflow with the most tasks, and
    run the gate again. Returns the views kept, the last gate report and how many tasks were dropped."""
    views = list(views)
    dropped = 0
    while True:
        report = run_gate(views, evidence, answers)
        failing = [r for r in report.rows if not r.passed]
        if not failing or any(r.kind not in ("text_probe", "structure_probe") for r in failing):
            return views, report, dropped
        per_workflow = Counter(lineage(v.workflow_id) for v in views)
        votes = Counter(t for r in failing for t in report.solved(r.policy))
        droppable = [v for v in views if votes[v.task_id] and not keep(answers[v.task_id])]
        if not droppable:
            return views, report, dropped
        worst = max(droppable, key=lambda v: (votes[v.task_id], per_workflow[lineage(v.workflow_id)],
                                              hashlib.sha256(v.task_id.encode()).hexdigest()))
        views.remove(worst)
        dropped += 1
