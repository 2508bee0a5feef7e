"""Metrics and the failure codebook (DESIGN §6), computed from the Cypher verdicts and the traces.

Per trajectory (task answer A, requested set R, useful set U = A.useful):
- valid            evidence-grounded valid: the Cypher verdict (action valid AND payload bound AND grounded)
- action_valid     check (1) alone
- useful_requests  |R ∩ U|; requests = every request action issued (duplicates and off-menu ones too);
                   useful precision (run) = Σ|R ∩ U| / Σ requests (0 when nothing was requested)
- evidence_regret  |U \\ R| (useful items missed) + |R \\ U| (non-useful items pulled)
- cost_score       max(0, valid - 0.5 * regret / horizon): 1.0 only for a valid, regret-free path, which is
                   what the reference walks; every extra or missing pull costs 0.5/horizon
- over_submit      the terminal is submit_risk_packet where the reference does not submit
- acquired_any     |R ∩ U| >= 1 (over tasks with U non-empty); acquired_all: U ⊆ R

Codebook, one label per trajectory, first that applies:
  duplicate_loop                              ended by three duplicate requests in a row
  parse_error, off_menu, horizon_exhausted    ran out of steps without a terminal: after unparseable actions,
                                              after off-menu actions, or otherwise
  reference_path                              valid, and R equals the reference's pulls
  valid_inefficient_short / _extra            valid, fewer / more (or other) pulls than the reference
  over_submit                                 submitted where the reference does not
  over_abstain                                abstained where that class is not accepted
  wrong_class_terminal                        another class the task does not accept
  payload_grounding_error                     accepted class, payload not bound or not grounded

Intervals: 95% Student-t over the per-pass rates when passes >= 2; Wilson score interval for one pass. A
deterministic policy gives the same rate every pass, so its t-interval has zero width: `method` then says
`student_t_over_passes (no variance between passes)`.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any

from pydantic import BaseModel

from compiler.models import Action, TaskAnswer
from verifiers.graph_verify import Verdict

CODEBOOK = ["reference_path", "valid_inefficient_short", "valid_inefficient_extra", "payload_grounding_error",
            "over_abstain", "wrong_class_terminal", "over_submit", "parse_error", "off_menu", "duplicate_loop",
            "horizon_exhausted"]

# two-sided 97.5% Student-t quantiles by degrees of freedom
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042}


def t975(df: int) -> float:
    if df in T975:
        return T975[df]
    below = [k for k in T975 if k <= df]
    return T975[max(below)] if df <= 30 else 1.96


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (0.0, 0.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


class Rate(BaseModel):
    mean: float
    ci95: tuple[float, float]
    count: int
    n: int
    method: str


def rate(values_by_pass: dict[int, list[bool]]) -> Rate:
    flat = [v for vs in values_by_pass.values() for v in vs]
    k, n = sum(flat), len(flat)
    mean = k / n if n else 0.0
    if len(values_by_pass) >= 2:
        per = [sum(vs) / len(vs) for vs in values_by_pass.values() if vs]
        m = sum(per) / len(per)
        sd = math.sqrt(sum((x - m) ** 2 for x in per) / (len(per) - 1))
        h = t975(len(per) - 1) * sd / math.sqrt(len(per))
        method = "student_t_over_passes" + (" (no variance between passes)" if sd == 0 else "")
        return Rate(mean=mean, ci95=(max(0.0, m - h), min(1.0, m + h)), count=k, n=n, method=method)
    lo, hi = wilson(k, n)
    return Rate(mean=mean, ci95=(lo, hi), count=k, n=n, method="wilson")


class TrajectoryScore(BaseModel):
    trajectory_id: str
    task_id: str
    family: str
    pass_index: int
    valid: bool
    action_valid: bool
    requests: int
    useful_requests: int
    regret: int
    cost_score: float
    over_submit: bool
    acquired_any: bool | None
    acquired_all: bool | None
    label: str


def score_trajectory(tr: dict[str, Any], verdict: Verdict, answer: TaskAnswer, horizon: int) -> TrajectoryScore:
    requested = set(tr["requested"])
    useful = set(answer.useful)
    reference_pulls = {s.evidence_id for s in answer.reference if s.evidence_id}
    regret = len(useful - requested) + len(requested - useful)
    terminal = tr["terminal_class"]
    over_submit = terminal == Action.SUBMIT_RISK_PACKET and answer.reference_class != Action.SUBMIT_RISK_PACKET
    if tr["end"] == "duplicate_loop":
        label = "duplicate_loop"
    elif terminal is None:
        plumbing = tr["plumbing"]
        label = "parse_error" if plumbing.get("parse_error") else "off_menu" if plumbing.get("off_menu") else tr["end"]
    elif verdict.valid:
        if requested == reference_pulls:
            label = "reference_path"
        elif requested < reference_pulls or len(requested) < len(reference_pulls):
            label = "valid_inefficient_short"
        else:
            label = "valid_inefficient_extra"
    elif over_submit:
        label = "over_submit"
    elif not verdict.action_valid and terminal == Action.ABSTAIN_OR_ESCALATE:
        label = "over_abstain"
    elif not verdict.action_valid:
        label = "wrong_class_terminal"
    else:
        label = "payload_grounding_error"
    return TrajectoryScore(
        trajectory_id=tr["trajectory_id"], task_id=tr["task_id"], family=answer.family.value,
        pass_index=tr["pass_index"], valid=verdict.valid, action_valid=verdict.action_valid,
        requests=max(len(requested), int(tr.get("request_steps", len(requested)))),
        useful_requests=len(requested & useful), regret=regret,
        cost_score=max(0.0, float(verdict.valid) - 0.5 * regret / horizon), over_submit=over_submit,
        acquired_any=bool(requested & useful) if useful else None,
        acquired_all=useful <= requested if useful else None, label=label)


def summarize(scores: list[TrajectoryScore], policy: str, passes: int) -> dict[str, Any]:
    def by_pass(pred: Any, subset: list[TrajectoryScore] | None = None) -> dict[int, list[bool]]:
        out: dict[int, list[bool]] = defaultdict(list)
        for s in subset if subset is not None else scores:
            v = pred(s)
            if v is not None:
                out[s.pass_index].append(bool(v))
        return out

    requests = sum(s.requests for s in scores)
    families: dict[str, list[TrajectoryScore]] = defaultdict(list)
    for s in scores:
        families[s.family].append(s)
    n = max(1, len(scores))
    return {
        "policy": policy,
        "tasks": len({s.task_id for s in scores}),
        "passes": passes,
        "trajectories": len(scores),
        "evidence_grounded_valid": rate(by_pass(lambda s: s.valid)).model_dump(),
        "action_valid": rate(by_pass(lambda s: s.action_valid)).model_dump(),
        "useful_precision": (sum(s.useful_requests for s in scores) / requests) if requests else 0.0,
        "evidence_regret": sum(s.regret for s in scores) / n,
        "cost_score": sum(s.cost_score for s in scores) / n,
        "over_submit": sum(s.over_submit for s in scores) / n,
        "acquired_any": rate(by_pass(lambda s: s.acquired_any)).model_dump(),
        "acquired_all": rate(by_pass(lambda s: s.acquired_all)).model_dump(),
        "by_family": {f: {"tasks": len({s.task_id for s in ss}),
                          "evidence_grounded_valid": rate(by_pass(lambda s: s.valid, ss)).model_dump(),
                          "action_valid": sum(s.action_valid for s in ss) / len(ss),
                          "cost_score": sum(s.cost_score for s in ss) / len(ss)}
                      for f, ss in sorted(families.items())},
        "codebook": {label: c for label in CODEBOOK if (c := Counter(s.label for s in scores)[label])},
    }


def paired(a: list[TrajectoryScore], b: list[TrajectoryScore]) -> dict[str, Any]:
    """Per-task validity (mean over passes) of A minus B, over the tasks both ran; t-interval of the mean."""
    def per_task(xs: list[TrajectoryScore]) -> dict[str, float]:
        acc: dict[str, list[bool]] = defaultdict(list)
        for s in xs:
            acc[s.task_id].append(s.valid)
        return {k: sum(v) / len(v) for k, v in acc.items()}

    pa, pb = per_task(a), per_task(b)
    common = sorted(set(pa) & set(pb))
    diffs = [pa[t] - pb[t] for t in common]
    if not diffs:
        return {"tasks": 0}
    m = sum(diffs) / len(diffs)
    sd = math.sqrt(sum((d - m) ** 2 for d in diffs) / (len(diffs) - 1)) if len(diffs) > 1 else 0.0
    h = t975(len(diffs) - 1) * sd / math.sqrt(len(diffs)) if len(diffs) > 1 else 0.0
    return {"tasks": len(common), "mean_difference": m, "ci95": [m - h, m + h],
            "a_only_valid": sum(1 for t in common if pa[t] > pb[t]), "b_only_valid": sum(1 for t in common if pb[t] > pa[t])}
