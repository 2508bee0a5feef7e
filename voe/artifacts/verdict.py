"""The verifier's three checks (DESIGN §6) in Python, for the compile-time shortcut gate. The graph's
checks (cypher/verifiers/verdict.cypher, run by write_trajectories as a run is written and by
verify_trajectories over a run the graph holds) are the verifier of record; tests prove the three agree on every
trajectory of every baseline and probe.

(1) action valid: the terminal class is one the task accepts;
(2) payload bound: every payload id was pulled, the payload names what its class must bind
    (`must_bind`), and nothing beyond what the class may name (`may_bind`: a flag only defective items, a
    localize only missing items, a submit exactly the packet);
(3) grounded: everything the reference needs to justify its class was pulled.

`regret` and `cost_score` are the cost score's definition (verifiers/metrics.py documents it), here so that the
scores and the training labels (verifiers/labels.py) compute it once.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction

from voe.artifacts.package import TaskAnswer


def verdict(terminal_class: str | None, payload: Iterable[str], requested: Iterable[str],
            answer: TaskAnswer) -> tuple[bool, bool, bool]:
    pulled, named = set(requested), set(payload)
    action_valid = terminal_class is not None and terminal_class in answer.accepted_classes
    bound = (terminal_class is not None and named <= pulled
             and set(answer.must_bind.get(terminal_class, [])) <= named
             and (terminal_class not in answer.may_bind or named <= set(answer.may_bind[terminal_class])))
    grounded = set(answer.needed) <= pulled
    return action_valid, bound, grounded


def regret(requested: Iterable[str], useful: Iterable[str]) -> int:
    """Useful items missed plus non-useful items pulled."""
    pulled, wanted = set(requested), set(useful)
    return len(wanted - pulled) + len(pulled - wanted)


def cost_fraction(valid: bool, requested: Iterable[str], useful: Iterable[str], horizon: int) -> Fraction:
    """The cost score exactly: max(0, valid - 0.5 * regret / horizon)."""
    return max(Fraction(0), Fraction(int(valid)) - Fraction(regret(requested, useful), 2 * horizon))


def cost_score(valid: bool, requested: Iterable[str], useful: Iterable[str], horizon: int) -> float:
    """The same in floating point, computed as scores.jsonl has always computed it (the same bytes)."""
    return max(0.0, float(valid) - 0.5 * regret(requested, useful) / horizon)
