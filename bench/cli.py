"""Start-up cost of the command line: wall time of `voe --help`, `voe run --help` and `voe db status` (a
command that imports the driver), the fixed start-up of `voe run` with a baseline (the CLI and the runner's
imports), median of N runs each, and the modules `voe --help` imports.

    python bench/cli.py [--runs N] [--json]

Figures are for comparing run to run on one machine (state the machine with them)."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

VOE = Path(sys.executable).with_name("voe")  # the console script users run, from the same environment
COMMANDS = {"voe --help": ["--help"], "voe run --help": ["run", "--help"],
            "voe db status": ["db", "status", "--bolt-port", "1", "--http-port", "2"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out: dict[str, float | int] = {}
    for name, argv in COMMANDS.items():
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            done = subprocess.run([str(VOE), *argv], capture_output=True, text=True)
            times.append(time.perf_counter() - t0)
            if done.returncode not in (0, 1):  # `db status` of a server that is not there exits 1
                sys.exit(f"{name} failed (exit {done.returncode}): {done.stderr.strip()}")
        out[name + " (s)"] = round(statistics.median(times), 3)
    # the fixed start-up of `voe run` with a baseline: the CLI and everything the runner imports before the
    # first task is read (the work itself grows with the package and is measured by bench/replay.py)
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import voe.cli, voe.cli.evaluate, voe.replay.runner, voe.replay.probes"],
                       check=True)
        times.append(time.perf_counter() - t0)
    out["voe run start-up (s)"] = round(statistics.median(times), 3)
    mods = subprocess.run([sys.executable, "-c", "import sys, cli; print(len(sys.modules))"],
                          capture_output=True, text=True).stdout.strip()
    out["modules imported by the CLI"] = int(mods or 0)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for k, v in out.items():
            print(f"{k:<32} {v}")


if __name__ == "__main__":
    main()
