"""Training sets from a package and its runs (DESIGN §10, `voe export-training`): chat lines to imitate, preference
pairs at one state, and value rows, each split by workflow so that no workflow is in two splits.

- `sft`: one line per trajectory worth imitating — the reference's, and every valid trajectory of the runs whose
  steps were all actions on the menu (no parse error, off-menu or duplicate step) — as the chat an `openai:`
  policy of the `json` protocol sees (replay/agent.py's system prompt, task text and observations, entry ids in
  the actions): `messages`, the assistant turns being the actions to learn.
- `preference`: for each step of a run that lost value (labels: Q(s, a) < V(s)), the conversation up to that step
  as `prompt`, an optimal action at that state as `chosen` and the action taken as `rejected`, with both values.
- `value`: (state, action, value) rows for every state of every task the labels enumerate: each request of an
  item not pulled and each terminal class (with the payload of its must-bind items pulled so far); `value` is
  Q(s, a) - V(s), 0 for an optimal action.

Only policy-visible content goes into prompts (the task view, observations of evidence.jsonl); the targets are
the verifier's labels (verifiers/labels.py). Splits: a workflow goes to `train`, `validation` or `test` by the
first byte of sha256(workflow id) (80/10/10). Each format has a JSON Schema (schema/<format>.schema.json, with
the training version) and the folder a dataset card (README.md, Hugging Face's YAML header naming each format's
files, so `datasets.load_dataset(DIR, FORMAT)` reads it).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from voe.artifacts.clusters import lineage
from voe.artifacts.package import REQUESTS, Action, EvidenceObject, TaskAnswer, TaskView, load_package
from voe.artifacts.run import StepRecord, read_run_info, read_steps
from voe.errors import InputError, UsageError
from voe.jsonl import read_jsonl
from voe.replay.agent import JSON_NOTE, SYSTEM, observation_text, task_text
from voe.replay.env import ReplayEnv
from voe.verifiers.labels import StepLabel, TaskLabels, read_run_steps
from voe.versions import TRAINING_SCHEMA_VERSION, write_schemas

Format = Literal["sft", "preference", "value"]
FORMATS: tuple[Format, ...] = ("sft", "preference", "value")
SPLITS = ("train", "validation", "test")
PLUMBING = ("parse_error", "off_menu", "duplicate")


def split_of(workflow_id: str) -> str:
    """train, validation or test, by workflow (80/10/10 on the first byte of its sha256); the versions of one
    archive are one workflow here (voe/artifacts/clusters.py `lineage`), so no version of it is in another split."""
    byte = hashlib.sha256(lineage(workflow_id).encode()).digest()[0]
    return "train" if byte < 205 else "validation" if byte < 230 else "test"


class Message(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: str


class SFTRow(BaseModel):
    task_id: str
    workflow_id: str
    source: str  # "reference", or the run id the trajectory comes from (the first, when merged)
    trajectory_id: str  # the first trajectory of the conversation
    messages: list[Message]
    count: int = 1  # trajectories that are this same conversation (identical rows are merged, never repeated)
    sources: list[str] = []  # every source of those trajectories, in order


class PreferenceRow(BaseModel):
    task_id: str
    workflow_id: str
    source: str
    trajectory_id: str
    t: int
    state: list[str]  # entry ids pulled before the step
    prompt: list[Message]
    chosen: list[Message]
    rejected: list[Message]
    chosen_value: float
    rejected_value: float
    count: int = 1  # steps of the runs that are this same pair at this same state
    sources: list[str] = []


class ValueRow(BaseModel):
    task_id: str
    workflow_id: str
    state: list[str]  # entry ids pulled
    left: int  # requests still possible
    sufficient: bool
    cost_to_go: int | None
    action: dict[str, Any]  # as the json protocol writes it: action, evidence_id or payload (entry ids)
    value: float  # Q(s, a) - V(s)


MODELS: dict[Format, type[BaseModel]] = {"sft": SFTRow, "preference": PreferenceRow, "value": ValueRow}


class TrainingInfo(BaseModel):
    schema_version: int = TRAINING_SCHEMA_VERSION
    package: str
    content_hash: str
    runs: list[dict[str, Any]]
    formats: list[str]
    counts: dict[str, dict[str, int]]  # format -> split -> rows (identical rows merged)
    merged: dict[str, int] = {}  # format -> rows merged into another (the count on the row kept)
    workflows: dict[str, list[str]]  # split -> workflow ids
    warnings: list[str] = []  # what a trainer should know (an empty split)


class _Task:
    """A task's view, answer, labels and the id maps the json protocol writes with."""

    def __init__(self, view: TaskView, answer: TaskAnswer) -> None:
        self.view, self.answer = view, answer
        self.labels = TaskLabels(view, answer)
        self.entry = {e.evidence_id: e.entry_id for e in view.menu}
        self.request = {e.evidence_id: e.request_action.value for e in view.menu}

    def entries(self, ids: Iterable[str]) -> list[str]:
        return sorted(self.entry.get(i, i) for i in ids)

    def action(self, action: str, evidence_id: str | None = None, payload: Sequence[str] | None = None
               ) -> dict[str, Any]:
        if action in {a.value for a in REQUESTS}:
            return {"action": action, "evidence_id": self.entry.get(evidence_id or "", evidence_id)}
        if action == Action.ABSTAIN_OR_ESCALATE.value:
            return {"action": action, "payload": []}
        return {"action": action, "payload": self.entries(payload or [])}

    def opening(self) -> list[Message]:
        return [Message(role="system", content=SYSTEM.format(horizon=self.view.horizon) + "\n" + JSON_NOTE),
                Message(role="user", content=task_text(self.view))]


