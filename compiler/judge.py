"""The judge gate (`voe compile --judge openai:MODEL`): a model scores each candidate that passed the
deterministic filters on the six criteria of DESIGN §7, each with a short reason; a candidate is admitted
only when every criterion passes. The judge never sets an answer: it sees the task and the verifier's view of
it and says whether they fit.

Before it is trusted, the judge is calibrated on the project's fixed cases (compiler/judge_cases.jsonl:
real tasks of the shared archives, accepted as they are, and rejects that each break one criterion). A
judge that misclassifies more than CALIBRATION_TOLERANCE of them is refused: the compile stops (exit 1) and
names the cases.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from voe.artifacts.package import EvidenceObject, TaskAnswer, TaskView
from voe.errors import VoeError
from voe.llm import ChatClient, LLMError

PROMPT_VERSION = 1
CASES = Path(__file__).with_name("judge_cases.jsonl")
CALIBRATION_TOLERANCE = 0.1  # at most this share of the calibration cases may be misclassified

CRITERIA = {
    "matches_decision": "the question asks for the decision the verifier scores (the same subject and packet)",
    "covers_evidence": "the menu offers every item the decision needs (the evidence criterion can be met)",
    "binds_verifier": "the reference answer's payload names items on the menu that the reference pulls",
    "useful_feedback": "requesting the decisive items returns facts that show why (missing or defective evidence "
                       "is visible as such in what the archive holds)",
    "grounded_mechanism": "the question is about this workflow's evidence, not a generic or unrelated ask",
    "separates_hidden": "nothing policy-visible states or hints the answer (no verdict, no action to take)",
}

SYSTEM = ("You are the judge of a benchmark of evidence judgment. For one candidate task you get what the agent "
          "will see (workflow, question, menu) and the verifier's side (the decision, the accepted terminal "
          "action, the items the answer must name, the reference path, and what a request of each menu item "
          "returns). Score the task on each criterion: pass true or false, with a short reason.\nCriteria:\n"
          + "\n".join(f"- {k}: {v}" for k, v in CRITERIA.items())
          + '\nReply with one JSON object: {"criteria": {"<criterion>": {"pass": bool, "reason": str}, ...}} '
            "naming all six.")


class CalibrationFailed(VoeError):
    """The judge misclassified too many of the fixed calibration cases; it is not used."""


class Criterion(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    passed: bool
    reason: str

    @classmethod
    def parse(cls, raw: Any) -> Criterion:
        if not isinstance(raw, dict) or not isinstance(raw.get("pass"), bool):
            raise ValueError("a criterion is an object {pass: bool, reason}")
        return cls(passed=raw["pass"], reason=str(raw.get("reason", "")))


class Verdict(BaseModel):
    criteria: dict[str, Criterion]
    accept: bool
    error: str | None = None  # the judge failed or its reply was not a verdict: not accepted


class CalibrationCase(BaseModel):
    id: str
    expect: Literal["accept", "reject"]
    broken: str | None = None  # the criterion a reject breaks
    note: str
    input: dict[str, Any]


class CalibrationResult(BaseModel):
    model: str
    prompt_version: int
    cases: int
    correct: int
    misclassified: list[str]
    tolerance: float
    passed: bool


def judge_input(view: TaskView, answer: TaskAnswer, evidence: dict[str, EvidenceObject]) -> dict[str, Any]:
    """The task as the judge sees it: policy-visible side and verifier side (by menu entry, with titles)."""
    entry = {e.evidence_id: e.entry_id for e in view.menu}

    def name(e: str) -> str:
        return entry.get(e, f"(not on the menu) {e}")

    return {
        "workflow": view.workflow_title, "question": view.question,
        "menu": [{"entry_id": e.entry_id, "kind": e.kind, "title": e.title} for e in view.menu],
        "verifier": {
            "family": answer.family.value, "accepted_terminal": [c.value for c in answer.accepted_classes],
            "must_name": {k: [name(e) for e in v] for k, v in answer.must_bind.items()},
            "binding": [name(e) for e in answer.binding],
            "reference_path": [{"action": s.action.value, "item": name(s.evidence_id) if s.evidence_id else None,
                                "payload": [name(e) for e in s.payload or []]} for s in answer.reference]},
        "requests_return": {e.entry_id: {"status": evidence[e.evidence_id].status if e.evidence_id in evidence
                                         else "unavailable",
                                         "facts": [f.statement for f in evidence[e.evidence_id].facts][:8]
                                         if e.evidence_id in evidence else []}
                            for e in view.menu},
    }


def load_cases(path: Path = CASES) -> list[CalibrationCase]:
    return [CalibrationCase.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()]


def _parse(content: str) -> Verdict:
    start, end = content.find("{"), content.rfind("}")
    raw = json.loads(content[start:end + 1]) if start >= 0 else None
    crit = raw.get("criteria") if isinstance(raw, dict) else None
    if not isinstance(crit, dict) or set(crit) != set(CRITERIA):
        raise ValueError(f"the verdict must score exactly the criteria {sorted(CRITERIA)}")
    parsed = {k: Criterion.parse(crit[k]) for k in CRITERIA}
    return Verdict(criteria=parsed, accept=all(c.passed for c in parsed.values()))


class Judge:
    def __init__(self, client: ChatClient, concurrency: int = 4) -> None:
        self.client = client
        self.model = client.settings.model
        self.concurrency = concurrency

    async def _one(self, key: str, payload: dict[str, Any]) -> tuple[str, Verdict]:
        messages = [{"role": "system", "content": SYSTEM},
                    {"role": "user", "content": json.dumps(payload, indent=1, sort_keys=True, ensure_ascii=False)}]
        fmt = {"type": "json_object"} if self.client.settings.response_format != "none" else None
        try:
            call = await self.client.complete(messages, response_format=fmt, salt=f"judge|{PROMPT_VERSION}")
        except LLMError as exc:
            return key, Verdict(criteria={}, accept=False, error=f"the judge failed: {exc}")
        content = ((call.response.get("choices") or [{}])[0].get("message") or {}).get("content") or ""
        try:
            return key, _parse(content)
        except (ValueError, ValidationError) as exc:
            return key, Verdict(criteria={}, accept=False, error=f"not a verdict: {str(exc).splitlines()[0][:200]}")

    def judge_all(self, inputs: dict[str, dict[str, Any]], done: Callable[[], None] | None = None) -> dict[str, Verdict]:
        """A verdict per input; `done` is called once per verdict."""
        async def main() -> dict[str, Verdict]:
            gate = asyncio.Semaphore(self.concurrency)

            async def bounded(k: str, v: dict[str, Any]) -> tuple[str, Verdict]:
                async with gate:
                    verdict = await self._one(k, v)
                if done is not None:
                    done()
                return verdict
            try:
                return dict(await asyncio.gather(*(bounded(k, v) for k, v in inputs.items())))
            finally:
                await self.client.close()
        return asyncio.run(main())

    def calibrate(self, cases: list[CalibrationCase] | None = None) -> tuple[CalibrationResult, dict[str, Verdict]]:
        cases = cases if cases is not None else load_cases()
        verdicts = self.judge_all({c.id: c.input for c in cases})
        wrong = [c.id for c in cases if verdicts[c.id].accept != (c.expect == "accept")]
        result = CalibrationResult(model=self.model, prompt_version=PROMPT_VERSION, cases=len(cases),
                                   correct=len(cases) - len(wrong), misclassified=wrong,
                                   tolerance=CALIBRATION_TOLERANCE,
                                   passed=len(wrong) <= CALIBRATION_TOLERANCE * len(cases))
        return result, verdicts
