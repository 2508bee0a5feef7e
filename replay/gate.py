"""The release gate `voe compile` runs on every package (DESIGN §7): the reference, the null policies and
the shortcut probes (replay/probes.py) replayed over every task, scored with the verifier's checks
(voe/artifacts/verdict.py). Gate: the reference valid on every task; every null policy and probe (unheld_flag and
chained_rules among them), the subject's file extension alone (the majority class of other workflows' tasks
with the same extension) and the metadata-only classifiers (compiler/shortcuts.py: held or not, extension,
kind, media type, menu size and position; leave-one-workflow-out and 5-fold) at most PROBE_LIMIT of the
tasks; the text-only probes (Jaccard and TF-IDF nearest neighbour, TF-IDF logistic regression,
leave-one-workflow-out and 5-fold) at most TEXT_LIMIT. The extension's leave-one-out figure is recorded,
ungated. A package with no task fails (nothing in it needs judgment). A failing package is still written; the
table says why.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from voe.artifacts.package import EvidenceObject, GateKind, GateReport, GateRow, TaskAnswer, TaskView
from voe.artifacts.verdict import verdict
from voe.compiler.admission import PROBE_LIMIT, TEXT_LIMIT
from voe.compiler.shortcuts import metadata_probes, text_probes
from voe.replay.env import ReplayEnv
from voe.replay.policies import NO_ANSWER
from voe.replay.probes import predicted
from voe.replay.registry import Policy, specs

FOLDS = 5
WORD = re.compile(r"[a-z0-9]+")


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


def _words(view: TaskView) -> set[str]:
    text = " ".join([view.question, *(f"{e.kind} {e.title}" for e in view.menu)]).lower()
    return set(WORD.findall(text))


def text_nn_classes(views: list[TaskView], answers: dict[str, TaskAnswer], by: str = "workflow") -> dict[str, str]:
    """Each task's class as the nearest other task (Jaccard over visible words) predicts it, the neighbours
    drawn only from the other folds. `by="workflow"` holds out one workflow at a time: tasks of one workflow
    share items, naming and the archive's habits (a record that mislabels one CSV mislabels its siblings),
    so a random split puts near-copies on both sides and measures the twins, not the text. `by="random"`
    is the 5-fold split by a hash of the task id, recorded beside it."""
    if by == "workflow":
        fold = {v.task_id: v.workflow_id for v in views}
    else:
        fold = {v.task_id: str(int(hashlib.sha256(v.task_id.encode()).hexdigest(), 16) % FOLDS) for v in views}
    words = {v.task_id: _words(v) for v in views}
    out: dict[str, str] = {}
    for v in views:
        best: tuple[float, str] | None = None
        for u in views:
            if fold[u.task_id] == fold[v.task_id]:
                continue
            a, b = words[v.task_id], words[u.task_id]
            score = len(a & b) / max(1, len(a | b))
            if best is None or (score, u.task_id) > best:
                best = (score, u.task_id)
        out[v.task_id] = answers[best[1]].reference_class.value if best else "abstain_or_escalate"
    return out


def subject_extension(view: TaskView) -> str:
    """The extension of the file the question frames the packet on ("A risk packet on <file> (in ...)")."""
    rest = view.question.split("A risk packet on ", 1)[-1]
    name = rest.split(" (", 1)[0].rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[-1].lower() if "." in name else ""


def extension_classes(views: list[TaskView], answers: dict[str, TaskAnswer], by: str = "workflow") -> dict[str, str]:
    """Each task's class as the majority class of the other tasks whose subject has the same file extension
    (the shortcut issue 7 found at 84%), the voters from other workflows (`by="workflow"`) or any other task
    (`by="task"`, leave-one-out, recorded)."""
    out: dict[str, str] = {}
    for v in views:
        votes = Counter(answers[u.task_id].reference_class.value for u in views
                        if u.task_id != v.task_id and subject_extension(u) == subject_extension(v)
                        and (by == "task" or u.workflow_id != v.workflow_id))
        out[v.task_id] = min(votes.items(), key=lambda kv: (-kv[1], kv[0]))[0] if votes else "submit_risk_packet"
    return out


def run_gate(views: list[TaskView], evidence: dict[str, EvidenceObject], answers: dict[str, TaskAnswer]) -> GateReport:
    env = ReplayEnv(evidence)
    n = len(views)
    rows: list[GateRow] = []
    solved: dict[str, set[str]] = {}

    def add(name: str, kind: GateKind, right: set[str], limit: float | None) -> None:
        valid = len(right)
        solved[name] = right
        rate = valid / n if n else 0.0
        ok = valid == n if kind == "reference" else (limit is None or rate <= limit)  # no limit: recorded only
        rows.append(GateRow(policy=name, kind=kind, valid=valid, tasks=n, rate=round(rate, 4), limit=limit, passed=ok))

    if not views:
        rows.append(GateRow(policy="tasks", kind="empty", valid=0, tasks=0, rate=0.0, limit=None, passed=False))
        return GateReport(passed=False, rows=rows)
    for spec in specs("reference", "baseline", "probe"):  # the registry's order: reference, baselines, probes
        right = {v.task_id for v in views
                 if episode(env, v, answers[v.task_id], spec.act, reads_answer=spec.reads_answer)}
        add(spec.short, GATE_KIND[spec.kind], right, None if spec.gate != "limit" else PROBE_LIMIT)

    def replayed(classes: dict[str, str]) -> set[str]:
        return {v.task_id for v in views if episode(env, v, answers[v.task_id], predicted(classes[v.task_id]))}

    labels = [answers[v.task_id].reference_class.value for v in views]
    for name, by in (("text_nn", "workflow"), ("text_nn_random_folds", "random")):
        add(name, "text_probe", replayed(text_nn_classes(views, answers, by)), TEXT_LIMIT)
    for name, classes in text_probes(views, labels).items():
        add(name, "text_probe", replayed(classes), TEXT_LIMIT)
    for name, by, limit in (("text_extension", "workflow", PROBE_LIMIT), ("text_extension_loo", "task", None)):
        add(name, "text_probe", replayed(extension_classes(views, answers, by)), limit)
    for name, classes in metadata_probes(views, labels, evidence).items():
        add(name, "metadata_probe", replayed(classes), PROBE_LIMIT)
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
        if not failing or any(r.kind not in ("text_probe", "metadata_probe") for r in failing):
            return views, report, dropped
        per_workflow = Counter(v.workflow_id for v in views)
        votes = Counter(t for r in failing for t in report.solved(r.policy))
        droppable = [v for v in views if votes[v.task_id] and not keep(answers[v.task_id])]
        if not droppable:
            return views, report, dropped
        worst = max(droppable, key=lambda v: (votes[v.task_id], per_workflow[v.workflow_id],
                                              hashlib.sha256(v.task_id.encode()).hexdigest()))
        views.remove(worst)
        dropped += 1
