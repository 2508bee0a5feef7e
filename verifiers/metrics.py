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
  reference_path                              valid, and no step lost value (its step labels, verifiers/labels.py):
                                              the reference's pulls, or a path as good
  valid_inefficient_extra                     valid, and a pull or a wasted step lost value (more or other pulls)
  valid_inefficient_short                     valid, only the terminal lost value (it stopped before pulling enough)
  over_submit                                 submitted where the reference does not
  over_abstain                                abstained where that class is not accepted
  wrong_class_terminal                        another class the task does not accept
  payload_grounding_error                     accepted class, payload not bound or not grounded
  context_exhausted                           an agent's conversation outgrew its model's context before a
                                              terminal (the endpoint refused it as too long)
  policy_timeout, policy_budget               a sealed python: policy passed its step deadline (--step-timeout), or its
                                              memory, CPU or answer-size limit, before a terminal
  unplayed                                    a task and pass the run never played (stopped early, a client that
                                              left): invalid, counted, never dropped

Intervals. Every `Rate` carries three 95% intervals; all are clipped to [0, 1], none is ever NaN.
t quantiles are exact for any degrees of freedom: t_{0.975, df} = scipy.stats.t.ppf(0.975, df).

- `ci95` / `method`: the headline, the cluster-robust interval below (DESIGN §6: tasks resting on one fact,
  or of one workflow, are not independent, and neither are the passes of one task).
