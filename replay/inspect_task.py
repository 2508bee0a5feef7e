"""`inspect eval voe/bench -T package=PKG --model PROVIDER/MODEL`: the replay environment as an Inspect AI task.

Each task of the package is a sample (its id the task id; `-T passes=N` makes N epochs). The model plays it as
voe's own `openai:` agent does (replay/agent.py), so that a model scored through Inspect and through `voe run`
is scored on the same game: the same system prompt and task text, the seven actions as tools with the menu's
entry ids as enums, one action per turn (a turn's extra tool calls are answered `ignored`), a reply without a
tool call passed to the environment as text (its `parse_error`), an unknown id its `off_menu`. The solver runs
that loop itself over Inspect's model API rather than through Inspect's tool execution, because Inspect would
run every call of a turn and reject an id outside the enum before the environment sees it; the conversation in
the log (tool calls and their results) is what the model saw.

The scorer calls voe's verifier (the Python twin of the graph's checks, voe/artifacts/verdict.py) on the
episode's end: `valid` and `cost_score` per sample, and an explanation naming the three checks. The answers are
read by the scorer alone, from the package, when it scores; no sample, message, metadata or store entry carries
them. `voe import-inspect LOG --out RUN` (replay/inspect_import.py) turns the log into a voe run, which the graph
verifies as it verifies any other.

Inspect finds the task through the `inspect_ai` entry point named `voe` (pyproject.toml), which imports this
module.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    get_model,
)
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolInfo, ToolParams
from inspect_ai.util import StoreModel

from voe.artifacts.clusters import lineage
from voe.artifacts.package import EvidenceObject, TaskAnswer, TaskView, load_package
from voe.artifacts.run import StepRecord, TrajectorySummary
from voe.artifacts.verdict import cost_score, verdict
from voe.replay.agent import (
    IGNORED,
    PROMPT_VERSION,
    TOOLS_NOTE,
    observation_text,
    system_text,
    task_text,
    tool_action,
    tools_for,
)
from voe.replay.env import ReplayEnv

TASK_NAME = "voe/bench"


@dataclass(frozen=True)
class Loaded:
    views: dict[str, TaskView]
    order: list[str]
    evidence: dict[str, EvidenceObject]
    answers: dict[str, TaskAnswer]  # the scorer's alone
    content_hash: str
    path: Path


@lru_cache(maxsize=4)
def load(package: str) -> Loaded:
    """The package, read once per process (the task, the solver and the scorer of one eval share it)."""
    views, evidence, answers, manifest = load_package(Path(package))
    return Loaded({v.task_id: v for v in views}, [v.task_id for v in views], evidence, answers,
                  manifest.content_hash, Path(package).resolve())


class Episode(StoreModel):
    """What the scorer needs of an episode, kept in the sample's store (logged with the sample): the
    environment's summary — what was pulled, the terminal and its payload, how it ended."""

    summary: dict[str, Any] | None = None


def tool_infos(view: TaskView) -> list[ToolInfo]:
    """The `openai:` agent's tools (replay/agent.py, `tools_for`) as Inspect's tool descriptions."""
    return [ToolInfo(name=t["function"]["name"], description=t["function"]["description"],
                     parameters=ToolParams.model_validate(t["function"]["parameters"])) for t in tools_for(view)]


def action_of(message: ChatMessageAssistant) -> Any:
    """The environment's action for one model turn, read as the `openai:` agent reads one: the first tool
    call (arguments that did not parse stay text, the environment's `parse_error`), or the turn's text."""
    calls = message.tool_calls or []
    if not calls:
        return message.text
    first = calls[0]
    if first.parse_error is not None:
        return f"{first.function}({first.parse_error})"
    return tool_action(first.function, json.dumps(first.arguments))


