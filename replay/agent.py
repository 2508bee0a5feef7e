"""An LLM as a policy: the model sees only the policy-visible task (question, menu, actions, horizon) and,
after each request, the observation the replay environment returns; it acts through the seven actions.

Two protocols: `tools` (one function per action, menu entry ids as an enum; a request tool is offered only
when some menu item is asked for with it) and `json` (one JSON object per turn, validated by the environment;
the response-format style is configurable because servers differ). Whatever the model answers is passed to
the environment as it is, so a malformed reply is the environment's `parse_error` and an unknown id its
`off_menu`; nothing the model does crashes the run.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from voe.artifacts.package import REQUESTS, TERMINALS, Action, TaskView
from voe.artifacts.run import StepRecord, TrajectorySummary
from voe.errors import UsageError
from voe.llm import ChatClient, ContextExhausted, LLMError
from voe.replay.env import ReplayEnv

PROMPT_VERSION = 2  # 2: observations paged (the system text says how to read the other pages)

SYSTEM = """You review the evidence behind one decision in an experiment workflow from a published archive.
You are given a question and a menu of evidence items. Requesting an item shows you what the archive really
holds for it (its metadata, the bytes this copy holds, checksum files, lines of documents); nothing else is
known. End the episode with exactly one terminal action:
- flag_source_defect: the payload names the items whose provenance or checkability is defective;
- localize_missing_evidence: the payload names the items the decision needs that the archive does not hold;
- submit_risk_packet: the evidence is sufficient and sound; the payload names the items the decision rests on;
- abstain_or_escalate: the evidence does not resolve the question.
A payload may name only items you requested. Request what you need, not everything: every step counts, and
the episode ends after {horizon} steps. A large item is shown a page at a time: its observation then has a
`page` header (which page, how many, what each holds); request the same item again with `page` set to read
another page, which spends no step."""

TOOLS_NOTE = "Act by calling exactly one tool per turn."
IGNORED = json.dumps({"outcome": "ignored", "note": "one action per turn"})  # the answer to a turn's extra tool calls
JSON_NOTE = ('Reply with one JSON object per turn and nothing else: {"action": ACTION, "evidence_id": ENTRY_ID} '
             'for a request (with "page": N for another page of an item already requested), {"action": ACTION, '
             '"payload": [ENTRY_ID, ...]} for a terminal action. ACTION is one of: '
             + ", ".join(a.value for a in Action) + ".")
PAGE = {"type": "integer", "description": "another page of an item already requested (its "
                                                         "observation's page header says how many)"}

DESCRIPTIONS = {
    Action.REQUEST_CHARACTERIZATION: "Request a characterization item (data, documents) from the menu.",
    Action.REQUEST_CALIBRATION_ARTIFACT: "Request a calibration artifact from the menu.",
    Action.REQUEST_PROCESS_RECORD: "Request a process record (build or machine record) from the menu.",
    Action.FLAG_SOURCE_DEFECT: "End: flag the requested items whose provenance or checkability is defective.",
    Action.LOCALIZE_MISSING_EVIDENCE: "End: name the needed items the archive does not hold.",
    Action.SUBMIT_RISK_PACKET: "End: submit the requested items the decision rests on.",
    Action.ABSTAIN_OR_ESCALATE: "End: the evidence does not resolve the question; escalate.",
}


class Transcript(BaseModel):
    """Everything said in one trajectory: the conversation, each raw response, tokens and cost."""

    trajectory_id: str
    task_id: str
    pass_index: int
    messages: list[dict[str, Any]]
    responses: list[dict[str, Any]] = Field(default_factory=list)
    finish_reasons: list[str | None] = Field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float | None = None
    calls: int = 0
    cached_calls: int = 0
    latency_s: float = 0.0
    retries: int = 0  # tries beyond the first, all calls together (timing.jsonl only: they vary run to run)


def task_text(view: TaskView) -> str:
    lines = [f"Workflow: {view.workflow_title}", f"Question: {view.question}", "", "Menu (entry id, kind, title, "
             "request action):"]
    lines += [f"- {e.entry_id}: [{e.kind}] {e.title} (request with {e.request_action.value})" for e in view.menu]
    lines += ["", f"Actions: {', '.join(a.value for a in view.actions)}", f"Horizon: {view.horizon} steps"]
    return "\n".join(lines)


def system_text(view: TaskView, protocol: str = "tools") -> str:
    return SYSTEM.format(horizon=view.horizon) + "\n" + (TOOLS_NOTE if protocol == "tools" else JSON_NOTE)


def tools_for(view: TaskView) -> list[dict[str, Any]]:
    ids = [e.entry_id for e in view.menu]
    tools = []
    for action in view.actions:
        if action in REQUESTS:
            allowed = [e.entry_id for e in view.menu if e.request_action == action]
            if not allowed:
                continue
            params: dict[str, Any] = {"type": "object", "properties": {"evidence_id": {"type": "string", "enum": allowed},
                                                                       "page": PAGE},
                                      "required": ["evidence_id"], "additionalProperties": False}
        elif action == Action.ABSTAIN_OR_ESCALATE:
            params = {"type": "object", "properties": {}, "additionalProperties": False}
        else:
            params = {"type": "object", "properties": {"payload": {"type": "array", "items": {"type": "string",
                                                                                              "enum": ids}}},
                      "required": ["payload"], "additionalProperties": False}
        tools.append({"type": "function", "function": {"name": action.value, "description": DESCRIPTIONS[action],
                                                       "parameters": params}})
    return tools


def action_schema(view: TaskView) -> dict[str, Any]:
    ids = [e.entry_id for e in view.menu]
    return {"type": "object", "properties": {
        "action": {"type": "string", "enum": [a.value for a in view.actions]},
        "evidence_id": {"type": ["string", "null"], "enum": [*ids, None]},
        "page": {"type": ["integer", "null"]},
        "payload": {"type": ["array", "null"], "items": {"type": "string", "enum": ids}}},
        "required": ["action", "evidence_id", "page", "payload"], "additionalProperties": False}


def response_format(style: str, view: TaskView) -> dict[str, Any] | None:
    if style == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": "action", "strict": True, "schema": action_schema(view)}}
    if style == "json_object":
        return {"type": "json_object"}
    if style == "json_object_schema":  # llama.cpp's server: JSON mode constrained by a schema given beside it
        return {"type": "json_object", "schema": action_schema(view)}
    return None


def observation_text(rec: StepRecord) -> str:
    """What the environment answered, as the model reads it (the observation verbatim)."""
    body: dict[str, Any] = {"outcome": rec.outcome}
    if rec.observation:
        body["observation"] = rec.observation
    elif rec.outcome == "off_menu":
        body["note"] = "not an action on this menu (unknown id, or the wrong request action for it)"
    elif rec.outcome == "parse_error":
        body["note"] = "not an action object"
    elif rec.outcome == "duplicate":
        body["note"] = "already requested"
    return json.dumps(body, sort_keys=True, ensure_ascii=False)


async def episode(client: ChatClient, env: ReplayEnv, view: TaskView, trajectory_id: str, pass_index: int,
                  policy: str, *, use_cache: bool = True) -> tuple[list[StepRecord], TrajectorySummary, Transcript]:
    """One trajectory of the model through the environment. A conversation the endpoint refuses as longer than
    the model's context ends the trajectory `context_exhausted` (scored as such). LLMError and BudgetExhausted
    propagate: the trajectory is then not finished and is not written (a resumed run plays it again, from the
    run's cache)."""
    protocol = client.settings.protocol
    env.reset(view, trajectory_id, policy, pass_index)
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_text(view, protocol)},
                                      {"role": "user", "content": task_text(view)}]
    tools = tools_for(view) if protocol == "tools" else None
    fmt = response_format(client.settings.response_format, view) if protocol == "json" else None
    tr = Transcript(trajectory_id=trajectory_id, task_id=view.task_id, pass_index=pass_index, messages=messages)
    done = False
    while not done:
        try:
            call = await client.complete(messages, tools=tools, response_format=fmt,
                                         salt=f"{PROMPT_VERSION}|{trajectory_id}|{env.t}", use_cache=use_cache)
        except ContextExhausted:
            env.stop("context_exhausted")  # the trajectory's outcome, scored; the run goes on
            break
        except LLMError as exc:
            if protocol == "tools" and "400" in str(exc) and "tool" in str(exc).lower():
                raise UsageError(f"{exc}: the server does not seem to support tool calling; try --protocol json")\
                    from None
            raise
        tr.responses.append(call.response)
        tr.finish_reasons.append(call.finish_reason)
        tr.calls += 1
        tr.cached_calls += int(call.cached)
        tr.retries += max(0, call.attempts - 1)
        tr.tokens_in += call.tokens_in
        tr.tokens_out += call.tokens_out
        tr.latency_s = round(tr.latency_s + call.latency_s, 4)
        if call.cost is not None:
            tr.cost = round((tr.cost or 0.0) + call.cost, 8)
        message = ((call.response.get("choices") or [{}])[0].get("message") or {})
        content = message.get("content")
        tool_calls = message.get("tool_calls") or []
        assistant: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            assistant["tool_calls"] = tool_calls
        messages.append(assistant)
        if protocol == "tools" and tool_calls:
            first = tool_calls[0]
            fn = first.get("function") or {}
            raw: Any = tool_action(str(fn.get("name")), fn.get("arguments"))
            rec, done = env.step(raw)
            messages.append({"role": "tool", "tool_call_id": first.get("id"), "content": observation_text(rec)})
            for extra in tool_calls[1:]:  # one action per turn: the others are answered, not acted on
                messages.append({"role": "tool", "tool_call_id": extra.get("id"),
                                 "content": IGNORED})
        else:
            rec, done = env.step(content if content is not None else "")
            nudge = "" if protocol == "json" else "\n" + TOOLS_NOTE
            messages.append({"role": "user", "content": observation_text(rec) + nudge})
    tr.messages = list(messages)  # the whole conversation (the model copied the list it was given at the start)
    return list(env.steps), env.summary.model_copy(deep=True), tr


def tool_action(name: str, arguments: Any) -> Any:
    """A tool call as the environment's action object; arguments that are not a JSON object stay raw text, so
    the environment records a parse error."""
    try:
        args = json.loads(arguments) if isinstance(arguments, str) and arguments.strip() else {}
    except json.JSONDecodeError:
        return f"{name}({arguments})"
    if not isinstance(args, dict):
        return f"{name}({arguments})"
    action: dict[str, Any] = {"action": name}
    if "evidence_id" in args:
        action["evidence_id"] = args["evidence_id"]
    if args.get("page") is not None:
        action["page"] = args["page"]
    if "payload" in args:
        action["payload"] = args["payload"]
    elif name in {a.value for a in TERMINALS} and name != Action.ABSTAIN_OR_ESCALATE:
        action["payload"] = []
    return action
