"""Which tasks of a package are not independent, and how large a difference between two policies the package
can tell from noise (DESIGN §6). Shared by the compiler (the manifest states the smallest detectable difference)
and the verifiers (clustered intervals, paired comparisons).

Clusters: tasks resting on one gold fact, or of one workflow, or of versions of one archive, are one cluster
(connected groups). The smallest
detectable difference of a package with n tasks in clusters of sizes n_1..n_G is the half-width of the clustered
95% interval of the difference of two independent policies at 85% validity, when a cluster's tasks are
decided alike (within-cluster correlation 1, the conservative bound):

    n_eff = n² / Σ_g n_g²,    sdd = t_{0.975, G-1} · sqrt(2 · p(1-p) / n_eff),    p = 0.85;

a difference smaller than it cannot be told from noise on this package. Beside it, `discordant_tasks`: the fewest
tasks two policies must disagree on, one way, one task in each of the smallest clusters, before the clustered
paired interval (voe.verifiers.metrics.paired) excludes zero.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from typing import Any

from scipy import stats

VALIDITY = 0.85


def t975(df: int) -> float:
    """The exact 97.5% Student-t quantile (two-sided 95%) for df >= 1 degrees of freedom."""
    if df < 1:
        raise ValueError(f"Student-t needs at least 1 degree of freedom, got {df}")
    return float(stats.t.ppf(0.975, df))


def lineage(workflow_id: str) -> str:
    """The workflow with its version taken out: the versions of one archive (a record's releases, an export at
    successive commits, snapshots kept apart) share items, naming and habits, so they fall in one cluster and one
    held-out fold (`wf:ark:/88434/mds2-2106@1.6.0~a1b2` and `wf:ark:/88434/mds2-2106@1.5.0` are one lineage)."""
    return re.sub(r"@[^/#]*", "", workflow_id)


def clusters_of(tasks: dict[str, tuple[str, list[str]]]) -> dict[str, str]:
    """Each task's cluster: the connected group of tasks linked by a shared workflow or a shared gold fact,
    named by the group's first workflow id. `tasks`: task id -> (workflow id, gold facts)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    for workflow, facts in tasks.values():
        find(workflow)
        union(workflow, f"\x00line|{lineage(workflow)}")  # the versions of one archive are one cluster
        for f in facts:
            union(workflow, f"\x00fact|{f}")  # a fact sorts before any workflow: never a group's name
    name: dict[str, str] = {}
    for workflow, _ in sorted(tasks.values()):
        name.setdefault(find(workflow), workflow)
    return {t: name[find(wf)] for t, (wf, _) in tasks.items()}


def clustered_mean(values: dict[str, float], cluster: dict[str, str]) -> tuple[float, float, int]:
    """(mean, half-width of the clustered 95% interval, clusters G) of per-task values; G < 2: half-width 0."""
    n = len(values)
    if n == 0:
        return 0.0, 0.0, 0
    m = sum(values.values()) / n
    sums: dict[str, float] = defaultdict(float)
    for t, v in values.items():
        sums[cluster.get(t, t)] += v - m
    g = len(sums)
    if g < 2:
        return m, 0.0, g
    se = math.sqrt(g / (g - 1) * sum(s * s for s in sums.values()) / (n * n))
    return m, t975(g - 1) * se, g


def detectable_difference(cluster: dict[str, str]) -> dict[str, Any]:
    """The package's smallest detectable difference (module docstring), from each task's cluster."""
    sizes = sorted(Counter(cluster.values()).values())
    n, g = sum(sizes), len(sizes)
    if g < 2:
        return {"tasks": n, "clusters": g, "validity": VALIDITY, "sdd": None, "effective_tasks": float(n),
                "discordant_tasks": None, "why": "fewer than two clusters: no clustered interval"}
    n_eff = n * n / sum(s * s for s in sizes)
    sdd = t975(g - 1) * math.sqrt(2 * VALIDITY * (1 - VALIDITY) / n_eff)
    needed = None
    order = sorted(set(cluster.values()), key=lambda c: (Counter(cluster.values())[c], c))
    firsts = {c: min(t for t, cc in cluster.items() if cc == c) for c in order}
    for k in range(1, g + 1):
        diffs = {t: 0.0 for t in cluster}
        for c in order[:k]:
            diffs[firsts[c]] = 1.0
        m, h, _ = clustered_mean(diffs, cluster)
        if m - h > 0:
            needed = k
            break
    return {"tasks": n, "clusters": g, "validity": VALIDITY, "sdd": round(sdd, 4),
            "effective_tasks": round(n_eff, 2), "discordant_tasks": needed}
