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

from voe.artifacts.package import TaskAnswer, TaskView, load_package
from voe.artifacts.run import RunInfo, StepWriter, TrajectorySummary, staged_folder, write_run_schemas
from voe.errors import UsageError
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


def run_policy(pkg: Path, policy: str, passes: int, seed: int, out: Path, policy_fn: Policy | None = None,
               progress: Callable[[int, int], None] | None = None, limits: PolicyLimits | None = None) -> RunInfo:
    """Run `policy` (a baseline name; or any name with `policy_fn`, e.g. an agent or a scripted test policy).
    A `python:MODULE:FUNCTION` policy runs sealed in its own process (replay/sealed.py) under `limits`; a step past
    one ends its trajectory `policy_timeout` or `policy_budget` and the run goes on. `progress` (trajectories
    done, trajectories) is called as the run goes."""
    views, evidence, answers, manifest = load_package(pkg)
    sealed: SealedPolicy | None = None
    if policy_fn is None and policy.startswith("python:"):
        sealed = SealedPolicy(policy.removeprefix("python:"), pkg, limits)
    elif policy_fn is None:
        policy_fn = get(policy).act  # a UsageError naming the choices for an unknown name
    try:
        with staged_folder(out) as folder:  # an interrupt leaves no half-written run (and an older one intact)
            return _run(pkg, policy, passes, seed, folder, views, evidence, answers, manifest.content_hash, policy_fn,
                        sealed, progress)
    finally:
        if sealed is not None:
            sealed.close()


def _run(pkg: Path, policy: str, passes: int, seed: int, out: Path, views: list[TaskView],
         evidence: dict[str, Any], answers: dict[str, TaskAnswer], content_hash: str, act: Policy | None,
         sealed: SealedPolicy | None, progress: Callable[[int, int], None] | None) -> RunInfo:
    env = ReplayEnv(evidence)
    run_id = f"run:{policy}:{content_hash[:12]}:s{seed}:p{passes}"
    started = time.perf_counter()
    summaries: list[TrajectorySummary] = []
    with StepWriter(out) as steps_out:
        for p in range(passes):
            for view in views:
                tid = f"{run_id}/{view.task_id}/{p}"
                episode = episode_seed(seed, view.task_id, p)
                rng = random.Random(episode)
                env.reset(view, tid, policy, p)
                history: list[dict[str, Any]] = []
                done = False
                while not done:
                    if sealed is not None:
                        try:
                            action = sealed.act(view, NO_ANSWER, history, rng, episode=tid, seed=episode)
                        except PolicyOverrun as exc:
                            log.warning("%s: %s", tid, exc)
                            env.stop(exc.end)  # the trajectory's outcome, scored; a new child plays the next
                            break
                    else:
                        assert act is not None
                        # The answer is passed to every policy function, but only `reference` reads it.
                        action = act(view, answers[view.task_id] if policy == "reference" else NO_ANSWER, history, rng)
                    rec, done = env.step(action)
                    history.append(rec.model_dump(mode="json"))
                    steps_out.write(rec)
                summaries.append(env.summary.model_copy(deep=True))
                if progress is not None and (len(summaries) % 50 == 0 or len(summaries) == passes * len(views)):
                    progress(len(summaries), passes * len(views))
    (out / "trajectories.jsonl").write_text("".join(json.dumps(s.model_dump(), sort_keys=True) + "\n" for s in summaries))
    info = RunInfo(run_id=run_id, policy=policy, passes=passes, seed=seed, package=str(pkg.resolve()),
                   content_hash=content_hash, tasks=len(views), trajectories=len(summaries),
                   seconds=round(time.perf_counter() - started, 3), sealing=sealed.sealing if sealed else None,
                   limits=sealed.limits.model_dump() if sealed else None)
    (out / "run.json").write_text(json.dumps(info.model_dump(), indent=2, sort_keys=True) + "\n")
    write_run_schemas(out)
    write_audit(out, pkg)
    return info