def _said(action: dict[str, Any]) -> Message:
    return Message(role="assistant", content=json.dumps(action, sort_keys=True, ensure_ascii=False))


def _conversation(task: _Task, steps: Sequence[StepRecord]) -> list[list[Message]]:
    """The conversation before each step (index t) and, last, the whole of it."""
    messages = task.opening()
    before: list[list[Message]] = []
    for rec in steps:
        before.append(list(messages))
        messages.append(_said(_step_action(task, rec)))
        if rec.outcome != "terminal":
            messages.append(Message(role="user", content=observation_text(rec)))
    before.append(messages)
    return before


def _step_action(task: _Task, rec: StepRecord) -> dict[str, Any]:
    if rec.action is None:  # unparseable: what was sent, as text
        return {"raw": rec.raw if isinstance(rec.raw, str) else json.dumps(rec.raw, sort_keys=True)}
    return task.action(rec.action, rec.evidence_id, rec.payload)


def _reference_steps(task: _Task, evidence: dict[str, EvidenceObject]) -> list[StepRecord]:
    env = ReplayEnv(evidence)
    env.reset(task.view, f"reference:{task.view.task_id}", "reference")
    for step in task.answer.reference:
        if step.evidence_id is not None:
            raw: dict[str, Any] = {"action": step.action.value, "evidence_id": task.entry[step.evidence_id]}
        else:
            raw = {"action": step.action.value, "payload": task.entries(step.payload or [])}
        _, done = env.step(raw)
        if done:
            break
    return list(env.steps)


def export_training(pkg: Path, runs: Sequence[Path], out: Path, formats: Sequence[str] = FORMATS) -> TrainingInfo:
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise UsageError(f"unknown training format {unknown[0]!r}; choose from {', '.join(FORMATS)}")
    chosen = [f for f in FORMATS if f in formats]
    views, evidence, answers, manifest = load_package(pkg)
    tasks = {v.task_id: _Task(v, answers[v.task_id]) for v in views}
    rows: dict[str, dict[str, list[BaseModel]]] = {f: defaultdict(list) for f in chosen}
    run_infos: list[dict[str, Any]] = []

    def add(fmt: Format, task: _Task, row: BaseModel) -> None:
        if fmt in rows:
            rows[fmt][split_of(task.view.workflow_id)].append(row)

    for task in tasks.values():
        steps = _reference_steps(task, evidence)
        add("sft", task, SFTRow(task_id=task.view.task_id, workflow_id=task.view.workflow_id, source="reference",
                                trajectory_id=f"reference:{task.view.task_id}",
                                messages=_conversation(task, steps)[-1]))
    for run in runs:
        info = read_run_info(run, manifest.content_hash)
        by_trajectory = read_run_steps(run, manifest.content_hash)
        records: dict[str, list[StepRecord]] = defaultdict(list)
        for rec in read_steps(run):
            records[rec.trajectory_id].append(rec)
        run_infos.append({"run_id": info.run_id, "policy": info.policy,
                          "trajectories": len(by_trajectory)})
        for trajectory_id, lines in by_trajectory.items():
            task = tasks[lines[0].task_id]
            recs = sorted(records[trajectory_id], key=lambda r: r.t)
            labels = task.labels.steps(lines)
            conversation = _conversation(task, recs)
            terminal = next((lab for lab in labels if lab.outcome == "terminal"), None)
            if terminal is not None and terminal.valid and not any(r.outcome in PLUMBING for r in recs):
                add("sft", task, SFTRow(task_id=task.view.task_id, workflow_id=task.view.workflow_id,
                                        source=info.run_id, trajectory_id=trajectory_id,
                                        messages=conversation[-1]))
            for rec, lab in zip(recs, labels, strict=True):
                if lab.value < 0:
                    add("preference", task, _preference(task, rec, lab, conversation[rec.t],
                                                        info.run_id))
    if "value" in rows:
        for task in tasks.values():
            for row in _value_rows(task):
                add("value", task, row)
    return _write(pkg, out, manifest.content_hash, run_infos, chosen, rows, tasks)