- `ci95_passes` / `passes_method`: with P >= 2 passes, a Student-t over the per-pass rates r_1..r_P,
  m ± t_{0.975, P-1} * s / sqrt(P) (s the sample sd of the r_p; "student_t_over_passes"); with one pass, the
  Wilson score interval at z = 1.96 ("wilson"). A policy that gives the same rate every pass (a deterministic one,
  or a seeded one that happens to) has a zero-width t-interval: `passes_method` then says so ("zero width: the
  same rate on every pass; not a measure of uncertainty"), and it is never the headline.
- the clustered interval (`ci95`): a cluster-robust (sandwich) interval for the mean over all n trajectories of every pass, as
  Inspect AI's `stderr(cluster=...)`. With observations x_i (0/1), mean x̄ = Σ x_i / n, G clusters and cluster
  sums of residuals S_g = Σ_{i in g} (x_i - x̄):
      se² = G/(G-1) * Σ_g S_g² / n²,      interval = x̄ ± t_{0.975, G-1} * se.
  With every trajectory its own cluster this is exactly the ordinary t-interval s/sqrt(n) on the pooled values.
- `ci95_cluster_bootstrap`: a cluster bootstrap percentile interval: B = 2000 resamples of G clusters drawn with
  replacement (numpy.random.default_rng(0), a fresh generator per rate, clusters in sorted order, so the same
  input always gives the same interval); each resample's statistic is Σ(cluster sums) / Σ(cluster sizes) over
  the drawn clusters; the interval is the 2.5th and 97.5th percentiles (numpy's linear interpolation).
- `clusters` is G; `cluster_method` names the method and any degeneracy.
- `per_pass`: the rate of each pass r_1..r_P (passes with no value left out), what the per-pass interval rests on.

Clusters. Tasks that share a decision, an evidence item, a gold fact or a workflow are not independent, and the
passes of a task are not independent of each other either. `summarize` groups trajectories by
`TrajectoryScore.cluster` (the task id when that is empty); `voe score` sets it to the connected group of tasks
linked by a shared workflow or a shared gold fact (TaskAnswer.gold_facts: a defect, a changelog statement, a
gap), named by its first workflow (`clusters_of`). A workflow nests the tasks of one decision and the tasks that
share items (every binding item belongs to one workflow), and a fact that two workflows rest on joins them, so
clustering this way leaves none of those dependences out of the variance, at the price of fewer clusters and so
a larger t quantile (and a coarser bootstrap).

Every value alike (0 of n or n of n valid): no variance can be estimated and a point interval would read as
certainty, so the headline `ci95` is the exact Clopper–Pearson interval of 0 (or G) successes in G clusters, each
cluster counted once (`method` "clopper_pearson_over_clusters ..."): 0 of 45 in 10 clusters is [0, 0.308].

Degenerate cases: no trajectories: every interval is (0, 0), clusters = 0. One cluster: no between-cluster
variance can be estimated (G-1 = 0), so both clustered intervals are the point value (x̄, x̄) and
`cluster_method` says "(one cluster: point value, no between-cluster variance)"; read it as "no interval",
not as certainty (a one-valued rate in one cluster still gets the exact interval above). All values equal:
se = 0 and every bootstrap resample gives the same mean, so the bootstrap interval is the point value
("(no variance between clusters)") and the headline is the exact interval above.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel
from scipy import stats

from voe.artifacts.clusters import clustered_mean
from voe.artifacts.clusters import clusters_of as clusters_of  # the verifiers' name for it
from voe.artifacts.clusters import t975 as t975
from voe.artifacts.package import Action, TaskAnswer, TaskView
from voe.artifacts.scores import TrajectoryScore, Verdict
from voe.artifacts.verdict import cost_score, regret
from voe.verifiers.labels import StepLabel

CODEBOOK = ["reference_path", "valid_inefficient_short", "valid_inefficient_extra", "payload_grounding_error",
            "over_abstain", "wrong_class_terminal", "over_submit", "parse_error", "off_menu", "duplicate_loop",
            "horizon_exhausted", "context_exhausted", "policy_timeout", "policy_budget", "unplayed"]

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0


def _clip(lo: float, hi: float) -> tuple[float, float]:
    return (max(0.0, lo), min(1.0, hi))


def _cluster_sums(values: Sequence[float], clusters: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster (sum of values, size), clusters in sorted order."""
    if len(values) != len(clusters):
        raise ValueError(f"{len(values)} values but {len(clusters)} cluster labels")
    sums: dict[str, float] = defaultdict(float)
    sizes: dict[str, int] = defaultdict(int)
    for v, c in zip(values, clusters, strict=True):
        sums[c] += float(v)
        sizes[c] += 1
    keys = sorted(sums)
    return np.array([sums[k] for k in keys], dtype=float), np.array([sizes[k] for k in keys], dtype=float)


def cluster_se(values: Sequence[float], clusters: Sequence[str]) -> float:
    """Cluster-robust standard error of the mean: sqrt(G/(G-1) * Σ_g S_g² / n²), S_g = Σ_{i in g}(x_i - x̄).

    Needs G >= 2 clusters (ValueError otherwise)."""
    sums, sizes = _cluster_sums(values, clusters)
    g, n = len(sums), float(sizes.sum())
    if g < 2:
        raise ValueError(f"a clustered standard error needs at least 2 clusters, got {g}")
    mean = float(sums.sum()) / n
    residual_sums = sums - sizes * mean
    return math.sqrt(g / (g - 1) * float(np.sum(residual_sums**2)) / (n * n))


def cluster_ci(values: Sequence[float], clusters: Sequence[str]) -> tuple[float, float]:
    """x̄ ± t_{0.975, G-1} * cluster_se, clipped to [0, 1]; (0, 0) for no values, (x̄, x̄) for one cluster."""
    if not values:
        return (0.0, 0.0)
    mean = sum(values) / len(values)
    if len(set(clusters)) < 2:
        return (mean, mean)
    g = len(set(clusters))
    h = t975(g - 1) * cluster_se(values, clusters)
    return _clip(mean - h, mean + h)


def cluster_bootstrap_ci(values: Sequence[float], clusters: Sequence[str], resamples: int = BOOTSTRAP_RESAMPLES,
                         seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Cluster bootstrap percentile interval (2.5th, 97.5th) of the mean, clipped to [0, 1]; deterministic.

    (0, 0) for no values; (x̄, x̄) for one cluster (every resample is that cluster)."""
    if not values:
        return (0.0, 0.0)
    sums, sizes = _cluster_sums(values, clusters)
    mean = float(sums.sum() / sizes.sum())
    if len(sums) < 2:
        return (mean, mean)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(sums), size=(resamples, len(sums)))
    means = sums[idx].sum(axis=1) / sizes[idx].sum(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return _clip(float(lo), float(hi))


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (0.0, 0.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    """The exact (Clopper–Pearson) 95% interval of k successes in n trials; (0, 1) for no trials."""
    if n == 0:
        return (0.0, 1.0)
    lo = 0.0 if k == 0 else float(stats.beta.ppf(0.025, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(0.975, k + 1, n - k))
    return (lo, hi)


class Rate(BaseModel):
    mean: float
    ci95: tuple[float, float]  # the headline: clustered (cluster-robust t)
    count: int
    n: int
    method: str
    ci95_passes: tuple[float, float]
    passes_method: str
    ci95_cluster_bootstrap: tuple[float, float]
    clusters: int
    cluster_method: str
    # the rate of each pass, in pass order: the points a report draws beside the clustered interval (absent from
    # summaries written before it, hence the default)
    per_pass: list[float] = []


ZERO_WIDTH = "zero width: the same rate on every pass; not a measure of uncertainty"


def rate(values_by_pass: dict[int, list[bool]], clusters_by_pass: dict[int, list[str]] | None = None) -> Rate:
    """A rate with its clustered headline interval (`ci95`), its per-pass interval (`ci95_passes`) and the
    cluster bootstrap (module docstring).

    `clusters_by_pass[p][i]` is the cluster of `values_by_pass[p][i]`; without it every value is its own
    cluster."""
    flat = [v for vs in values_by_pass.values() for v in vs]
    if clusters_by_pass is None:
        labels = [f"{p}/{i}" for p, vs in values_by_pass.items() for i in range(len(vs))]
    else:
        labels = [c for p in values_by_pass for c in clusters_by_pass[p]]
    k, n = sum(flat), len(flat)
    mean = k / n if n else 0.0
    xs = [float(v) for v in flat]
    g = len(set(labels))
    method = "cluster_robust_t"
    cluster_method = "cluster_robust_t + cluster_bootstrap_percentile"
    degenerate = ""
    if n == 0:
        degenerate = " (no trajectories)"
    elif g < 2:
        degenerate = " (one cluster: point value, no between-cluster variance)"
    elif len(set(flat)) < 2:
        degenerate = " (no variance between clusters)"
    method += degenerate
    cluster_method += degenerate
    per = [sum(vs) / len(vs) for _, vs in sorted(values_by_pass.items()) if vs]
    if len(values_by_pass) >= 2:
        m = sum(per) / len(per)
        sd = math.sqrt(sum((x - m) ** 2 for x in per) / (len(per) - 1))
        h = t975(len(per) - 1) * sd / math.sqrt(len(per))
        passes_method = "student_t_over_passes" + (f" ({ZERO_WIDTH})" if sd == 0 else "")
        passes = (max(0.0, m - h), min(1.0, m + h))
    else:
        passes, passes_method = wilson(k, n), "wilson"
    ci95 = cluster_ci(xs, labels)
    if n and k in (0, n):
        # every value alike: no variance to estimate, and a point value would read as certainty. The exact interval
        # of G clusters, each counted once (the conservative reading of tasks a policy decides alike)
        ci95 = clopper_pearson(g if k else 0, g)
        method = f"clopper_pearson_over_clusters (every value {'valid' if k else 'not valid'}: the exact interval " \
                 f"of {g} cluster{'s' if g != 1 else ''}, each counted once)"
    return Rate(mean=mean, ci95=ci95, count=k, n=n, method=method, ci95_passes=passes,
                passes_method=passes_method, ci95_cluster_bootstrap=cluster_bootstrap_ci(xs, labels), clusters=g,
                cluster_method=cluster_method, per_pass=per)


def score_trajectory(tr: dict[str, Any], verdict: Verdict, answer: TaskAnswer, horizon: int, *,
                     steps: Sequence[StepLabel] = (), cluster: str = "") -> TrajectoryScore:
    """The trajectory's metrics and codebook label; `steps` are its step labels (verifiers/labels.py), from which
    a valid trajectory's efficiency label is read."""
    requested = set(tr["requested"])
    useful = set(answer.useful)
    lost = regret(requested, useful)
    terminal = tr["terminal_class"]
    over_submit = terminal == Action.SUBMIT_RISK_PACKET and answer.reference_class != Action.SUBMIT_RISK_PACKET
    if tr["end"] in ("duplicate_loop", "policy_timeout", "policy_budget"):
        label = tr["end"]
    elif terminal is None:
        plumbing = tr["plumbing"]
        label = "parse_error" if plumbing.get("parse_error") else "off_menu" if plumbing.get("off_menu") else tr["end"]
    elif verdict.valid:  # how efficient, from the step labels (DESIGN §10): where value was lost, if anywhere
        if any(step.value < 0 for step in steps if step.outcome != "terminal"):
            label = "valid_inefficient_extra"  # a step lost value: a pull the best continuation does not make
        elif any(step.value < 0 for step in steps):
            label = "valid_inefficient_short"  # only the terminal lost value: it came before pulling enough
        else:
            label = "reference_path"  # no step lost value: the reference's path, or one as good
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
        useful_requests=len(requested & useful), regret=lost,
        cost_score=cost_score(verdict.valid, requested, useful, horizon), over_submit=over_submit,
        acquired_any=bool(requested & useful) if useful else None,
        acquired_all=useful <= requested if useful else None, label=label, cluster=cluster)


def unplayed(views: Sequence[TaskView], answers: dict[str, TaskAnswer], run_id: str, passes: int,
             played: set[tuple[str, int]], clusters: dict[str, str]) -> list[TrajectoryScore]:
    """A score for every task and pass the run did not play: not valid, nothing requested, every useful item
    missed (its regret), labelled `unplayed`, so a run that stopped early is scored over the whole package."""
    out = []
    for v in views:
        answer = answers[v.task_id]
        for p in range(passes):
            if (v.task_id, p) in played:
                continue
            out.append(TrajectoryScore(
                trajectory_id=f"{run_id}/{v.task_id}/{p}", task_id=v.task_id, family=answer.family.value,
                pass_index=p, valid=False, action_valid=False, requests=0, useful_requests=0,
                regret=len(set(answer.useful)), cost_score=0.0, over_submit=False,
                acquired_any=False if answer.useful else None, acquired_all=False if answer.useful else None,
                label="unplayed", cluster=clusters.get(v.task_id, "")))
    return out


def summarize(scores: list[TrajectoryScore], policy: str, passes: int) -> dict[str, Any]:
    def by_pass(pred: Any, subset: list[TrajectoryScore] | None = None) -> dict[str, Any]:
        """The rate of `pred` over `subset` (default: all), clustered by s.cluster (the task id when empty)."""
        out: dict[int, list[bool]] = defaultdict(list)
        groups: dict[int, list[str]] = defaultdict(list)
        for s in subset if subset is not None else scores:
            v = pred(s)
            if v is not None:
                out[s.pass_index].append(bool(v))
                groups[s.pass_index].append(s.cluster or f"task:{s.task_id}")
        return rate(out, groups).model_dump()

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
        "unplayed": sum(s.label == "unplayed" for s in scores),  # counted in every rate as not valid
        "evidence_grounded_valid": by_pass(lambda s: s.valid),
        "action_valid": by_pass(lambda s: s.action_valid),
        "useful_precision": (sum(s.useful_requests for s in scores) / requests) if requests else 0.0,
        "evidence_regret": sum(s.regret for s in scores) / n,
        "cost_score": sum(s.cost_score for s in scores) / n,
        "over_submit": sum(s.over_submit for s in scores) / n,
        "acquired_any": by_pass(lambda s: s.acquired_any),
        "acquired_all": by_pass(lambda s: s.acquired_all),
        "by_family": {f: {"tasks": len({s.task_id for s in ss}),
                          "evidence_grounded_valid": by_pass(lambda s: s.valid, ss),
                          "action_valid": sum(s.action_valid for s in ss) / len(ss),
                          "cost_score": sum(s.cost_score for s in ss) / len(ss)}
                      for f, ss in sorted(families.items())},
        "codebook": {label: c for label in CODEBOOK if (c := Counter(s.label for s in scores)[label])},
    }


def paired(a: list[TrajectoryScore], b: list[TrajectoryScore]) -> dict[str, Any]:
    """Per-task validity (mean over passes) of A minus B, over the tasks both ran, with the interval clustered as
    the headline is (each task's cluster: TrajectoryScore.cluster, by workflow and gold fact), the discordant tasks
    and the clusters they fall in; the unclustered t-interval is kept beside it (`ci95_unclustered`), never the
    headline: tasks of one cluster are not independent."""
    def per_task(xs: list[TrajectoryScore]) -> dict[str, float]:
        acc: dict[str, list[bool]] = defaultdict(list)
        for s in xs:
            acc[s.task_id].append(s.valid)
        return {k: sum(v) / len(v) for k, v in acc.items()}

    pa, pb = per_task(a), per_task(b)
    cluster = {s.task_id: s.cluster or s.task_id for s in [*a, *b]}
    common = sorted(set(pa) & set(pb))
    diffs = {t: pa[t] - pb[t] for t in common}
    if not diffs:
        return {"tasks": 0}
    m, h, g = clustered_mean(diffs, cluster)
    values = list(diffs.values())
    sd = math.sqrt(sum((d - m) ** 2 for d in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    hu = t975(len(values) - 1) * sd / math.sqrt(len(values)) if len(values) > 1 else 0.0
    discordant = [t for t in common if pa[t] != pb[t]]
    return {"tasks": len(common), "mean_difference": m, "ci95": [m - h, m + h], "clusters": g,
            "method": "clustered by workflow and gold fact" if g >= 2 else "one cluster: no interval",
            "ci95_unclustered": [m - hu, m + hu],
            "a_only_valid": sum(1 for t in common if pa[t] > pb[t]), "b_only_valid": sum(1 for t in common if pb[t] > pa[t]),
            "discordant_tasks": discordant, "discordant_clusters": sorted({cluster[t] for t in discordant})}
