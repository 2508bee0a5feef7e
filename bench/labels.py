"""Labels benchmark (DESIGN §10): states and steps labelled per second, training rows written per second, and the
peak memory, for a package and its copy scaled x10 (every task repeated under ten ids).

With --package PKG it labels that package; without, it ingests the shared archives into an emptied graph and
compiles one (needs a running Neo4j). For each package: `voe label` of every state plus a random run of
--passes passes (its steps), then `voe export-training` of all three formats from that run. Prints one line per
package (or JSON lines with --json) and the machine.

    python bench/labels.py [--package PKG] [--passes 3] [--json]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "archives"
sys.path.insert(0, str(REPO))

from bench.common import compile_shared, emit, peak_rss_mib, scaled_package  # noqa: E402 - after the checkout is on the path


def compiled(tmp: Path) -> Path:
    from voe.graph import Graph

    with Graph() as graph:
        return compile_shared(graph, SHARED, tmp / "pkg")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, help="a compiled package (default: compile the shared archives)")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from voe.export.training import export_training
    from voe.replay.runner import run_policy
    from voe.verifiers.labels import label_package

    print(f"# machine: {platform.node()} {platform.machine()} cores={os.cpu_count()} python={platform.python_version()}",
          file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        pkg = args.package or compiled(tmp)
        scaled_package(pkg, tmp / "pkg-x10", 10)
        for name, p in {"package": pkg, "x10": tmp / "pkg-x10"}.items():
            run = tmp / f"run-{name}"
            run_policy(p, "random", args.passes, 1, run)
            t0 = time.perf_counter()
            info = label_package(p, tmp / f"labels-{name}", [run])
            label_s = time.perf_counter() - t0
            steps = sum(info.runs.values())
            t0 = time.perf_counter()
            training = export_training(p, [run], tmp / f"training-{name}")
            train_s = time.perf_counter() - t0
            rows = sum(n for splits in training.counts.values() for n in splits.values())
            row = {"package": name, "tasks": info.tasks, "states": info.states, "steps": steps,
                   "label_seconds": round(label_s, 2), "labels_per_s": round((info.states + steps) / label_s),
                   "training_rows": rows, "training_seconds": round(train_s, 2),
                   "training_rows_per_s": round(rows / train_s), "peak_rss_mib": round(peak_rss_mib(), 1)}
            emit(row, args.json, f"{name:>8}: {row['tasks']} tasks, {row['states']} states + {steps} steps labelled "
                 f"in {row['label_seconds']} s ({row['labels_per_s']}/s); {rows} training rows in "
                 f"{row['training_seconds']} s ({row['training_rows_per_s']}/s); peak RSS {row['peak_rss_mib']} MiB")


if __name__ == "__main__":
    main()
