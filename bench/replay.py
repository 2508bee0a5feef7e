"""Replay benchmark: baseline episodes/s through the environment and trajectories/s verified by Cypher.

Ingests the shared archives into an emptied graph, compiles the package, builds a copy scaled x10
(every task repeated under ten ids, stored in the graph too), then for each package and each baseline
(3 passes): episodes/s end to end (`voe run`: policy + environment + trace files), and verification
throughput: `voe score`'s write of Run/Trajectory/Step plus the batched verify query in one transaction, a
re-score of the same files (kept, not rewritten), and the query alone, against the in-process check.
Prints one line per case and the peak RSS of this process. Needs a running Neo4j.

    python bench/replay.py [--passes 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "archives"
sys.path.insert(0, str(REPO))

BASELINES = ["reference", "request_everything", "submit_all", "refuse_all", "random"]


def peak_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def scale(pkg: Path, out: Path, factor: int, graph: object) -> Path:
    from compiler.models import TaskAnswer, TaskView
    from compiler.package import _store, load_package

    views, evidence, answers, manifest = load_package(pkg)
    out.mkdir(parents=True, exist_ok=True)
    new_views, new_answers = [], []
    for k in range(factor):
        for v in views:
            tid = f"{v.task_id}~{k}"
            new_views.append(TaskView.model_validate({**v.model_dump(), "task_id": tid}))
            a = answers[v.task_id]
            new_answers.append(TaskAnswer.model_validate({**a.model_dump(), "task_id": tid, "moment_id": f"{a.moment_id}~{k}"}))
    (out / "tasks.jsonl").write_text("".join(json.dumps(v.model_dump(mode="json")) + "\n" for v in new_views))
    (out / "answers.jsonl").write_text("".join(json.dumps(a.model_dump(mode="json")) + "\n" for a in new_answers))
    (out / "evidence.jsonl").write_text((pkg / "evidence.jsonl").read_text())
    m = manifest.model_copy(update={"content_hash": manifest.content_hash[:-4] + f"x{factor:03d}"})
    (out / "manifest.json").write_text(m.model_dump_json())
    _store(graph, new_views, new_answers, {v.workflow_id: v.workflow_title for v in new_views}, m.content_hash)  # type: ignore[arg-type]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from compiler.package import compile_package, load_package
    from compiler.verdict import verdict
    from ingest import ingest_paths
    from replay.runner import run_policy
    from verifiers.graph_verify import verdicts as graph_verdicts
    from verifiers.graph_verify import verify_run
    from voe.graph import Graph
    from voe.jsonl import read_jsonl

    print(f"# machine: {platform.node()} {platform.machine()} cores={os.cpu_count()} python={platform.python_version()}",
          file=sys.stderr)
    with Graph() as graph, tempfile.TemporaryDirectory() as tmp:
        graph.verify()
        graph.clear()
        ingest_paths([SHARED / d for d in ("mds2-4103", "mds2-3842", "mds2-2525", "mds2-2106", "amb2025-template",
                                            "ambench-releases")]
                     + [SHARED / "FACTS.md"], graph)
        pkg = Path(tmp) / "pkg"
        compile_package(graph, pkg)
        packages = {"compiled": pkg, "x10": scale(pkg, Path(tmp) / "pkg-x10", 10, graph)}
        for name, p in packages.items():
            for policy in BASELINES:
                out = Path(tmp) / f"{name}-{policy}"
                t0 = time.perf_counter()
                info = run_policy(p, policy, args.passes, 1, out)
                run_s = time.perf_counter() - t0
                t1 = time.perf_counter()
                checked_in_graph = verify_run(graph, out)  # write + verify, one transaction (`voe score`)
                write_verify_s = time.perf_counter() - t1
                t2 = time.perf_counter()
                verify_run(graph, out)  # the same files again: the graph's copy is kept
                rescore_s = time.perf_counter() - t2
                run_id = json.loads((out / "run.json").read_text())["run_id"]
                t2 = time.perf_counter()
                verdicts = graph_verdicts(graph.query("verifiers/verify_trajectories", run_id=run_id))
                query_s = time.perf_counter() - t2
                assert len(verdicts) == len(checked_in_graph)
                # the same verdicts in process (compiler/verdict.py), from the same files the graph path reads
                answers = load_package(p)[2]
                t3 = time.perf_counter()
                read_jsonl(out / "steps.jsonl")
                checked = [verdict(tr["terminal_class"], tr["payload"], tr["requested"], answers[tr["task_id"]])
                           for tr in read_jsonl(out / "trajectories.jsonl")]
                python_s = time.perf_counter() - t3
                row = {"package": name, "policy": policy, "episodes": info.trajectories,
                       "episodes_per_s": round(info.trajectories / run_s), "verified": len(verdicts),
                       "verify_query_trajectories_per_s": round(len(verdicts) / query_s),
                       "write_plus_verify_trajectories_per_s": round(len(verdicts) / write_verify_s),
                       "rescore_trajectories_per_s": round(len(verdicts) / rescore_s),
                       "python_check_trajectories_per_s": round(len(checked) / python_s),
                       "graph_over_python": round(write_verify_s / python_s, 1),
                       "peak_rss_mib": round(peak_rss_mib(), 1)}
                if args.json:
                    print(json.dumps(row))
                else:
                    print(f"{name:>8} {policy:>18}: {row['episodes']:>5} episodes at {row['episodes_per_s']:>6}/s; "
                          f"verify query {row['verify_query_trajectories_per_s']:>6} traj/s, with graph writes "
                          f"{row['write_plus_verify_trajectories_per_s']:>5} traj/s, re-score "
                          f"{row['rescore_trajectories_per_s']:>5} traj/s (in process "
                          f"{row['python_check_trajectories_per_s']:>6} traj/s, {row['graph_over_python']}x); "
                          f"peak RSS {row['peak_rss_mib']} MiB")


if __name__ == "__main__":
    main()
