"""Replay benchmark: baseline episodes/s through the environment and trajectories/s verified by Cypher.

Ingests the shared archives into an emptied graph, compiles the package, builds a copy scaled x10
(every task repeated under ten ids, stored in the graph too), then for each package and each baseline
(3 passes): episodes/s end to end (`voe run`: policy + environment + trace files), and verification
throughput (the median of --repeat measurements each): `voe score`'s first write of Run/Trajectory plus the
batched verify query in one transaction (the run forgotten by the graph before each), a re-score of the same
files (kept, not rewritten), and the query alone, against the in-process check of the same files.
Prints one line per case and the peak RSS of this process. Needs a running Neo4j.

    python bench/replay.py [--passes 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "archives"
sys.path.insert(0, str(REPO))

from bench.common import compile_shared, emit, peak_rss_mib, scaled_package  # noqa: E402 - after the checkout is on the path

BASELINES = ["reference", "request_everything", "submit_all", "refuse_all", "random"]


def median_rate(measure: Callable[[], int], repeat: int, before: Callable[[], object] | None = None) -> tuple[float, int]:
    """Items/s of `measure` (which returns how many items it did), the median of `repeat` timings: one sample on
    a 2-core machine moves by 2x. `before` runs untimed ahead of each."""
    times, n = [], 0
    for _ in range(repeat):
        if before is not None:
            before()
        t = time.perf_counter()
        n = measure()
        times.append(time.perf_counter() - t)
    return n / statistics.median(times), n


def verification_rates(graph: Any, out: Path, answers: dict[str, Any], repeat: int) -> tuple[dict[str, float], int]:
    """Trajectories/s of a first `voe score` (write + verify in one transaction, the graph having forgotten the
    run), a re-score of the same files (the graph's copy kept), the verify query alone, and the in-process check
    (voe/artifacts/verdict.py) of the same files."""
    from voe.artifacts.verdict import verdict
    from voe.jsonl import read_jsonl
    from voe.verifiers.graph_verify import verdicts as graph_verdicts
    from voe.verifiers.graph_verify import verify_run

    run_id = json.loads((out / "run.json").read_text())["run_id"]

    def in_process() -> int:
        read_jsonl(out / "steps.jsonl")
        return len([verdict(tr["terminal_class"], tr["payload"], tr["requested"], answers[tr["task_id"]])
                    for tr in read_jsonl(out / "trajectories.jsonl")])

    rates = {
        "write_plus_verify": median_rate(lambda: len(verify_run(graph, out)), repeat,
                                         before=lambda: graph.execute("verifiers/clear_run", run_id=run_id))[0],
        "rescore": median_rate(lambda: len(verify_run(graph, out)), repeat)[0],
        "python_check": median_rate(in_process, repeat)[0]}
    rates["verify_query"], n = median_rate(
        lambda: len(graph_verdicts(graph.query("verifiers/verify_trajectories", run_id=run_id))), repeat)
    assert n == len(read_jsonl(out / "trajectories.jsonl")), "the graph verified another number of trajectories"
    return rates, n


def scale(pkg: Path, out: Path, factor: int, graph: object) -> Path:
    from voe.compiler.package import _store

    views, answers, m = scaled_package(pkg, out, factor)
    _store(graph, views, answers, {v.workflow_id: v.workflow_title for v in views}, m.content_hash)  # type: ignore[arg-type]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5, help="measurements per case (the median is printed)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from voe.artifacts.package import load_package
    from voe.graph import Graph
    from voe.replay.runner import run_policy

    print(f"# machine: {platform.node()} {platform.machine()} cores={os.cpu_count()} python={platform.python_version()}",
          file=sys.stderr)
    with Graph() as graph, tempfile.TemporaryDirectory() as tmp:
        pkg = compile_shared(graph, SHARED, Path(tmp) / "pkg")
        packages = {"compiled": pkg, "x10": scale(pkg, Path(tmp) / "pkg-x10", 10, graph)}
        for name, p in packages.items():
            for policy in BASELINES:
                out = Path(tmp) / f"{name}-{policy}"
                t0 = time.perf_counter()
                info = run_policy(p, policy, args.passes, 1, out)
                run_s = time.perf_counter() - t0
                rates, verified = verification_rates(graph, out, load_package(p)[2], args.repeat)
                row = {"package": name, "policy": policy, "episodes": info.trajectories,
                       "episodes_per_s": round(info.trajectories / run_s), "verified": verified,
                       "verify_query_trajectories_per_s": round(rates["verify_query"]),
                       "write_plus_verify_trajectories_per_s": round(rates["write_plus_verify"]),
                       "rescore_trajectories_per_s": round(rates["rescore"]),
                       "python_check_trajectories_per_s": round(rates["python_check"]),
                       "graph_over_python": round(rates["python_check"] / rates["write_plus_verify"], 1),
                       "query_over_python": round(rates["python_check"] / rates["verify_query"], 1),
                       "peak_rss_mib": round(peak_rss_mib(), 1)}
                emit(row, args.json, f"{name:>8} {policy:>18}: {row['episodes']:>5} episodes at {row['episodes_per_s']:>6}/s; "
                     f"verify query {row['verify_query_trajectories_per_s']:>6} traj/s, with graph writes "
                     f"{row['write_plus_verify_trajectories_per_s']:>5} traj/s, re-score "
                     f"{row['rescore_trajectories_per_s']:>5} traj/s (in process "
                     f"{row['python_check_trajectories_per_s']:>6} traj/s, {row['graph_over_python']}x, "
                     f"query alone {row['query_over_python']}x); "
                     f"peak RSS {row['peak_rss_mib']} MiB")


if __name__ == "__main__":
    main()