def _preference(task: _Task, rec: StepRecord, lab: StepLabel, prompt: list[Message], source: str) -> PreferenceRow:
    state = task.labels.state(task.labels.mask(lab.state), lab.left)
    best = state.optimal_actions[0]  # requests in menu order, then terminals: the same choice every time
    chosen = task.action(best.action, best.evidence_id, best.payload)
    return PreferenceRow(task_id=task.view.task_id, workflow_id=task.view.workflow_id, source=source,
                         trajectory_id=rec.trajectory_id, t=rec.t, state=task.entries(lab.state), prompt=prompt,
                         chosen=[_said(chosen)], rejected=[_said(_step_action(task, rec))], chosen_value=0.0,
                         rejected_value=lab.value)


def _value_rows(task: _Task) -> list[ValueRow]:
    labels = task.labels
    out: list[ValueRow] = []
    for state in labels.all_states():
        mask = labels.mask(state.state)
        base: dict[str, Any] = {"task_id": task.view.task_id, "workflow_id": task.view.workflow_id,
                "state": task.entries(state.state), "left": state.left, "sufficient": state.sufficient,
                "cost_to_go": state.cost_to_go}
        for item in state.items:
            out.append(ValueRow(**base, action=task.action(task.request[item.evidence_id], item.evidence_id),
                                value=item.value))
        for action in labels.terminals:
            must = set(task.answer.must_bind.get(action.value, [])) & set(state.state)
            _, _, score = labels.terminal(mask, action.value, sorted(must))
            out.append(ValueRow(**base, action=task.action(action.value, payload=sorted(must)),
                                value=float(score - labels.value(mask, state.left))))
    return out


_IDENTITY = {"trajectory_id", "source", "sources", "count", "t"}  # what differs between identical rows


def merge_identical(lines: list[BaseModel]) -> tuple[list[BaseModel], int]:
    """Rows that say the same thing (all but which trajectory and source they came from) merged into the first,
    with `count` and `sources`: a policy that plays a task the same way ten times gives one row of count 10, not
    ten rows that weigh it ten times over. Returns the rows and how many were merged away."""
    kept: dict[str, BaseModel] = {}
    for row in lines:
        if not hasattr(row, "count"):
            kept[str(len(kept))] = row
            continue
        key = row.model_dump_json(exclude=_IDENTITY)
        first = kept.get(key)
        if first is None:
            kept[key] = row.model_copy(update={"count": 1, "sources": [row.source]})  # type: ignore[attr-defined]
        else:
            first.count += 1  # type: ignore[attr-defined]
            first.sources.append(row.source)  # type: ignore[attr-defined]
    return list(kept.values()), len(lines) - len(kept)


