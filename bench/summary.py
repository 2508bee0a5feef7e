"""Issue 13's figures from one run: start-up, ingest against its floor, peak memory, episodes/s and scoring,
printed as the Markdown table docs/results/benchmarks.md shows, each figure beside its aim.

Runs bench/cli.py, bench/ingest.py (generated records of 10k and 100k components, each as --repeat interleaved
(voe, floor) pairs; with --long also 1M, for peak RSS) and bench/replay.py, each in its own process with --json,
against the Neo4j of NEO4J_URI (or `voe db up`'s default). About 10 minutes at --repeat 3 on the 2-core VM;
--long adds about 8.

    python bench/summary.py [--repeat 3] [--long] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent


def _lines(script: str, *argv: str) -> list[dict[str, Any]]:
    """The JSON a bench script prints with --json: one object per line, or one indented object."""
    out = subprocess.run([sys.executable, str(BENCH / script), *argv, "--json"], capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        sys.exit(f"bench/{script} failed (exit {out.returncode}):\n{out.stderr.strip()[-2000:]}")
    text = out.stdout.strip()
    if text.startswith("{") and "\n}" in text:
        return [json.loads(text)]
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def _span(values: list[float], fmt: str = "{:,.0f}") -> str:
    return fmt.format(min(values)) if min(values) == max(values) else f"{fmt.format(min(values))}-{fmt.format(max(values))}"


def rows(cli: dict[str, Any], ingest: list[dict[str, Any]], replay: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    """(what, bench, now, aim) for the table."""
    by_case: dict[str, list[dict[str, Any]]] = {}
    for r in ingest:
        by_case.setdefault(str(r["case"]), []).append(r)

    def median_ratio(size: str) -> str:
        m = by_case.get(f"median:bench-{size}", [{}])[0]
        if not m:
            return "not run"
        return f"**{m['voe_over_floor']}x** (median of {m['pairs']}: {', '.join(f'{x}x' for x in m['ratios'])})"

    def rss(size: str) -> str:
        runs = by_case.get(f"bench-{size}", [])
        return f"{max(float(r['peak_rss_mib_python']) for r in runs):,.0f} MiB" if runs else "not run (--long)"

    def ratio(case: str) -> str:
        found = by_case.get(case)
        return f"{found[-1]['ratio']}x" if found else "not run"

    x10 = [r for r in replay if r["package"] == "x10"]
    score = {r["policy"]: r["write_plus_verify_trajectories_per_s"] for r in x10}
    return [
        ("`voe --help`", "`bench/cli.py`", f"{cli['voe --help (s)']} s", "< 0.3 s"),
        ("`voe run` fixed start-up", "`bench/cli.py`", f"{cli['voe run start-up (s)']} s", "< 0.5 s"),
        ("ingest 10k components (read whole), voe / bare-driver floor", "`bench/ingest.py`", median_ratio("10000"),
         "(the aim is at 100k)"),
        ("ingest 100k components (streamed), voe / floor", "`bench/ingest.py`", median_ratio("100000"), "<= 1.15x"),
        ("per-element cost 100k vs 10k: voe; floor", "`bench/ingest.py`",
         f"{ratio('per-element cost:bench-100000:bench-10000')}; "
         f"{ratio('floor per-element cost:floor:bench-100000:floor:bench-10000')}", "within 1.1x"),
        ("per-element cost 1M vs 100k (voe)", "`bench/ingest.py --sizes 1000000`",
         ratio("per-element cost:bench-1000000:bench-100000"), ""),
        ("peak RSS of the voe process at 100k components", "`bench/ingest.py`", rss("100000"), ""),
        ("peak RSS of the voe process at 1M components", "`bench/ingest.py --sizes 1000000`", rss("1000000"),
         "< 1 GiB"),
        ("episodes/s through the environment, x10 package, per baseline", "`bench/replay.py`",
         _span([float(r["episodes_per_s"]) for r in x10]), ""),
        ("`voe score` write + verify, x10, trajectories/s", "`bench/replay.py`",
         f"**{_span([float(v) for v in score.values()])}** ("
         + ", ".join(f"{k} {v:,}" for k, v in sorted(score.items(), key=lambda kv: -kv[1])) + ")", ">= 5,000"),
        ("verify query alone, x10, over the in-process check of the same files", "`bench/replay.py`",
         _span([float(r["query_over_python"]) for r in x10], "{:.1f}") + "x", "<= 3x"),
        ("write + verify, x10, over the in-process check", "`bench/replay.py`",
         _span([float(r["graph_over_python"]) for r in x10], "{:.1f}") + "x", ""),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="(voe, floor) pairs per ingest size")
    parser.add_argument("--long", action="store_true", help="also ingest 1M components (peak RSS)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    t0 = time.perf_counter()
    cli = _lines("cli.py")[0]
    sizes = "10000,100000" + (",1000000" if args.long else "")
    ingest = _lines("ingest.py", "--sizes", sizes, "--floor-up-to", "100000", "--bulk-up-to", "0",
                    "--repeat", str(args.repeat), "--generated-only")
    replay = _lines("replay.py")
    table = rows(cli, ingest, replay)
    machine = (f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
               f"started {started}, {time.perf_counter() - t0:.0f} s")
    if args.json:
        print(json.dumps({"machine": machine, "rows": [dict(zip(("what", "bench", "now", "aim"), r, strict=True))
                                                      for r in table]}, indent=2))
        return
    print(f"From one run of `python bench/summary.py{' --long' if args.long else ''} --repeat {args.repeat}` "
          f"({machine}):\n")
    print("| what | bench | now | aim |\n|---|---|---|---|")
    for r in table:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
