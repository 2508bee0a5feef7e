"""What the compiler asks of admission (DESIGN §7) without importing the replayer: the probes that are right on a
candidate (the adversarial selection of compiler/select.py), whether a framing's reference path plays on its
menu (compiler/annotate.py's last filter), and the release gate with its trimming. voe.replay.admission answers
all three by replaying tasks through the environment, the baselines and the probes, and `voe compile` hands it
to compile_package; the limits both sides hold a package to live here."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from voe.artifacts.package import EvidenceObject, GateReport, TaskAnswer, TaskView

if TYPE_CHECKING:
    from voe.compiler.catalog import Catalog
    from voe.compiler.families import Moment

PROBE_LIMIT = 0.5  # the most of a package a rule probe, a null policy or a structure classifier may get right
TEXT_LIMIT = 0.4  # the same for the text-only classifiers and the constant ones ("always this class")
# selection stops admitting what a probe answers once the probe is within this of its limit: a limit is met
# with room to spare, never by filling the package up to it (DESIGN §7)
MARGIN = 0.05

Solver = Callable[["Moment"], frozenset[str]]  # a candidate -> the gated probes that are right on it
Materialize = Callable[["Moment", "Catalog"], tuple[TaskView, TaskAnswer]]


class Admission(Protocol):
    def solver(self, cat: Catalog, materialize: Materialize) -> Solver:
        """The probes right on each candidate, replayed once on its template materialization."""
        ...

    def reference_path(self, view: TaskView, answer: TaskAnswer) -> str | None:
        """Why the reference path does not play on this task's menu within its horizon, or None when it does."""
        ...

    def gate(self, views: list[TaskView], evidence: dict[str, EvidenceObject], answers: dict[str, TaskAnswer],
             keep: Callable[[TaskAnswer], bool]) -> tuple[list[TaskView], GateReport, int]:
        """The release gate with adversarial trimming: the views kept, the gate report, how many were dropped."""
        ...