def _write(pkg: Path, out: Path, content_hash: str, runs: list[dict[str, Any]], formats: list[Format],
           rows: dict[str, dict[str, list[BaseModel]]], tasks: dict[str, _Task]) -> TrainingInfo:
    out.mkdir(parents=True, exist_ok=True)
    counts: dict[str, dict[str, int]] = {}
    merged: dict[str, int] = {}
    for fmt in formats:
        (out / fmt).mkdir(exist_ok=True)
        counts[fmt] = {}
        merged[fmt] = 0
        for split in SPLITS:
            path = out / fmt / f"{split}.jsonl"
            lines, gone = merge_identical(rows[fmt].get(split, []))
            merged[fmt] += gone
            if lines:
                path.write_text("".join(r.model_dump_json() + "\n" for r in lines))
                counts[fmt][split] = len(lines)
            elif path.exists():
                path.unlink()  # a re-export leaves no split of an earlier one behind
    write_schemas(out, "training", [(fmt, MODELS[fmt]) for fmt in formats])
    workflows: dict[str, set[str]] = defaultdict(set)
    for task in tasks.values():
        workflows[split_of(task.view.workflow_id)].add(task.view.workflow_id)
    warnings = [f"the {split} split is empty: {len({lineage(t.view.workflow_id) for t in tasks.values()})} "
                "workflows are too few for an 80/10/10 split by workflow; evaluate on another package"
                for split in SPLITS if not workflows.get(split)]
    info = TrainingInfo(package=str(pkg), content_hash=content_hash, runs=runs, formats=list(formats),
                        counts=counts, merged=merged, workflows={s: sorted(workflows.get(s, ())) for s in SPLITS},
                        warnings=warnings)
    (out / "training.json").write_text(json.dumps(info.model_dump(), indent=2) + "\n")
    (out / "README.md").write_text(_card(info))
    return info


def _card(info: TrainingInfo) -> str:
    """A dataset card: Hugging Face's YAML header (one config per format, its non-empty splits) and what it is."""
    header = ["---", "license: cc0-1.0", "configs:"]
    for fmt in info.formats:
        header += [f"- config_name: {fmt}", "  data_files:"]
        header += [f"  - split: {split}\n    path: {fmt}/{split}.jsonl" for split in SPLITS if info.counts[fmt].get(split)]
    header.append("---")
    per = Counter({fmt: sum(info.counts[fmt].values()) for fmt in info.formats})
    runs = ", ".join(f"{r['run_id']} ({r['policy']}, {r['trajectories']} trajectories)" for r in info.runs) or "none"
    body = [
        "", "# voe training set", "",
        f"Compiled by `voe export-training` from the task package `{info.package}` (content hash "
        f"`{info.content_hash}`) and the runs: {runs}. Formats: "
        + ", ".join(f"`{fmt}` ({per[fmt]} rows)" for fmt in info.formats) + ".", "",
        "- `sft`: chats to imitate (the reference and valid, clean run trajectories), as an `openai:` policy of the "
        "json protocol sees them.",
        "- `preference`: at one state, an optimal action (`chosen`) against the action a run took that lost value "
        "(`rejected`), with both values.",
        "- `value`: (state, action, value) rows, value = Q(s, a) - V(s) under voe's cost score.", "",
        "Splits are by workflow (the versions of one archive together), each sent to train, validation or test by "
        "sha256 of its id, aiming at 80/10/10: no workflow is in two splits. This set's real split: "
        + "; ".join(f"{fmt} " + ", ".join(f"{split} {info.counts[fmt].get(split, 0)} rows" for split in SPLITS)
                    for fmt in info.formats)
        + f"; workflows {', '.join(f'{split} {len(info.workflows[split])}' for split in SPLITS)}."
        + "".join(f" **Warning: {w}.**" for w in info.warnings), "",
        "Identical rows are merged: `count` says how many trajectories (or steps) a row stands for and `sources` "
        "which runs; weigh by `count` to train on the runs as played. Merged away: "
        + ", ".join(f"{fmt} {info.merged.get(fmt, 0)}" for fmt in info.formats) + ".", "",
        "Prompts hold only what a policy may see; the values and the chosen actions come from the verifier's labels "
        "(DESIGN §10). Do not evaluate a policy on tasks of the package it was trained on. Schemas: `schema/`.", "",
    ]
    return "\n".join(header + body)


def read_training(out: Path, fmt: Format) -> list[dict[str, Any]]:
    """Every row of one format, all splits (for tests and quick looks)."""
    if fmt not in FORMATS:
        raise InputError(f"unknown training format {fmt!r}", path=str(out))
    return [row for split in SPLITS if (out / fmt / f"{split}.jsonl").is_file()
            for row in read_jsonl(out / fmt / f"{split}.jsonl")]
