"""Pure unit tests of verifiers/metrics.py intervals (no database)."""

from __future__ import annotations

import math

import pytest

from voe.artifacts.clusters import lineage
from voe.artifacts.package import Action, Family, ReferenceStep, TaskAnswer
from voe.artifacts.scores import TrajectoryScore, Verdict
from voe.verifiers.metrics import (
    ZERO_WIDTH,
    clopper_pearson,
    cluster_bootstrap_ci,
    cluster_ci,
    cluster_se,
    clusters_of,
    paired,
    rate,
    score_trajectory,
    summarize,
    t975,
    wilson,
)


def _score(task: str, valid: bool, *, cluster: str = "", family: str = "source_integrity",
           pass_index: int = 0) -> TrajectoryScore:
    return TrajectoryScore(trajectory_id=f"{task}-{pass_index}", task_id=task, family=family, pass_index=pass_index,
                           valid=valid, action_valid=valid, requests=1, useful_requests=int(valid), regret=0,
                           cost_score=float(valid), over_submit=False, acquired_any=valid, acquired_all=valid,
                           label="reference_path" if valid else "wrong_class_terminal", cluster=cluster)


def _finite(ci: tuple[float, float]) -> bool:
    return all(math.isfinite(x) for x in ci) and 0.0 <= ci[0] <= ci[1] <= 1.0


# --- exact t quantiles -------------------------------------------------------------------------------------------

def test_t_quantiles_are_exact() -> None:
    assert t975(1) == pytest.approx(12.7062047, abs=1e-6)
    assert t975(40) == pytest.approx(2.0210754, abs=1e-6)  # the old table fell back to 1.96 past 30
    assert t975(11) == pytest.approx(2.2009852, abs=1e-6)  # the old table used df=10's 2.228 here
    assert t975(10_000) == pytest.approx(1.9602012, abs=1e-6)


def test_t_quantile_rejects_zero_degrees_of_freedom() -> None:
    with pytest.raises(ValueError):
        t975(0)


def test_per_pass_interval_uses_exact_quantile() -> None:
    # 41 passes: t with df=40; per-pass rates alternate 0 and 1 over one task each
    values = {p: [p % 2 == 0] for p in range(41)}
    per = [float(p % 2 == 0) for p in range(41)]
    m = sum(per) / 41
    sd = math.sqrt(sum((x - m) ** 2 for x in per) / 40)
    r = rate(values)
    assert r.passes_method == "student_t_over_passes" and r.method.startswith("cluster_robust_t")
    assert r.ci95_passes[1] - m == pytest.approx(2.0210754 * sd / math.sqrt(41), abs=1e-6)


def test_paired_uses_exact_quantile() -> None:
    # 41 tasks: A valid on 21 of them, B on none -> diffs 1 (x21), 0 (x20)
    a = [_score(f"t{i}", i < 21) for i in range(41)]
    b = [_score(f"t{i}", False) for i in range(41)]
    out = paired(a, b)
    diffs = [1.0] * 21 + [0.0] * 20
    m = sum(diffs) / 41
    sd = math.sqrt(sum((d - m) ** 2 for d in diffs) / 40)
    assert out["tasks"] == 41
    assert out["ci95"][1] - m == pytest.approx(2.0210754 * sd / math.sqrt(41), abs=1e-9)


# --- clustered standard error -------------------------------------------------------------------------------------

def test_cluster_se_matches_hand_computation() -> None:
    # n = 6, mean 0.5; residual sums: a = .5 + .5 - .5 = .5, b = .5 - .5 = 0, c = -.5
    # se^2 = G/(G-1) * sum S_g^2 / n^2 = 3/2 * 0.5 / 36 = 1/48
    values = [1.0, 1.0, 0.0, 1.0, 0.0, 0.0]
    clusters = ["a", "a", "a", "b", "b", "c"]
    assert cluster_se(values, clusters) == pytest.approx(math.sqrt(1 / 48), abs=1e-12)


def test_cluster_ci_matches_hand_computation() -> None:
    # n = 12, mean 0.5; clusters of two: a = [1, 1] (S = 1), b = [0, 0] (S = -1), c..f = [1, 0] (S = 0)
    # se^2 = 6/5 * (1 + 1) / 144 = 1/60; half width = t(0.975, 5) * sqrt(1/60) = 2.5705818 * 0.1290994
    values = [1.0, 1.0, 0.0, 0.0] + [1.0, 0.0] * 4
    clusters = ["a", "a", "b", "b", "c", "c", "d", "d", "e", "e", "f", "f"]
    assert cluster_se(values, clusters) == pytest.approx(math.sqrt(1 / 60), abs=1e-12)
    h = 2.5705818 * math.sqrt(1 / 60)
    lo, hi = cluster_ci(values, clusters)
    assert lo == pytest.approx(0.5 - h, abs=1e-6)
    assert hi == pytest.approx(0.5 + h, abs=1e-6)


