"""Agent benchmark: the LLM-policy loop (`run_agent`) against the project's own OpenAI-compatible server.

A scripted model (tests/llm_server.py) follows every task's reference path, so each figure is the cost of the
loop itself: the openai client, HTTP, the response caches, the replay environment and the run files. The server
runs in a child process (LocalLLMServerProcess, on a free port, stopped at the end), as any real endpoint does:
its CPU and GIL are not the measured process's. Cases:

1. overhead: the server answers at once; episodes/s, calls/s and mean ms per call over --passes passes, at
   concurrency 1 and 8, with every call going to the server (use_cache=False), then again into fresh run
   folders answered from the warm shared response cache (use_cache=True; the server is not called); ms/call
   is wall time over calls, cpu this process's CPU time over calls (the client, the environment, the run
   files), server cpu the server process's, round trip the mean client-observed call latency; connections
   are those the server accepted (kept alive, one per call in flight);
2. latency: the server answers after --delay seconds per call (a thread per connection, so the calls in
   flight wait at once); episodes/s at concurrency 1 (one pass: it is the time per episode that matters)
   versus --concurrency (--latency-passes passes, enough that the last, partly filled round of the
   concurrent episodes weighs little), and their ratio;
3. the peak RSS of this process (VmHWM).

The aims of issue 33 (>= 300 episodes/s against the instant server, >= 25x at concurrency 32 against a 200 ms
server) are printed beside the figures, with what the figures depend on: the cores, the load average (other
jobs on the machine) and the filesystem of the run folders (TMPDIR; creating a file costs a lot on some).

The package is compiled from the shared archives into an emptied graph (needs Neo4j: NEO4J_URI, e.g.
bolt://127.0.0.1:27687), unless --package names a compiled one. The shared response cache (VOE_CACHE_DIR)
is a temporary folder, removed at the end with the run folders.

    python bench/agents.py [--package PKG] [--passes 10] [--latency-passes 16] [--json] [--profile 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "archives"
SOURCES = ["mds2-4103", "mds2-2525", "mds2-2106", "amb2025-template", "ambench-releases"]
AIM_EPISODES_PER_S = 300.0  # issue 33: against a server that answers at once
AIM_SPEEDUP = 25.0  # issue 33: concurrency 32 over 1 against a server that takes 200 ms a call
sys.path.insert(0, str(REPO))

from bench.common import peak_rss_mib  # noqa: E402 - after the checkout is on the path


class Tasks:
    """The package's tasks by what the model is shown of them (as in tests/compiler/test_agents.py)."""

    def __init__(self, pkg: Path) -> None:
        from voe.artifacts.package import load_package
        from voe.replay.agent import task_text

        views, _, answers, _ = load_package(pkg)
        self.by_text = {task_text(v): (v, answers[v.task_id]) for v in views}
        self.views = views

    def of(self, body: dict[str, Any]) -> tuple[Any, Any, int]:
        messages = body["messages"]
        view, answer = self.by_text[messages[1]["content"]]
        return view, answer, sum(1 for m in messages if m["role"] == "assistant")


def entry(view: Any, evidence_id: str) -> str:
    return str(next(e.entry_id for e in view.menu if e.evidence_id == evidence_id))


def reference_reply(view: Any, answer: Any, t: int, delay: float = 0.0) -> Any:
    from tests.llm_server import Reply

    step = answer.reference[min(t, len(answer.reference) - 1)]  # after a detour: the reference's terminal
    args: dict[str, Any] = {"evidence_id": entry(view, step.evidence_id)} if step.evidence_id else (
        {} if step.action.value == "abstain_or_escalate" else {"payload": [entry(view, e) for e in step.payload or []]})
    return Reply.tool(step.action.value, args, delay=delay)


def model(tasks: Tasks, delay: float = 0.0) -> Callable[[dict[str, Any], int], Any]:
    """A scripted model on the reference path, answering each call after `delay` seconds."""
    def respond(body: dict[str, Any], index: int) -> Any:
        view, answer, t = tasks.of(body)
        return reference_reply(view, answer, t, delay)
    return respond


def scripted_model(pkg: str, delay: float) -> Callable[[dict[str, Any], int], Any]:
    """The scripted model of package `pkg`, made in the server's own process (LocalLLMServerProcess)."""
    return model(Tasks(Path(pkg)), delay)


def build_package(out: Path) -> Path:
    from voe.graph import Graph
    from voe.ingest import ingest_paths
    from voe.replay.admission import compile_package

    with Graph() as graph:
        graph.verify()
        graph.clear()
        graph.apply_schema()
        errors = ingest_paths([SHARED / s for s in SOURCES], graph).errors
        if errors:
            raise SystemExit(f"ingest failed: {errors[:3]}")
        compile_package(graph, out)
    return out