def replies(message: ChatMessageAssistant, rec: StepRecord) -> list[ChatMessage]:
    """What the model is told after its turn: the observation as the first call's result (the others
    `ignored`), or, for a turn without a tool call, as a user message with the reminder to call one."""
    calls = message.tool_calls or []
    if not calls:
        return [ChatMessageUser(content=observation_text(rec) + "\n" + TOOLS_NOTE)]
    out: list[ChatMessage] = [ChatMessageTool(content=observation_text(rec), tool_call_id=calls[0].id,
                                              function=calls[0].function)]
    out += [ChatMessageTool(content=IGNORED, tool_call_id=c.id, function=c.function) for c in calls[1:]]
    return out


@solver
def voe_agent(package: str) -> Solver:
    """One episode of the sample's task through the replay environment, until it ends (a terminal action, the
    horizon, three duplicates in a row)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        loaded = load(package)
        view = loaded.views[str(state.sample_id)]
        env = ReplayEnv(loaded.evidence)
        env.reset(view, f"inspect/{view.task_id}/{state.epoch - 1}", "inspect", state.epoch - 1)
        tools = tool_infos(view)
        model = get_model()
        done = False
        while not done:
            output = await model.generate(state.messages, tools=tools)
            state.output = output
            state.messages.append(output.message)
            rec, done = env.step(action_of(output.message))
            state.messages.extend(replies(output.message, rec))
        state.store_as(Episode).summary = env.summary.model_dump(mode="json")
        state.completed = True
        return state

    return solve


# the standard error clustered by workflow lineage (a workflow's tasks share items and decisions; the versions of one
# archive count as one), as voe score clusters; the gold facts that also join tasks are verifier-only, never metadata
@scorer(metrics={"valid": [mean(), stderr(cluster="cluster")], "cost_score": [mean()]})
def verdict_scorer(package: str) -> Scorer:
    """voe's verifier on the episode's end: valid (the three checks of DESIGN §6) and the cost score."""

    async def score(state: TaskState, target: Target) -> Score:
        loaded = load(package)
        view = loaded.views[str(state.sample_id)]
        answer = loaded.answers[view.task_id]
        kept = state.store_as(Episode).summary
        if kept is None:
            return Score(value={"valid": 0.0, "cost_score": 0.0}, answer="", explanation="the episode did not end")
        summary = TrajectorySummary.model_validate(kept)
        action_valid, bound, grounded = verdict(summary.terminal_class, summary.payload, summary.requested, answer)
        valid = action_valid and bound and grounded
        return Score(value={"valid": float(valid),
                            "cost_score": cost_score(valid, summary.requested, answer.useful, view.horizon)},
                     answer=summary.terminal_class or summary.end,
                     explanation=f"ended {summary.end} after {summary.steps} steps; action valid: {action_valid}, "
                                 f"payload bound: {bound}, grounded: {grounded}")

    return score


@task
def bench(package: str, passes: int = 1) -> Task:
    """The package's tasks as samples; `passes` epochs of each."""
    loaded = load(package)
    samples = [Sample(id=t, input=[ChatMessageSystem(content=system_text(loaded.views[t])),
                                   ChatMessageUser(content=task_text(loaded.views[t]))],
                      metadata={"workflow": loaded.views[t].workflow_title, "horizon": loaded.views[t].horizon,
                                "cluster": lineage(loaded.views[t].workflow_id)})
               for t in loaded.order]
    return Task(dataset=MemoryDataset(samples, name=f"voe-{loaded.content_hash[:12]}"), solver=voe_agent(package),
                scorer=verdict_scorer(package), epochs=passes,
                metadata={"voe_package": str(loaded.path), "voe_content_hash": loaded.content_hash,
                          "voe_prompt_version": PROMPT_VERSION})


def _register_under_voe() -> None:
    """Inspect names a task `voe/bench` when its module is installed in site-packages; from an editable
    install it names it `bench`, and `inspect eval voe/bench` would not find it: register that name too."""
    from inspect_ai.util import registry_info

    if "/" not in registry_info(bench).name:
        task(name=TASK_NAME)(bench.__wrapped__)  # type: ignore[attr-defined]


_register_under_voe()
