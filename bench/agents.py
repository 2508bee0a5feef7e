"""Agent benchmark: the LLM-policy loop (`run_agent`) against the project's own OpenAI-compatible server.

A scripted model on 127.0.0.1 (tests/llm_server.py: LocalLLMServer) follows every task's reference path, so each
figure is the cost of the loop itself: the openai client, HTTP, the response caches, the replay environment
and the run files. Cases:

1. overhead: the server answers at once; episodes/s, calls/s and mean ms per call over --passes passes, at
   concurrency 1 and 8, with every call going to the server (use_cache=False), then again into fresh run
   folders answered from the warm shared response cache (use_cache=True; the server is not called); ms/call
   is wall time over calls, cpu the process CPU time over calls (client, environment and the in-process server:
   steadier than wall time on a shared machine), round trip the mean client-observed call latency;
2. latency: the server answers after --delay seconds per call; episodes/s at concurrency 1 (one pass: it is
   the time per episode that matters) versus --concurrency (--latency-passes passes), and their ratio;
3. the peak RSS of this process (VmHWM).

The package is compiled from the shared archives into an emptied graph (needs Neo4j: NEO4J_URI, e.g.
bolt://127.0.0.1:27687), unless --package names a compiled one. The shared response cache (VOE_CACHE_DIR)
is a temporary folder, removed at the end with the run folders.

    python bench/agents.py [--package PKG] [--passes 10] [--latency-passes 2] [--json] [--profile 5]
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
    return next(e.entry_id for e in view.menu if e.evidence_id == evidence_id)


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


def mean_latency_ms(run: Path) -> float:
    """Mean client-observed round trip of the calls that went to the server (timing.jsonl)."""
    rows = [json.loads(line) for line in (run / "timing.jsonl").read_text().splitlines()]
    live = sum(r["calls"] - r["cached_calls"] for r in rows)
    return 1000 * sum(r["latency_s"] for r in rows) / live if live else 0.0


def measure(case: str, pkg: Path, server: Any, out: Path, *, passes: int, concurrency: int, use_cache: bool) -> dict[str, Any]:
    from voe.replay.agent_run import run_agent

    calls_before = server.calls
    cpu0, t0 = time.process_time(), time.perf_counter()
    info = run_agent(pkg, "scripted", out, passes=passes, base_url=server.base_url, concurrency=concurrency,
                     use_cache=use_cache)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return {"case": case, "concurrency": concurrency, "use_cache": use_cache, "passes": passes,
            "episodes": info.trajectories, "calls": info.calls, "server_calls": server.calls - calls_before,
            "seconds": round(wall, 3), "episodes_per_s": round(info.trajectories / wall, 1),
            "calls_per_s": round(info.calls / wall, 1), "ms_per_call": round(1000 * wall / info.calls, 3),
            "cpu_ms_per_call": round(1000 * cpu / info.calls, 3), "round_trip_ms": round(mean_latency_ms(out), 3),
            "peak_rss_mib": round(peak_rss_mib(), 1)}


def show(row: dict[str, Any], as_json: bool) -> None:
    """One line per case: to stdout, or to stderr (as progress) when stdout carries the JSON object."""
    cache = "warm cache" if row["use_cache"] else "no cache"
    print(f"{row['case']:>8} c={row['concurrency']:<3} {cache:>10}: {row['episodes']:>4} episodes, {row['calls']:>5} calls "
          f"({row['server_calls']:>5} to the server) in {row['seconds']:>7.2f} s: {row['episodes_per_s']:>7.1f} "
          f"episodes/s, {row['calls_per_s']:>7.1f} calls/s, {row['ms_per_call']:>7.3f} ms/call "
          f"(cpu {row['cpu_ms_per_call']:.3f} ms, round trip {row['round_trip_ms']:.3f} ms)",
          file=sys.stderr if as_json else sys.stdout, flush=True)


def profile(pkg: Path, server: Any, root: Path, seconds: float, top: int = 30) -> None:
    """cProfile of the concurrency-1 zero-delay loop for about `seconds`, to stderr. Only the event-loop
    thread is profiled: the server's handler threads show up as time waiting in the selector."""
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, help="a compiled package (else one is built; needs Neo4j)")
    parser.add_argument("--passes", type=int, default=10, help="passes of the zero-delay overhead runs")
    parser.add_argument("--latency-passes", type=int, default=2, help="passes of the high-concurrency latency run")
    parser.add_argument("--delay", type=float, default=0.2, help="seconds the server takes per call (latency case)")
    parser.add_argument("--concurrency", type=int, default=32, help="concurrency of the latency case")
    parser.add_argument("--profile", type=float, default=0.0, metavar="SECONDS",
                        help="also cProfile the c=1 zero-delay loop for about SECONDS (to stderr)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-dummy")
    os.environ.pop("OPENAI_BASE_URL", None)
    from tests.llm_server import LocalLLMServer

    machine = {"node": platform.node(), "arch": platform.machine(), "cores": os.cpu_count(),
               "python": platform.python_version()}
    print(f"# machine: {machine['node']} {machine['arch']} cores={machine['cores']} python={machine['python']}",
          file=sys.stderr)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="voe-bench-agents-") as tmp:
        root = Path(tmp)
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
        print(f"# package: {pkg} ({len(tasks.views)} tasks)", file=sys.stderr)

        with LocalLLMServer(model(tasks)) as server:
            # every call to the server; these runs also fill the shared cache the warm runs read
            for concurrency in (1, 8):
                rows.append(measure("overhead", pkg, server, root / f"live-c{concurrency}", passes=args.passes,
                                    concurrency=concurrency, use_cache=False))
                show(rows[-1], args.json)
            for concurrency in (1, 8):
                rows.append(measure("overhead", pkg, server, root / f"warm-c{concurrency}", passes=args.passes,
                                    concurrency=concurrency, use_cache=True))
                show(rows[-1], args.json)
            if args.profile > 0:
                profile(pkg, server, root, args.profile)

        with LocalLLMServer(model(tasks, args.delay)) as server:
            slow = measure("latency", pkg, server, root / "slow-c1", passes=1, concurrency=1, use_cache=False)
            show(slow, args.json)
            fast = measure("latency", pkg, server, root / f"slow-c{args.concurrency}", passes=args.latency_passes,
                           concurrency=args.concurrency, use_cache=False)
            show(fast, args.json)
        rows += [slow, fast]
        ratio = round(fast["episodes_per_s"] / slow["episodes_per_s"], 1)
        rss = round(peak_rss_mib(), 1)
        if args.json:
            print(json.dumps({"machine": machine, "tasks": len(tasks.views), "package_build_s": build_s,
                              "delay_s": args.delay, "cases": rows,
                              "latency_speedup": ratio, "peak_rss_mib": rss}))
        else:
            print(f"latency {args.delay * 1000:.0f} ms/call: c={args.concurrency} is {ratio}x c=1 in episodes/s "
                  f"(aim >= 20x); peak RSS {rss} MiB")


if __name__ == "__main__":
    main()