def timing(run: Path) -> tuple[float, int]:
    """Mean client-observed round trip of the calls that went to the server, and the retries (timing.jsonl)."""
    rows = [json.loads(line) for line in (run / "timing.jsonl").read_text().splitlines()]
    live = sum(r["calls"] - r["cached_calls"] for r in rows)
    return 1000 * sum(r["latency_s"] for r in rows) / live if live else 0.0, sum(r["retries"] for r in rows)


def process_cpu_s(pid: int | None) -> float | None:
    """User + system CPU seconds of process `pid` so far (Linux /proc), None where that cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def measure(case: str, pkg: Path, server: Any, out: Path, *, passes: int, concurrency: int, use_cache: bool) -> dict[str, Any]:
    from voe.replay.agent_run import run_agent

    calls_before, opened_before, server_cpu0 = server.calls, server.connections_opened, process_cpu_s(server.pid)
    cpu0, t0 = time.process_time(), time.perf_counter()
    info = run_agent(pkg, "scripted", out, passes=passes, base_url=server.base_url, concurrency=concurrency,
                     use_cache=use_cache)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    server_cpu1 = process_cpu_s(server.pid)
    server_calls, connections = server.calls - calls_before, server.connections_opened - opened_before
    round_trip_ms, retries = timing(out)
    calls = info.calls or 0  # an agent run always counts its calls
    server_cpu = (round(1000 * (server_cpu1 - server_cpu0) / server_calls, 3)
                  if server_cpu0 is not None and server_cpu1 is not None and server_calls else None)
    return {"case": case, "concurrency": concurrency, "use_cache": use_cache, "passes": passes,
            "episodes": info.trajectories, "calls": info.calls, "server_calls": server_calls, "connections": connections,
            "seconds": round(wall, 3), "episodes_per_s": round(info.trajectories / wall, 1),
            "calls_per_s": round(calls / wall, 1), "ms_per_call": round(1000 * wall / calls, 3),
            "cpu_ms_per_call": round(1000 * cpu / calls, 3), "server_cpu_ms_per_call": server_cpu,
            "round_trip_ms": round(round_trip_ms, 3), "retries": retries, "peak_rss_mib": round(peak_rss_mib(), 1)}


def show(row: dict[str, Any], as_json: bool) -> None:
    """One line per case: to stdout, or to stderr (as progress) when stdout carries the JSON object."""
    cache = "warm cache" if row["use_cache"] else "no cache"
    print(f"{row['case']:>8} c={row['concurrency']:<3} {cache:>10}: {row['episodes']:>4} episodes, {row['calls']:>5} calls "
          f"({row['server_calls']:>5} to the server on {row['connections']:>2} connections) in {row['seconds']:>7.2f} s: "
          f"{row['episodes_per_s']:>7.1f} "
          f"episodes/s, {row['calls_per_s']:>7.1f} calls/s, {row['ms_per_call']:>7.3f} ms/call "
          f"(cpu {row['cpu_ms_per_call']:.3f} ms, server cpu {row['server_cpu_ms_per_call'] or 0:.3f} ms, "
          f"round trip {row['round_trip_ms']:.3f} ms, {row['retries']} retries)",
          file=sys.stderr if as_json else sys.stdout, flush=True)


def profile(pkg: Path, server: Any, root: Path, seconds: float, top: int = 30) -> None:
    """cProfile of the concurrency-1 zero-delay loop for about `seconds`, to stderr: this process only (the
    server's time shows up as waiting in the selector)."""
    import cProfile
    import io
    import pstats

    from voe.replay.agent_run import run_agent

    prof = cProfile.Profile()
    started, k = time.perf_counter(), 0
    while time.perf_counter() - started < seconds:
        prof.enable()
        run_agent(pkg, "scripted", root / f"profile-{k}", passes=1, base_url=server.base_url, concurrency=1,
                  use_cache=False)
        prof.disable()
        k += 1
    for order in ("tottime", "cumulative"):
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats(order).print_stats(top)
        print(f"# profile ({k} runs of one pass, c=1, delay 0, sorted by {order}):\n{buf.getvalue()}", file=sys.stderr)


def cpu_model() -> str:
    try:
        return next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "?"


def filesystem(path: Path) -> str:
    """The type of the filesystem `path` is on (Linux /proc/mounts), as `df -T` names it."""
    try:
        mounts = [line.split()[1:3] for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return "?"
    resolved = str(path.resolve())
    best = max((m for m in mounts if resolved == m[0] or resolved.startswith(m[0].rstrip("/") + "/")),
               key=lambda m: len(m[0]), default=None)
    return best[1] if best else "?"


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, help="a compiled package (else one is built; needs Neo4j)")
    parser.add_argument("--passes", type=int, default=10, help="passes of the zero-delay overhead runs")
    parser.add_argument("--latency-passes", type=int, default=16, help="passes of the high-concurrency latency run")
    parser.add_argument("--delay", type=float, default=0.2, help="seconds the server takes per call (latency case)")
    parser.add_argument("--concurrency", type=int, default=32, help="concurrency of the latency case")
    parser.add_argument("--profile", type=float, default=0.0, metavar="SECONDS",
                        help="also cProfile the c=1 zero-delay loop for about SECONDS (to stderr)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-dummy")
    os.environ.pop("OPENAI_BASE_URL", None)
    from tests.llm_server import LocalLLMServerProcess

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="voe-bench-agents-") as tmp:
        root = Path(tmp)
        machine: dict[str, Any] = {"node": platform.node(), "arch": platform.machine(), "cpu": cpu_model(),
                                   "cores": os.cpu_count(), "python": platform.python_version(),
                                   "run_folders": f"{root.parent} ({filesystem(root)})", "load_before": load_average()}
        print(f"# machine: {machine['node']} {machine['arch']} {machine['cpu']}, cores={machine['cores']}, "
              f"python {machine['python']}; run folders in {machine['run_folders']}; load average "
              f"{machine['load_before']} (1, 5, 15 min)", file=sys.stderr)
        os.environ["VOE_CACHE_DIR"] = str(root / "cache")  # the shared response cache: ours, and empty
        build_s = None
        if args.package is not None:
            pkg = args.package.resolve()
        else:
            t0 = time.perf_counter()
            pkg = build_package(root / "pkg")
            build_s = round(time.perf_counter() - t0, 1)
            print(f"# package built in {build_s} s (ingest + compile)", file=sys.stderr)
        tasks = Tasks(pkg)
        print(f"# package: {pkg} ({len(tasks.views)} tasks); the server in another process", file=sys.stderr)

        with LocalLLMServerProcess(scripted_model, str(pkg), 0.0) as server:
            # every call to the server; these runs also fill the shared cache the warm runs read
            live = []
            for concurrency in (1, 8):
                live.append(measure("overhead", pkg, server, root / f"live-c{concurrency}", passes=args.passes,
                                    concurrency=concurrency, use_cache=False))
                show(live[-1], args.json)
            rows += live
            for concurrency in (1, 8):
                rows.append(measure("overhead", pkg, server, root / f"warm-c{concurrency}", passes=args.passes,
                                    concurrency=concurrency, use_cache=True))
                show(rows[-1], args.json)
            if args.profile > 0:
                profile(pkg, server, root, args.profile)

        with LocalLLMServerProcess(scripted_model, str(pkg), args.delay) as server:
            slow = measure("latency", pkg, server, root / "slow-c1", passes=1, concurrency=1, use_cache=False)
            show(slow, args.json)
            fast = measure("latency", pkg, server, root / f"slow-c{args.concurrency}", passes=args.latency_passes,
                           concurrency=args.concurrency, use_cache=False)
            show(fast, args.json)
        rows += [slow, fast]
        ratio = round(fast["episodes_per_s"] / slow["episodes_per_s"], 1)
        rss = round(peak_rss_mib(), 1)
        machine["load_after"] = load_average()
        best = max(live, key=lambda r: r["episodes_per_s"])
        aims = {"episodes_per_s": {"figure": best["episodes_per_s"], "concurrency": best["concurrency"],
                                   "aim": AIM_EPISODES_PER_S, "met": best["episodes_per_s"] >= AIM_EPISODES_PER_S},
                "speedup": {"figure": ratio, "concurrency": args.concurrency, "delay_s": args.delay,
                            "aim": AIM_SPEEDUP, "met": ratio >= AIM_SPEEDUP}}
        if args.json:
            print(json.dumps({"machine": machine, "tasks": len(tasks.views), "package_build_s": build_s,
                              "delay_s": args.delay, "cases": rows, "latency_speedup": ratio, "aims": aims,
                              "peak_rss_mib": rss}))
        else:
            def verdict(met: bool) -> str:
                return "met" if met else "not met"

            figures = " and ".join(f"{r['episodes_per_s']:.1f} at c={r['concurrency']}" for r in live)
            print(f"instant server, no cache: {figures} episodes/s "
                  f"(aim >= {AIM_EPISODES_PER_S:.0f}: {verdict(aims['episodes_per_s']['met'])})")
            print(f"server taking {args.delay * 1000:.0f} ms a call: c={args.concurrency} is {ratio}x c=1 in "
                  f"episodes/s (aim >= {AIM_SPEEDUP:.0f}x: {verdict(aims['speedup']['met'])})")
            print(f"peak RSS {rss} MiB; load average {machine['load_before']} before, {machine['load_after']} after")


if __name__ == "__main__":
    main()
