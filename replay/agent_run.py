"""`voe run --policy openai:MODEL`: every (pass, task) of a package as one trajectory of the model, with
bounded concurrency, a budget, and resume.

Each finished trajectory is appended at once to RUN/parts/log.jsonl (a line each); the run's files are
assembled from the parts in (pass, task) order when all are done, so they are the same bytes whatever the
concurrency and however often the run was interrupted and resumed. A trajectory cut off mid-way is played
again on resume from the run's own response cache (RUN/responses), so it ends as it would have. Timing
(latency, cached calls) goes to timing.jsonl and run.json's `seconds` only: those are the files that vary.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from voe import collector
from voe.artifacts.package import TaskView, load_package
from voe.artifacts.run import RunInfo, StepRecord, TrajectorySummary, write_run_files, write_run_schemas
from voe.errors import UsageError, VoeError
from voe.jsonl import AppendLog
from voe.llm import (
    Budget,
    BudgetExhausted,
    ChatClient,
    LLMError,
    Price,
    ResponseCache,
    ResponseLog,
    Settings,
    default_cache_dir,
)
from voe.replay.agent import PROMPT_VERSION, Transcript, episode
from voe.replay.env import ReplayEnv
from voe.replay.run_audit import write_audit
from voe.settings import settings as environment

log = logging.getLogger("voe.replay")


class RunPlan(BaseModel):
    """What a run is: written when it starts; `--resume` continues only the same plan."""

    run_id: str
    policy: str
    package: str
    content_hash: str
    passes: int
    seed: int
    settings: Settings
    base_url: str | None
    prompt_version: int = PROMPT_VERSION


class Part(BaseModel):
    index: int
    steps: list[StepRecord]
    summary: TrajectorySummary
    transcript: Transcript


class RunStopped(VoeError):
    """The run stopped before every trajectory finished (budget, API failures); what finished is kept."""


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


PARTS_LOG = "log.jsonl"


def _load_parts(parts: Path, count: int) -> dict[int, Part]:
    """The finished trajectories: the lines of the parts log, after the files of one part each that earlier
    versions wrote."""
    done: dict[int, Part] = {}
    for text in [path.read_text() for path in sorted(parts.glob("*.json"))] + AppendLog(parts / PARTS_LOG).lines():
        try:
            part = Part.model_validate_json(text)
        except ValueError:
            continue  # a part cut short by a kill is played again
        if 0 <= part.index < count:
            done[part.index] = part
    return done


CONTEXT_KEYS = ("n_ctx", "max_model_len", "context_length", "context_window", "max_context_length")


def model_context(described: Any) -> int | None:
    """The context length a server says its model has (llama.cpp's meta.n_ctx, vLLM's max_model_len, others'
    context_length), or None."""
    stack = [described]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in CONTEXT_KEYS:
                value = item.get(key)
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    return value
            stack.extend(v for v in item.values() if isinstance(v, dict))
    return None


def run_agent(pkg: Path, model: str, out: Path, *, passes: int = 1, seed: int = 0, base_url: str | None = None,
              settings: Settings | None = None, concurrency: int = 4, max_requests: int | None = None,
              max_cost: float | None = None, prices: dict[str, Price] | None = None, resume: bool = False,
              use_cache: bool = True, cache_dir: Path | None = None, max_attempts: int = 8,
              timeout: float = 120.0,
              progress: Any = None) -> RunInfo:
    views, evidence, _, manifest = load_package(pkg)
    settings = settings or Settings(model=model)
    policy = f"openai:{model}"
    run_id = f"run:{policy}:{manifest.content_hash[:12]}:s{seed}:p{passes}"
    plan = RunPlan(run_id=run_id, policy=policy, package=str(pkg.resolve()), content_hash=manifest.content_hash,
                   passes=passes, seed=seed, settings=settings, base_url=base_url or environment().openai_base_url)
    out.mkdir(parents=True, exist_ok=True)
    plan_path, parts_dir = out / "run.plan.json", out / "parts"
    if plan_path.exists():
        held = RunPlan.model_validate_json(plan_path.read_text())
        if not resume:
            raise UsageError(f"{out} holds a run already ({held.run_id}); continue it with --resume or choose "
                             "another --out")
        if held.model_dump(exclude={"base_url"}) != plan.model_dump(exclude={"base_url"}):
            raise UsageError(f"{out} holds another run ({held.policy}, {held.settings.model_dump()}); --resume "
                             "continues only the same package, model, settings, passes and seed")
    elif resume and (out / "run.json").exists():
        raise UsageError(f"{out} holds a finished run that is not an agent run; nothing to resume")
    _atomic_write(plan_path, plan.model_dump_json(indent=2) + "\n")
    parts_dir.mkdir(exist_ok=True)
    units = [(p, view) for p in range(passes) for view in views]
    done = _load_parts(parts_dir, len(units))
    started = time.perf_counter()
    budget = Budget(max_requests=max_requests, max_cost=max_cost)
    failures: dict[int, str] = {}
    stop: list[str] = []

    async def main() -> None:
        client = ChatClient(settings, plan.base_url, cache=ResponseCache(cache_dir or default_cache_dir()),
                            run_cache=ResponseLog(out / "responses"), budget=budget, prices=prices or {},
                            timeout=timeout, max_attempts=max_attempts, concurrency=max(1, concurrency))
        gate = asyncio.Semaphore(max(1, concurrency))
        finished = AppendLog(parts_dir / PARTS_LOG)

        async def one(index: int, pass_index: int, view: TaskView) -> None:
            async with gate:
                if stop:
                    return
                env = ReplayEnv(evidence)
                tid = f"{run_id}/{view.task_id}/{pass_index}"
                try:
                    steps, summary, transcript = await episode(client, env, view, tid, pass_index, policy,
                                                               use_cache=use_cache)
                except BudgetExhausted as exc:
                    stop.append(str(exc))
                    return
                except LLMError as exc:
                    failures[index] = f"{view.task_id} pass {pass_index}: {exc}"
                    return
                part = Part(index=index, steps=steps, summary=summary, transcript=transcript)
                finished.append(part.model_dump_json())
                done[index] = part
                if progress is not None:
                    progress(len(done), len(units), client.retries)

        need = int((manifest.counts.get("observations") or {}).get("pull_everything_tokens_max") or 0)
        context = model_context((await client.endpoint_identity()).get("model"))
        if context is not None and need > context:
            log.warning("the model's context (%d tokens, as the server describes it) is smaller than what an episode "
                        "that pulls every item of this package's largest task holds (about %d tokens: the task "
                        "and every page of its items); a model that pulls that much ends context_exhausted",
                        context, need)
        if progress is not None:
            progress(len(done), len(units), 0)  # the total at once: a slow first call reads "0/N", not "0/0"
        try:
            await asyncio.gather(*(one(i, p, v) for i, (p, v) in enumerate(units) if i not in done))
        finally:
            finished.close()
            await client.close()

    with collector.relaxed():  # the finished parts pile up: the collector would traverse them again and again
        asyncio.run(main())
    seconds = round(time.perf_counter() - started, 3)
    if len(done) < len(units):
        why = stop[0] if stop else f"{len(failures)} trajectories failed: " + "; ".join(
            failures[i] for i in sorted(failures)[:3])
        raise RunStopped(f"{why}; {len(done)} of {len(units)} trajectories finished and are kept in {parts_dir}; "
                         "run the same command with --resume to go on")
    ordered = [done[i] for i in range(len(units))]
    write_run_files(out, [s for part in ordered for s in part.steps], [part.summary for part in ordered])
    varying = {"latency_s", "cached_calls", "retries"}  # timing.jsonl's: the transcripts stay the same bytes
    (out / "transcripts.jsonl").write_text("".join(part.transcript.model_dump_json(exclude=varying) + "\n"
                                                   for part in ordered))
    (out / "timing.jsonl").write_text("".join(json.dumps({"trajectory_id": part.summary.trajectory_id,
                                                          "latency_s": part.transcript.latency_s,
                                                          "calls": part.transcript.calls,
                                                          "cached_calls": part.transcript.cached_calls,
                                                          "retries": part.transcript.retries}) + "\n"
                                              for part in ordered))
    tokens_in = sum(p.transcript.tokens_in for p in ordered)
    tokens_out = sum(p.transcript.tokens_out for p in ordered)
    costs = [p.transcript.cost for p in ordered if p.transcript.cost is not None]
    info = RunInfo(run_id=run_id, policy=policy, passes=passes, seed=seed, package=plan.package,
                   content_hash=manifest.content_hash, tasks=len(views), trajectories=len(ordered), seconds=seconds,
                   settings=settings.model_dump(), base_url=plan.base_url, tokens_in=tokens_in, tokens_out=tokens_out,
                   cost=round(sum(costs), 6) if costs else None, calls=sum(p.transcript.calls for p in ordered),
                   prompt_version=PROMPT_VERSION)
    (out / "run.json").write_text(json.dumps(info.model_dump(exclude_none=True), indent=2, sort_keys=True) + "\n")
    write_run_schemas(out)
    write_audit(out, Path(plan.package))
    return info
