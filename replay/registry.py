"""One place for every policy `voe run` can name: a baseline or a shortcut probe registers itself where it is
defined (replay/policies.py, replay/probes.py), and the CLI's choices, `--policy`'s help, the runner and the
release gate all read this registry. `openai:MODEL` (replay/agent_run.py) and `python:MODULE:FUNCTION`
(replay/runner.py) are policy *families* resolved by prefix; they are not registered one by one.

Adding a policy: define `fn(view, answer, history, rng) -> action` in one of those modules (or a new one listed
in MODULES) and call `register("name", fn, kind=..., about=...)` beside it.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from voe.artifacts.package import TaskAnswer, TaskView
from voe.errors import UsageError
from voe.replay.paging import reading_whole

Policy = Callable[[TaskView, TaskAnswer, list[dict[str, Any]], random.Random], dict[str, Any]]
Kind = Literal["reference", "baseline", "probe"]
# how the release gate treats a policy: the reference must be valid on every task; baselines and probes must
# stay at or under the probe limit; a "recorded" probe is reported without a limit
Gate = Literal["all", "limit", "recorded"]
# imported once, so that their policies register
MODULES = ("voe.replay.policies", "voe.replay.probes", "voe.replay.cheap_rules")
PREFIXES = ("openai:", "python:")


@dataclass(frozen=True)
class PolicySpec:
    name: str  # as `--policy` takes it (probes: "probe:NAME")
    act: Policy
    kind: Kind
    about: str
    gate: Gate

    @property
    def short(self) -> str:
        """The name in the gate's table (probes without their `probe:` prefix)."""
        return self.name.removeprefix("probe:")

    @property
    def reads_answer(self) -> bool:
        return self.kind == "reference"


_REGISTRY: dict[str, PolicySpec] = {}


_ORIGINAL: dict[str, Policy] = {}


def register(name: str, act: Policy, *, kind: Kind, about: str, gate: Gate | None = None) -> Policy:
    """`act` under `name`. A probe reads observations: it is registered reading every page of what it pulls
    (replay/paging.py), so it decides on whole observations as it was written to."""
    if name in _ORIGINAL and _ORIGINAL[name] is not act:
        raise ValueError(f"two policies named {name!r}")
    if name.startswith(PREFIXES) or (kind == "probe") != name.startswith("probe:"):
        raise ValueError(f"{name!r}: probes are named probe:NAME, other policies take no prefix")
    _ORIGINAL[name] = act
    _REGISTRY[name] = PolicySpec(name, reading_whole(act) if kind == "probe" else act, kind, about,
                                 gate or ("all" if kind == "reference" else "limit"))
    return act


def _load() -> dict[str, PolicySpec]:
    for module in MODULES:
        importlib.import_module(module)
    return _REGISTRY


KIND_ORDER: tuple[Kind, ...] = ("reference", "baseline", "probe")


def specs(*kinds: Kind) -> list[PolicySpec]:
    """Registered policies of these kinds (all without): the reference, the baselines, the probes, each in the
    order its module registers them, whatever order the modules were imported in (the gate's table is
    written in this order)."""
    ordered = sorted(_load().values(), key=lambda s: KIND_ORDER.index(s.kind))  # stable within a kind
    return [s for s in ordered if not kinds or s.kind in kinds]


def names() -> list[str]:
    return [s.name for s in specs()]


def get(name: str) -> PolicySpec:
    registry = _load()
    if name not in registry:
        raise UsageError(f"unknown policy {name!r}; choose from {', '.join(names())}, openai:MODEL or "
                         "python:MODULE:FUNCTION")
    return registry[name]
