"""`voe run`: a policy through the replay environment over every task of a package, N passes.

Writes RUN/steps.jsonl (one line per trajectory step: what the policy sent, the outcome), RUN/observations.jsonl
(what each request showed), RUN/trajectories.jsonl (one summary per trajectory) and RUN/run.json. Only the
reference policy is handed the verifier-only answers.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from voe.artifacts.outdir import resumable_folder, swap_in
from voe.artifacts.package import TaskAnswer, TaskView, load_package
from voe.artifacts.run import (
    RunInfo,
    StepRecord,
    StepWriter,
    TrajectorySummary,
    staged_folder,
    write_run_files,
    write_run_schemas,
)
from voe.errors import UsageError
from voe.jsonl import AppendLog
from voe.replay.env import ReplayEnv
from voe.replay.policies import NO_ANSWER
from voe.replay.registry import Policy, get
from voe.replay.run_audit import write_audit
from voe.replay.sealed import PolicyLimits, PolicyOverrun, SealedPolicy, episode_seed

log = logging.getLogger("voe.replay")

UserPolicy = Callable[[TaskView, list[dict[str, Any]], random.Random], Any]


def python_policy(spec: str) -> Policy:
    """`MODULE:FUNCTION` as a policy. The function is called as `fn(task, history, rng)` with the
    policy-visible TaskView, the list of its own steps so far (each: t, action, evidence_id, payload, outcome,
    observation) and a random.Random seeded per task and pass; it returns an action object
    (`{"action": ..., "evidence_id": ...}` or `{"action": ..., "payload": [...]}`) or its JSON text."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise UsageError(f"--policy python:{spec}: expected python:MODULE:FUNCTION")
    if os.getcwd() not in sys.path:  # as `python -m` does: a module beside the user is found
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any import failure is the user's module, say so
        raise UsageError(f"--policy python:{spec}: cannot import {module_name} ({type(exc).__name__}: {exc})") from exc
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise UsageError(f"--policy python:{spec}: {module_name} has no callable {attr}")
    user: UserPolicy = fn

    def act(view: TaskView, answer: TaskAnswer, history: list[dict[str, Any]], rng: random.Random) -> Any:
        return user(view, [dict(h) for h in history], rng)

    return act


class PolicyPart(BaseModel):
    """One finished trajectory of a `python:` run, as its parts log keeps it (resume reads them back)."""

    index: int
    steps: list[StepRecord]
    summary: TrajectorySummary


class RunPlan(BaseModel):
    """What a resumable run is: `--resume` continues only the same one."""

    run_id: str
    policy: str
    content_hash: str
    passes: int
    seed: int


PARTS = "parts"
PARTS_LOG = "log.jsonl"


def run_policy(pkg: Path, policy: str, passes: int, seed: int, out: Path, policy_fn: Policy | None = None,
               progress: Callable[[int, int], None] | None = None, limits: PolicyLimits | None = None,
               resume: bool = False) -> RunInfo:
    """Run `policy` (a baseline name; or any name with `policy_fn`, e.g. an agent or a scripted test policy).
    A `python:MODULE:FUNCTION` policy runs sealed in its own process (replay/sealed.py) under `limits`; a step past
    one ends its trajectory `policy_timeout` or `policy_budget` and the run goes on. It can run for hours, so its
    trajectories are kept as each finishes (in voe/artifacts/outdir.py's `resumable_folder(out)`, beside `out`,
    swapped in once whole: an earlier run in `out` stays whole until then) and `resume` continues an interrupted run
    (the same package, policy, passes and seed; the seeds per task and pass make the rest what an uninterrupted run
    plays). Other policies run whole in seconds, written aside and swapped in. `progress` (trajectories done,
    trajectories) is called as the run goes."""
    views, evidence, answers, manifest = load_package(pkg)
    sealed: SealedPolicy | None = None
    if policy_fn is None and policy.startswith("python:"):
        sealed = SealedPolicy(policy.removeprefix("python:"), pkg, limits)
    elif policy_fn is None:
        policy_fn = get(policy).act  # a UsageError naming the choices for an unknown name
    if resume and sealed is None:
        raise UsageError("--resume continues a python: or an agent run; other policies run whole in seconds")
    run = _Run(pkg, policy, passes, seed, views, evidence, answers, manifest.content_hash, policy_fn, sealed, progress)
    try:
        if sealed is not None:
            # written beside `out` and swapped in whole, as every run; an interrupt keeps it for --resume
            staging = resumable_folder(out)
            if staging.exists() and not resume:
                raise UsageError(f"an interrupted run of {out} is kept in {staging}: --resume continues it, --force "
                                 "starts over")
            if resume and not staging.exists():
                raise UsageError(f"nothing to resume: no interrupted python: run of {out} is kept beside it")
            info = run.kept(staging, resume)
            swap_in(staging, out)
            return info
        with staged_folder(out) as folder:  # an interrupt leaves no half-written run (and an older one intact)
            return run.whole(folder)
    finally:
        if sealed is not None:
            sealed.close()


