"""Framing a decision moment: the deterministic template, or a model (`voe compile --annotator openai:MODEL`)
that writes the title, the decision context and the question and picks the menu's distractors from a
supplied pool. A model never sets an outcome, a gold label, the reference answer or anything else a policy
could use as a shortcut: the compiler's moment (family, binding, reference path) stays what the graph says,
and every model framing passes the deterministic filters below before any judge sees it.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from voe.artifacts.package import REQUEST_FOR_KIND, Action, Family, TaskAnswer, TaskView
from voe.ingest.rules.defects import DefectKind
from voe.llm import ChatClient, LLMError

PROMPT_VERSION = 1
TEMPLATE = "deterministic template (compiler/moments.py QUESTION)"


class Framing(BaseModel):
    """What an annotator returns for one moment."""

    model_config = ConfigDict(extra="forbid")
    title: str
    context: str
    question: str
    menu: list[str]  # evidence ids, chosen from the pool; the binding items must be among them


@dataclass
class Candidate:
    """A moment as an annotator may see it: only what a policy could see of it, plus the pool."""

    moment_id: str
    workflow: str
    subject: str
    support: list[str]
    binding: list[str]
    pool: list[str]  # binding first, then the distractor candidates in the compiler's order
    default_menu: list[str]
    template: Framing
    context: dict[str, Any]


SYSTEM = """You write the framing of one decision task for a benchmark of evidence judgment. A reviewer
(the agent) will see your title, context and question, and a menu of evidence items; it can request items
to see what the archive holds for them, and must then decide whether a risk packet on the subject item can
be assembled. You are given the workflow, the subject item, the items the packet is to rest on, and a pool of
other items of the same workflow with what the archive states about each.

Rules:
- Describe the situation and ask the question neutrally. Never say or hint whether anything is wrong, absent,
  sufficient or defective, and never name an action the reviewer should take.
- The menu: every required item, plus 2 to 5 items of your choice from the pool (ids exactly as given).
Reply with one JSON object: {"title": str, "context": str, "question": str, "menu": [id, ...]}."""


def framing_schema() -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": ["title", "context", "question", "menu"],
            "properties": {"title": {"type": "string"}, "context": {"type": "string"}, "question": {"type": "string"},
                           "menu": {"type": "array", "items": {"type": "string"}}}}


def request_messages(c: Candidate) -> list[dict[str, Any]]:
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": json.dumps(c.context, indent=1, sort_keys=True, ensure_ascii=False)}]


class Annotator:
    """The deterministic template: today's framing and menu, offline."""

    name = TEMPLATE
    model: str | None = None

    def annotate(self, candidates: list[Candidate], done: Callable[[], None] | None = None) -> dict[str, Framing | str]:
        """A framing per moment (or the reason there is none); `done` is called once per moment framed."""
        for _ in candidates:
            if done is not None:
                done()
        return {c.moment_id: c.template for c in candidates}


class LLMAnnotator(Annotator):
    """A model through any OpenAI-compatible endpoint; answers are cached by model, prompt version and input
    (voe/llm.py), so compiling again costs nothing and gives the same bytes."""

    def __init__(self, client: ChatClient, concurrency: int = 4) -> None:
        self.client = client
        self.model = client.settings.model
        self.name = f"openai:{self.model} (prompt v{PROMPT_VERSION})"
        self.concurrency = concurrency

    def settings_json(self) -> str:
        return self.client.settings.model_dump_json()

    def annotate(self, candidates: list[Candidate], done: Callable[[], None] | None = None) -> dict[str, Framing | str]:
        """A framing per moment, or the reason there is none (the endpoint failed, or the reply is not a
        framing): such a moment is rejected with rule `annotation.invalid`."""
        async def main() -> dict[str, Framing | str]:
            gate = asyncio.Semaphore(self.concurrency)

            async def one(c: Candidate) -> tuple[str, Framing | str]:
                framed = await frame(c)
                if done is not None:
                    done()
                return framed

            async def frame(c: Candidate) -> tuple[str, Framing | str]:
                async with gate:
                    fmt = _format(self.client.settings.response_format)
                    try:
                        call = await self.client.complete(request_messages(c), response_format=fmt,
                                                          salt=f"annotator|{PROMPT_VERSION}")
                    except LLMError as exc:
                        return c.moment_id, f"the annotator failed: {exc}"
                content = ((call.response.get("choices") or [{}])[0].get("message") or {}).get("content") or ""
                try:
                    return c.moment_id, Framing.model_validate_json(_json_text(content))
                except ValidationError as exc:
                    return c.moment_id, f"the reply is not a framing: {str(exc).splitlines()[0]}"
            try:
                return dict(await asyncio.gather(*(one(c) for c in candidates)))
            finally:
                await self.client.close()
        return asyncio.run(main())


