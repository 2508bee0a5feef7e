"""Admission by replay (DESIGN §7): what compiler/admission.py asks of it, answered by running candidate tasks
through the replay environment, the baselines and the probes. `compile_package` here is what `voe compile` runs:
the compiler's passes (voe.compiler.package) with this admission, so the compiler itself never imports the
replayer."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from voe.artifacts.package import TERMINALS, EvidenceObject, GateReport, TaskAnswer, TaskView
from voe.compiler import package as compiler_package
from voe.compiler.admission import Materialize, Solver
from voe.compiler.annotate import Annotator
from voe.compiler.caps import DEFAULT, Caps
from voe.compiler.catalog import Catalog
from voe.compiler.families import Moment
from voe.compiler.judge import Judge
from voe.graph import Graph
from voe.progress import Progress
from voe.replay.cheap_rules import scored, survey
from voe.replay.env import ReplayEnv
from voe.replay.gate import episode, trim
from voe.replay.probes import predicted
from voe.replay.registry import specs


def probe_solver(cat: Catalog, materialize: Materialize) -> Solver:
    """The gated rule probes that are right on a candidate (replayed once on its template materialization), and
    the constant classifiers ("always this class", with the payload the class takes): the floor every text
    classifier of the gate starts from, held to the text limit."""
    env = ReplayEnv(cat.objects)
    probes = [(s.short, s.act) for s in specs("baseline", "probe") if s.gate == "limit"]
    probes += [(f"always:{a.value}", predicted(a.value)) for a in TERMINALS]

    @functools.cache
    def solved(key: tuple[str, str, str]) -> frozenset[str]:
        view, answer = materialize(by_key[key], cat)
        # every decision list of up to three cheap rules from one survey of the task (replay/cheap_rules.py)
        return frozenset(name for name, act in probes if episode(env, view, answer, act)) | scored(
            survey(env, view), answer)

    by_key: dict[tuple[str, str, str], Moment] = {}

    def solve(m: Moment) -> frozenset[str]:
        key = (m.family.value, m.subject, m.shape)
        by_key[key] = m
        return solved(key)

    return solve


def reference_path(view: TaskView, answer: TaskAnswer) -> str | None:
    """Play the reference path on the proposed menu: every request must be on it with its action, and the
    terminal must come within the horizon."""
    env = ReplayEnv({})
    env.reset(view, "filter")
    for step in answer.reference:
        action = {"action": step.action.value}
        if step.evidence_id:
            action["evidence_id"] = step.evidence_id
        else:
            action["payload"] = list(step.payload or [])  # type: ignore[assignment]
        rec, done = env.step(action)
        if rec.outcome in ("off_menu", "parse_error", "duplicate"):
            return f"step {rec.t} ({step.action.value}) is {rec.outcome} on this menu"
        if done and rec.outcome != "terminal":
            return f"the horizon ({view.horizon}) ends before the reference's terminal"
    return None


class ReplayAdmission:
    """compiler/admission.Admission, by replay."""

    def solver(self, cat: Catalog, materialize: Materialize) -> Solver:
        return probe_solver(cat, materialize)

    def reference_path(self, view: TaskView, answer: TaskAnswer) -> str | None:
        return reference_path(view, answer)

    def gate(self, views: list[TaskView], evidence: dict[str, EvidenceObject], answers: dict[str, TaskAnswer],
             keep: Callable[[TaskAnswer], bool]) -> tuple[list[TaskView], GateReport, int]:
        return trim(views, evidence, answers, keep)


def compile_package(graph: Graph, out: Path, annotator: Annotator | None = None, judge: Judge | None = None,
                    progress: Progress | None = None, caps: Caps = DEFAULT) -> compiler_package.CompileSummary:
    """`voe compile`: the graph's decision moments into a package, admitted by replay and gated
    (voe.compiler.package.compile_package, which says what each argument does)."""
    return compiler_package.compile_package(graph, out, ReplayAdmission(), annotator=annotator, judge=judge,
                                            progress=progress, caps=caps)
