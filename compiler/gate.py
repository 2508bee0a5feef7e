"""The release gate `voe compile` runs on every package (DESIGN §7): the reference, the null policies and
the shortcut probes (replay/probes.py) replayed over every task, scored with the verifier's checks
(compiler/verdict.py). Gate: the reference valid on every task, every probe at most PROBE_LIMIT of the
tasks, the text-only probe at most TEXT_LIMIT (its neighbours from other workflows; the same probe over
random folds is recorded beside it, ungated), and the subject's file extension alone (the majority class of
other workflows' tasks with the same extension) at most PROBE_LIMIT, its leave-one-out figure recorded.
A failing package is still written; the table says why.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel

from compiler.models import EvidenceObject, TaskAnswer, TaskView
from compiler.verdict import verdict
from replay.env import ReplayEnv
from replay.policies import NO_ANSWER
from replay.probes import predicted
from replay.registry import Policy, specs

PROBE_LIMIT = 0.5
# Measured and recorded, not gated: on the shared archives every defect sits on an item this copy does not
# hold (NERDm payloads are not in ../shared), so "flag what we cannot check" rides on the data, not the tasks;
# README and issue 7's closing note give the figure. Holding the payloads (voe fetch) is the fix.
TEXT_LIMIT = 0.4
FOLDS = 5
WORD = re.compile(r"[a-z0-9]+")


GateKind = Literal["reference", "null", "probe", "text_probe"]
GATE_KIND: dict[str, GateKind] = {"reference": "reference", "baseline": "null", "probe": "probe"}  # by policy kind


class GateRow(BaseModel):
    policy: str
    kind: GateKind
    valid: int
    tasks: int
    rate: float
    limit: float | None
    passed: bool


class GateReport(BaseModel):
    passed: bool
    rows: list[GateRow]

    def table(self) -> str:
        lines = ["| policy | kind | valid | rate | limit | |", "|---|---|---|---|---|---|"]
        for r in self.rows:
            limit = "all tasks" if r.kind == "reference" else "recorded" if r.limit is None else f"<= {r.limit:.0%}"
            verdict_ = "-" if r.limit is None and r.kind != "reference" else "ok" if r.passed else "FAIL"
            lines.append(f"| {r.policy} | {r.kind} | {r.valid}/{r.tasks} | {r.rate:.1%} | {limit} | {verdict_} |")
        return "\n".join(lines)


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

    def add(name: str, kind: GateKind, valid: int, limit: float | None) -> None:
        rate = valid / n if n else 0.0
        ok = valid == n if kind == "reference" else (limit is None or rate <= limit)  # no limit: recorded only
        rows.append(GateRow(policy=name, kind=kind, valid=valid, tasks=n, rate=round(rate, 4), limit=limit, passed=ok))

    for spec in specs("reference", "baseline", "probe"):  # the registry's order: reference, baselines, probes
        valid = sum(episode(env, v, answers[v.task_id], spec.act, reads_answer=spec.reads_answer) for v in views)
        kind = GATE_KIND[spec.kind]
        add(spec.short, kind, valid, None if spec.gate != "limit" else PROBE_LIMIT)
    for name, by, limit in (("text_nn", "workflow", TEXT_LIMIT), ("text_nn_random_folds", "random", None),
                            ("text_extension", "workflow", PROBE_LIMIT), ("text_extension_loo", "task", None)):
        classes = (text_nn_classes if name.startswith("text_nn") else extension_classes)(views, answers, by)
        add(name, "text_probe", sum(episode(env, v, answers[v.task_id], predicted(classes[v.task_id]))
                                    for v in views), limit)
    return GateReport(passed=all(r.passed for r in rows), rows=rows)