class _Run:
    def __init__(self, pkg: Path, policy: str, passes: int, seed: int, views: list[TaskView],
                 evidence: dict[str, Any], answers: dict[str, TaskAnswer], content_hash: str, act: Policy | None,
                 sealed: SealedPolicy | None, progress: Callable[[int, int], None] | None) -> None:
        self.pkg, self.policy, self.passes, self.seed = pkg, policy, passes, seed
        self.views, self.answers, self.content_hash = views, answers, content_hash
        self.act, self.sealed, self.progress = act, sealed, progress
        self.env = ReplayEnv(evidence)
        self.run_id = f"run:{policy}:{content_hash[:12]}:s{seed}:p{passes}"
        self.units = [(p, view) for p in range(passes) for view in views]

    def play(self, p: int, view: TaskView) -> tuple[list[StepRecord], TrajectorySummary]:
        env = self.env
        tid = f"{self.run_id}/{view.task_id}/{p}"
        episode = episode_seed(self.seed, view.task_id, p)
        rng = random.Random(episode)
        env.reset(view, tid, self.policy, p)
        history: list[dict[str, Any]] = []
        done = False
        while not done:
            if self.sealed is not None:
                try:
                    action = self.sealed.act(view, NO_ANSWER, history, rng, episode=tid, seed=episode)
                except PolicyOverrun as exc:
                    log.warning("%s: %s", tid, exc)
                    env.stop(exc.end)  # the trajectory's outcome, scored; a new child plays the next
                    break
            else:
                assert self.act is not None
                # The answer is passed to every policy function, but only `reference` reads it.
                action = self.act(view, self.answers[view.task_id] if self.policy == "reference" else NO_ANSWER,
                                  history, rng)
            rec, done = env.step(action)
            history.append(rec.model_dump(mode="json"))
        return list(env.steps), env.summary.model_copy(deep=True)

    def _tell(self, done: int) -> None:
        if self.progress is not None and (done % 50 == 0 or done == len(self.units)):
            self.progress(done, len(self.units))

    def whole(self, out: Path) -> RunInfo:
        started = time.perf_counter()
        summaries: list[TrajectorySummary] = []
        with StepWriter(out) as steps_out:
            for p, view in self.units:
                steps, summary = self.play(p, view)
                for rec in steps:
                    steps_out.write(rec)
                summaries.append(summary)
                self._tell(len(summaries))
        (out / "trajectories.jsonl").write_text("".join(json.dumps(s.model_dump(), sort_keys=True) + "\n"
                                                        for s in summaries))
        return self._finish(out, time.perf_counter() - started)

    def kept(self, out: Path, resume: bool) -> RunInfo:
        """The run with each finished trajectory appended to RUN/parts/log.jsonl as it ends; the run's files are
        written from them once every trajectory is done (run.json last)."""
        plan = RunPlan(run_id=self.run_id, policy=self.policy, content_hash=self.content_hash, passes=self.passes,
                       seed=self.seed)
        plan_path, parts = out / "run.plan.json", out / PARTS
        if plan_path.exists():
            held = RunPlan.model_validate_json(plan_path.read_text())
            if not resume:
                raise UsageError(f"{out} holds a run already ({held.run_id}); continue it with --resume or choose "
                                 "another --out")
            if held != plan:
                raise UsageError(f"{out} holds another run ({held.run_id}); --resume continues only the same "
                                 "package, policy, passes and seed")
        elif resume and (out / "run.json").exists():
            raise UsageError(f"{out} holds a finished run; nothing to resume")
        out.mkdir(parents=True, exist_ok=True)
        parts.mkdir(exist_ok=True)
        plan_path.write_text(plan.model_dump_json(indent=2) + "\n")
        done: dict[int, PolicyPart] = {}
        for line in AppendLog(parts / PARTS_LOG).lines():
            try:
                part = PolicyPart.model_validate_json(line)
            except ValueError:
                continue  # a line cut short by a kill: that trajectory is played again
            if 0 <= part.index < len(self.units):
                done[part.index] = part
        started = time.perf_counter()
        log_ = AppendLog(parts / PARTS_LOG)
        try:
            for index, (p, view) in enumerate(self.units):
                if index in done:
                    continue
                steps, summary = self.play(p, view)
                part = PolicyPart(index=index, steps=steps, summary=summary)
                log_.append(part.model_dump_json())
                done[index] = part
                self._tell(len(done))
        finally:
            log_.close()
        ordered = [done[i] for i in range(len(self.units))]
        write_run_files(out, [s for part in ordered for s in part.steps], [part.summary for part in ordered])
        return self._finish(out, time.perf_counter() - started)

    def _finish(self, out: Path, seconds: float) -> RunInfo:
        sealed = self.sealed
        info = RunInfo(run_id=self.run_id, policy=self.policy, passes=self.passes, seed=self.seed,
                       package=str(self.pkg.resolve()), content_hash=self.content_hash, tasks=len(self.views),
                       trajectories=len(self.units), seconds=round(seconds, 3),
                       sealing=sealed.sealing if sealed else None,
                       limits=sealed.limits.model_dump() if sealed else None)
        write_run_schemas(out)
        write_audit(out, self.pkg)
        (out / "run.json").write_text(json.dumps(info.model_dump(), indent=2, sort_keys=True) + "\n")
        return info
