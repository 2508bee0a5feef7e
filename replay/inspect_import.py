"""`voe import-inspect LOG --out RUN`: an Inspect log of `voe/bench` (replay/inspect_task.py) as a voe run.

The log is not trusted to say what the environment answered: each sample's conversation is played again through
the package's `ReplayEnv`, turn by turn with the rule the solver used (`action_of`), and every answer the log
recorded must be the one the environment gives now; a log of another package, or one edited after the fact, is
refused with the sample and step named. The run holds what any run holds (run.json, steps.jsonl,
observations.jsonl, trajectories.jsonl, schema/), trajectories in the order `voe run` writes them (pass by pass,
tasks in package order); `voe score` then verifies it in the graph. A sample that did not finish an episode
(an error, a limit) is left out and counted. Nothing of the model's configuration is copied (an API key given as
a model argument stays in the log); the same log always gives the same files but for run.json's `seconds`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voe.artifacts.package import load_package
from voe.artifacts.run import RunInfo, StepRecord, TrajectorySummary, staged_folder, write_run_files, write_run_schemas
from voe.errors import EmptyRun, UsageError
from voe.replay.agent import observation_text
from voe.replay.env import ReplayEnv
from voe.replay.run_audit import write_audit


@dataclass(frozen=True)
class Imported:
    info: RunInfo
    skipped: dict[str, str]  # "task_id/pass" -> why it is not in the run


def import_log(log_path: Path, out: Path, package: Path | None = None) -> Imported:
    from inspect_ai.log import read_eval_log
    from inspect_ai.model import ChatMessageAssistant

    from voe.replay.inspect_task import TASK_NAME, action_of

    if not log_path.is_file():
        raise UsageError(f"{log_path}: no such log file")
    try:
        log = read_eval_log(str(log_path))
    except Exception as exc:  # noqa: BLE001 - any reader failure means this is not a log we can read
        raise UsageError(f"{log_path}: not an Inspect log ({type(exc).__name__}: {exc})") from None
    meta = log.eval.metadata or {}
    if "voe_content_hash" not in meta:
        raise UsageError(f"{log_path}: a log of task {log.eval.task!r}, not of {TASK_NAME}")
    pkg = package if package is not None else Path(str(meta.get("voe_package", "")))
    views, evidence, _, manifest = load_package(pkg)
    if manifest.content_hash != meta["voe_content_hash"]:
        raise UsageError(f"{log_path}: played on package {str(meta['voe_content_hash'])[:12]}, but {pkg} is "
                         f"{manifest.content_hash[:12]}; name the package it was played on with --package")
    by_id = {v.task_id: v for v in views}
    order = {v.task_id: i for i, v in enumerate(views)}
    run_id = f"run:inspect:{manifest.content_hash[:12]}:{log.eval.run_id}"
    policy = f"inspect:{log.eval.model}"
    env = ReplayEnv(evidence)
    steps: list[StepRecord] = []
    summaries: list[TrajectorySummary] = []
    skipped: dict[str, str] = {}
    tokens_in = tokens_out = calls = 0
    samples = sorted(log.samples or [], key=lambda s: (s.epoch, order.get(str(s.id), len(order)), str(s.id)))
    for sample in samples:
        task_id, pass_index = str(sample.id), sample.epoch - 1
        where = f"{task_id}/{pass_index}"
        view = by_id.get(task_id)
        if view is None:
            raise UsageError(f"{log_path}: sample {task_id!r} is no task of {pkg}")
        env.reset(view, f"{run_id}/{task_id}/{pass_index}", policy, pass_index)
        messages = sample.messages
        done = False
        for i, message in enumerate(messages):
            if done or not isinstance(message, ChatMessageAssistant):
                continue
            rec, done = env.step(action_of(message))
            told = _told(messages[i + 1:], message)
            if told is not None and told != observation_text(rec):
                raise UsageError(f"{log_path}: sample {where}, step {rec.t}: the log's answer is not what {pkg} "
                                 "shows for that action (another package, or an edited log)")
        if not done:
            skipped[where] = sample.error.message.splitlines()[0] if sample.error else "the episode did not end"
            continue
        steps += env.steps
        summaries.append(env.summary.model_copy(deep=True))
        calls += sum(isinstance(m, ChatMessageAssistant) for m in messages)
        for usage in (sample.model_usage or {}).values():
            # providers report cached prompt tokens apart from input_tokens: what the model read is their sum
            tokens_in += usage.input_tokens + (usage.input_tokens_cache_read or 0) + (usage.input_tokens_cache_write or 0)
            tokens_out += usage.output_tokens
    if not summaries:
        first = next(iter(skipped.items()), None)
        why = f"{len(skipped)} sample(s), none ended an episode (first: {first[0]}: {first[1]})" if first \
            else "the log holds no sample"
        raise EmptyRun(f"{log_path}: nothing to import: {why}; no run was written")
    inspect: dict[str, Any] = {"task": log.eval.task, "eval_id": log.eval.eval_id, "log": log_path.name,
                               "version": log.eval.packages.get("inspect_ai"), "skipped": len(skipped)}
    info = RunInfo(run_id=run_id, policy=policy, passes=log.eval.config.epochs or 1, seed=0,
                   package=str(pkg.resolve()), content_hash=manifest.content_hash, tasks=len(views),
                   trajectories=len(summaries), seconds=_wall(log.stats.started_at, log.stats.completed_at),
                   settings={"surface": "inspect", "model": log.eval.model, "inspect": inspect},
                   tokens_in=tokens_in, tokens_out=tokens_out, calls=calls,
                   prompt_version=int(meta.get("voe_prompt_version", 0)) or None)
    with staged_folder(out) as folder:  # an older run in `out` stays whole until the new one is
        write_run_files(folder, steps, summaries)
        (folder / "run.json").write_text(json.dumps(info.model_dump(), indent=2, sort_keys=True) + "\n")
        write_run_schemas(folder)
        write_audit(folder, pkg)
    return Imported(info, skipped)


def _wall(started: str, completed: str) -> float:
    """The eval's wall time, as a run's `seconds` is (samples run concurrently: their times do not add)."""
    from datetime import datetime

    try:
        return round((datetime.fromisoformat(completed) - datetime.fromisoformat(started)).total_seconds(), 3)
    except ValueError:
        return 0.0


def _told(after: list[Any], turn: Any) -> str | None:
    """The answer the log recorded for `turn`: its first tool call's result, or the observation of the user
    message that follows a turn without one (its first line: the reminder to call a tool follows it)."""
    from inspect_ai.model import ChatMessageTool, ChatMessageUser

    calls = turn.tool_calls or []
    for message in after:
        if calls and isinstance(message, ChatMessageTool) and message.tool_call_id == calls[0].id:
            return str(message.text)
        if not calls and isinstance(message, ChatMessageUser):
            return str(message.text).split("\n", 1)[0]
        if not isinstance(message, (ChatMessageTool, ChatMessageUser)):
            return None
    return None