def test_singleton_clusters_reduce_to_ordinary_t_interval() -> None:
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    n, m = len(values), sum(values) / len(values)
    s = math.sqrt(sum((x - m) ** 2 for x in values) / (n - 1))
    lo, hi = cluster_ci(values, [str(i) for i in range(n)])
    assert hi - m == pytest.approx(t975(n - 1) * s / math.sqrt(n), abs=1e-12)
    assert m - lo == pytest.approx(t975(n - 1) * s / math.sqrt(n), abs=1e-12)


def test_clustering_identical_per_cluster_data_widens_the_interval() -> None:
    # 10 workflows of 5 tasks each; every task of a workflow has the same outcome; 6 of 10 workflows valid
    values = {0: [w < 6 for w in range(10) for _ in range(5)]}
    groups = {0: [f"w{w}" for w in range(10) for _ in range(5)]}
    r = rate(values, groups)
    naive = wilson(30, 50)
    assert r.passes_method == "wilson" and r.ci95_passes == naive
    assert r.clusters == 10
    width = r.ci95[1] - r.ci95[0]  # the headline is the clustered interval
    assert width > 1.5 * (naive[1] - naive[0])
    boot = r.ci95_cluster_bootstrap[1] - r.ci95_cluster_bootstrap[0]
    # the bootstrap resamples clusters, not trajectories: wider than a bootstrap of independent trajectories
    flat = [float(v) for v in values[0]]
    unclustered = cluster_bootstrap_ci(flat, [str(i) for i in range(50)])
    assert boot > 1.5 * (unclustered[1] - unclustered[0])
    # and the same data without clusters gives the naive width back
    r0 = rate(values)
    assert r0.clusters == 50
    assert r0.ci95[1] - r0.ci95[0] < 0.7 * width


# --- cluster bootstrap ---------------------------------------------------------------------------------------------

def test_bootstrap_is_deterministic() -> None:
    values = [float(i % 3 == 0 or i % 5 == 0) for i in range(120)]
    clusters = [f"c{(i * i) % 23}" for i in range(120)]
    first = cluster_bootstrap_ci(values, clusters)
    assert cluster_bootstrap_ci(values, clusters) == first
    # independent of input order (clusters are taken in sorted order)
    assert cluster_bootstrap_ci(values[::-1], clusters[::-1]) == first
    assert rate({0: [v == 1.0 for v in values]}, {0: clusters}).ci95_cluster_bootstrap == first
    assert first[0] < sum(values) / 120 < first[1]
    assert cluster_bootstrap_ci(values, clusters, seed=1) != first  # the seed is what fixes it


# --- degenerate cases ----------------------------------------------------------------------------------------------

def test_one_cluster_gives_the_point_value() -> None:
    r = rate({0: [True, False, True, True]}, {0: ["w", "w", "w", "w"]})
    assert r.clusters == 1
    assert r.ci95 == (0.75, 0.75)
    assert r.ci95_cluster_bootstrap == (0.75, 0.75)
    assert "one cluster" in r.cluster_method


def test_all_equal_values_give_the_exact_interval_over_clusters_never_a_point() -> None:
    """n of n (or 0 of n) is not certainty: the headline is Clopper-Pearson over the clusters, each counted once;
    the bootstrap, which cannot move, stays the point value and says why."""
    r = rate({0: [True] * 6, 1: [True] * 6}, {0: list("aabbcc"), 1: list("aabbcc")})
    assert r.clusters == 3
    assert r.ci95 == pytest.approx((0.2924017738, 1.0))  # (0.025)^(1/3): the exact lower bound of 3 of 3
    assert "clopper_pearson_over_clusters" in r.method
    assert r.ci95_cluster_bootstrap == (1.0, 1.0)
    assert "no variance between clusters" in r.cluster_method
    z = rate({0: [False] * 4}, {0: list("abcd")})
    assert z.ci95 == pytest.approx((0.0, 1 - 0.025 ** (1 / 4))) and z.ci95_cluster_bootstrap == (0.0, 0.0)
    assert clopper_pearson(0, 10) == pytest.approx((0.0, 0.3084971078))
    assert clopper_pearson(3, 10) == pytest.approx((0.0667395, 0.6524529), abs=1e-6)


def test_zero_trajectories_give_finite_intervals() -> None:
    r = rate({})
    assert (r.n, r.clusters, r.mean) == (0, 0, 0.0)
    assert r.ci95 == (0.0, 0.0) and r.ci95_cluster_bootstrap == (0.0, 0.0)
    assert _finite(r.ci95_passes)
    out = summarize([], "none", 1)
    assert out["evidence_grounded_valid"]["ci95"] == (0.0, 0.0)
    assert out["evidence_grounded_valid"]["clusters"] == 0


def test_intervals_are_clipped_and_finite() -> None:
    for values, clusters in [([1.0, 0.0], ["a", "b"]), ([1.0, 1.0, 1.0, 0.0], ["a", "a", "b", "c"])]:
        assert _finite(cluster_ci(values, clusters))
        assert _finite(cluster_bootstrap_ci(values, clusters))
    assert cluster_ci([1.0, 0.0], ["a", "b"]) == (0.0, 1.0)  # 0.5 ± 12.7 * 0.5, clipped