def _format(style: str) -> dict[str, Any] | None:
    if style == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": "framing", "strict": True, "schema": framing_schema()}}
    if style == "json_object":
        return {"type": "json_object"}
    if style == "json_object_schema":
        return {"type": "json_object", "schema": framing_schema()}
    return None


def _json_text(content: str) -> str:
    """The JSON object of a reply that may wrap it in a code fence."""
    m = re.search(r"\{.*\}", content, re.S)
    return m.group(0) if m else content


# ------------------------------------------------------------------------------------------- deterministic filters
VERDICT_WORDS = ("corrupt", "corrupted", "missing", "invalid checksum", "invalid", "defect", "defective",
                 "mismatch", "mismatched", "broken", "tampered", "not held", "absent", "wrong", "mislabeled",
                 "mislabelled", "incorrect", "inconsistent", "fails", "failed", "unavailable", "insufficient",
                 "incomplete")
VERIFIER_FIELDS = ("binding", "must bind", "may bind", "accepted classes", "reference class", "reference payload",
                   "reference path", "moment id", "source facts", "gold", "verifier")


def normalise(text: str) -> str:
    return " " + re.sub(r"[^a-z0-9]+", " ", text.lower()).strip() + " "


def _has(text: str, phrase: str) -> bool:
    return normalise(phrase) in text


def menu_failures(framing: Framing, c: Candidate, known: set[str]) -> list[str]:
    """The menu checks, which need no task: items from the pool only, refs that exist, the binding on it."""
    out: list[str] = []
    if outside := [e for e in framing.menu if e not in c.pool]:
        out.append(f"menu.outside_pool: {outside[:3]}")
    if unknown := [e for e in framing.menu if e not in known]:
        out.append(f"menu.unknown_ref: {unknown[:3]}")
    if absent := [e for e in c.binding if e not in framing.menu]:
        out.append(f"menu.binding_missing: {absent[:3]}")
    return out


def filter_failures(framing: Framing, c: Candidate, view: TaskView, answer: TaskAnswer, known: set[str],
                    defect_ids: set[str], reference_path: Callable[[TaskView, TaskAnswer], str | None]) -> list[str]:
    """Each failure as `rule: detail`; empty means the framing may go to the judge (or be admitted).
    `reference_path` (compiler/admission.py) says why the reference does not play on the framed menu."""
    out = menu_failures(framing, c, known)
    text = normalise(" ".join([framing.title, framing.context, framing.question]))
    raw = " ".join([framing.title, framing.context, framing.question])
    if fields := [f for f in VERIFIER_FIELDS if _has(text, f)] + [v for v in {answer.moment_id, *defect_ids} if v in raw]:
        out.append(f"framing.verifier_field: {fields[:3]}")
    artifacts = [f.value for f in Family if _has(text, f.value)] + [k.value for k in DefectKind if _has(text, k.value)]
    artifacts += [w for w in VERDICT_WORDS if _has(text, w)]
    artifacts += [a.value for a in Action if a not in REQUEST_FOR_KIND.values() and _has(text, a.value)]
    if artifacts:
        out.append(f"framing.answer_artifact: {sorted(set(artifacts))[:4]}")
    if not out and (why := reference_path(view, answer)):
        out.append(f"replay.reference_path: {why}")
    return out