# --- cluster plumbing: score_trajectory and summarize ---------------------------------------------------------------

def test_score_trajectory_stores_the_cluster() -> None:
    answer = TaskAnswer(task_id="t1", family=Family.SOURCE_INTEGRITY, moment_id="m1",
                        accepted_classes=[Action.FLAG_SOURCE_DEFECT], binding=["e1"], needed=["e1"], useful=["e1"],
                        reference=[ReferenceStep(action=Action.REQUEST_CHARACTERIZATION, evidence_id="e1"),
                                   ReferenceStep(action=Action.FLAG_SOURCE_DEFECT, payload=["e1"])],
                        reference_class=Action.FLAG_SOURCE_DEFECT, reference_payload=["e1"],
                        must_bind={}, may_bind={}, decision="d1", source_facts=[])
    verdict = Verdict(trajectory_id="tr1", task_id="t1", action_valid=True, payload_bound=True, grounded=True,
                      valid=True)
    tr = {"trajectory_id": "tr1", "task_id": "t1", "pass_index": 0, "requested": ["e1"],
          "terminal_class": Action.FLAG_SOURCE_DEFECT, "end": "terminal", "plumbing": {}}
    assert score_trajectory(tr, verdict, answer, 4, cluster="wf-7").cluster == "wf-7"
    assert score_trajectory(tr, verdict, answer, 4).cluster == ""


def test_summarize_carries_clustered_intervals_overall_and_per_family() -> None:
    scores = []
    for p in range(2):
        for w in range(4):
            for t in range(3):
                fam = "source_integrity" if t < 2 else "missing_evidence"
                scores.append(_score(f"w{w}t{t}", w < 2, cluster=f"w{w}", family=fam, pass_index=p))
    out = summarize(scores, "ref", 2)
    keys = ("ci95", "method", "ci95_passes", "passes_method", "ci95_cluster_bootstrap", "clusters", "cluster_method")
    for name in ("evidence_grounded_valid", "action_valid", "acquired_any", "acquired_all"):
        assert all(k in out[name] for k in keys), name
        assert out[name]["clusters"] == 4
        assert _finite(out[name]["ci95"]) and _finite(out[name]["ci95_cluster_bootstrap"])
    egv = out["evidence_grounded_valid"]
    # a deterministic policy: the per-pass interval has zero width and says so; it is never the headline
    assert egv["passes_method"] == f"student_t_over_passes ({ZERO_WIDTH})" and egv["ci95_passes"] == (0.5, 0.5)
    # the same deterministic outcome twice is not 2x the evidence: the clustered headline is wide
    assert egv["method"] == "cluster_robust_t" and egv["ci95"][1] - egv["ci95"][0] > 0.5
    for fam in ("source_integrity", "missing_evidence"):
        f = out["by_family"][fam]["evidence_grounded_valid"]
        assert all(k in f for k in keys)
        assert f["clusters"] == 4
    # with no cluster set, every task is its own cluster
    bare = summarize([s.model_copy(update={"cluster": ""}) for s in scores], "ref", 2)
    assert bare["evidence_grounded_valid"]["clusters"] == 12
    assert bare["by_family"]["missing_evidence"]["evidence_grounded_valid"]["clusters"] == 4


def test_clusters_join_tasks_that_share_a_workflow_or_a_gold_fact() -> None:
    tasks = {"t1": ("wf:a", ["defect:x"]), "t2": ("wf:a", ["clean:y"]), "t3": ("wf:b", ["defect:x"]),
             "t4": ("wf:c", ["clean:z"]), "t5": ("wf:d", [])}
    got = clusters_of(tasks)
    assert got["t1"] == got["t2"] == got["t3"] == "wf:a"  # t3's workflow is joined through the shared fact
    assert got["t4"] == "wf:c" and got["t5"] == "wf:d"


def test_the_versions_of_one_archive_are_one_cluster_and_one_lineage() -> None:
    assert lineage("wf:ark:/88434/mds2-2106@1.6.0~a1b2") == lineage("wf:ark:/88434/mds2-2106@1.5.0") \
        == "wf:ark:/88434/mds2-2106"
    assert lineage("wf:crate:PASTA@8f93b89") == lineage("wf:crate:PASTA@a9641fd") != lineage("wf:crate:Other@8f93b89")
    tasks = {"t1": ("wf:ark:/1/r@1.0", ["clean:a"]), "t2": ("wf:ark:/1/r@2.0", ["clean:b"]),
             "t3": ("wf:ark:/1/s@1.0", ["clean:c"])}
    got = clusters_of(tasks)
    assert got["t1"] == got["t2"] == "wf:ark:/1/r@1.0" and got["t3"] == "wf:ark:/1/s@1.0"


def test_a_rate_carries_the_rate_of_each_pass_in_pass_order() -> None:
    r = rate({2: [True, True], 0: [False, True], 1: [False, False]})
    assert r.per_pass == [0.5, 0.0, 1.0]  # what a report draws as one point per pass
    assert rate({0: [True, False, False, True]}).per_pass == [0.5]
    assert rate({}).per_pass == []
