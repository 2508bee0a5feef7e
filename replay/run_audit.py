"""A run's own audit (a live validator): what went wrong in the plumbing of its episodes, and whether anything
verifier-only reached the policy. Every writer of a run writes it (`voe run`, `voe serve`, `voe import-inspect`)
as the run folder's audit.json, and `voe score` checks it again and prints it; a run whose audit fails says so
and its command exits 1.

Plumbing: the counts of parse errors, off-menu actions (an unknown action, an id on no menu, a request of the
wrong kind for its entry), duplicate requests, episodes ended by a duplicate loop, episodes that ran out of steps.
These are the policy's failures; the audit records them (they are scored by the codebook), it does not fail on them.

Leakage: every message the policy was given is checked, as it was given: for an agent run, each system, user and
tool message of its transcripts (the model's own replies are not input); for any other run (python: policies,
baselines, MCP clients, Inspect), the task as the policy receives it (its policy-visible view) and every
observation the environment answered. A message leaks when it holds a term of the verifier's: a task family name
(the family decides the answer), the moment or decision id of its task, or a gold or source fact of its task that
the package's policy-visible files do not hold themselves. A leak fails the audit. The audit names the trajectory,
the message and the kind of term, never the term (audit.json travels with the run).

The `reference` policy is given the answer by design (it is the verifier's own path, replay/runner.py); its run
is audited on the same messages as any other, which hold no answer.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from voe.artifacts.package import Family, TaskAnswer, TaskView, load_package
from voe.jsonl import read_jsonl

AUDIT_FILE = "audit.json"
AUDIT_VERSION = 1


class Leak(BaseModel):
    trajectory_id: str
    message: str  # where: "task", "observation t=3", "transcript message 4 (tool)"
    kind: str  # "family", "moment", "decision", "gold_fact", "source_fact"
    term_sha256: str  # the term's hash (the term itself is verifier-only)


class RunAudit(BaseModel):
    audit_version: int = AUDIT_VERSION
    trajectories: int
    steps: int
    parse_errors: int
    off_menu: int
    duplicates: int
    duplicate_loops: int
    horizon_exhausted: int
    messages_checked: int
    leaks: list[Leak] = Field(default_factory=list)
    passed: bool

    def line(self) -> str:
        """One line for a person."""
        head = "audit passed" if self.passed else f"audit FAILED: {len(self.leaks)} message(s) carry verifier-only terms"
        return (f"{head} ({self.messages_checked} messages checked; {self.parse_errors} parse errors, "
                f"{self.off_menu} off-menu, {self.duplicates} duplicate requests, {self.duplicate_loops} duplicate "
                f"loops, {self.horizon_exhausted} horizons exhausted)")


def forbidden_terms(views: list[TaskView], answers: dict[str, TaskAnswer],
                    visible: str) -> dict[str, dict[str, str]]:
    """Per task: term -> its kind. Family names always; a task's moment and decision ids; its gold and source
    facts unless the policy-visible files hold them verbatim (a fact that is also an item's text is no leak)."""
    families = {f.value: "family" for f in Family}
    out: dict[str, dict[str, str]] = {}
    for v in views:
        a = answers[v.task_id]
        terms = dict(families)
        terms[a.moment_id] = "moment"
        terms[a.decision] = "decision"
        for kind, facts in (("gold_fact", a.gold_facts), ("source_fact", a.source_facts)):
            terms.update({f: kind for f in facts if len(f) >= 8 and f not in visible})
        out[v.task_id] = terms
    return out


def _whole(term: str, text: str) -> bool:
    """`term` in `text` as a whole word: `missing_evidence` (a family) is not in `localize_missing_evidence` (an
    action every task offers)."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(term)}(?![A-Za-z0-9_])", text) is not None


def _messages(run_dir: Path, views: dict[str, TaskView]) -> Iterator[tuple[str, str, str]]:
    """(trajectory id, where, text) of every message the policy was given."""
    transcripts = run_dir / "transcripts.jsonl"
    if transcripts.is_file():
        for tr in read_jsonl(transcripts):
            for i, m in enumerate(tr.get("messages") or []):
                if isinstance(m, dict) and m.get("role") != "assistant":
                    content = m.get("content")
                    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
                    yield tr["trajectory_id"], f"transcript message {i} ({m.get('role')})", text
        return
    trajectories = list(read_jsonl(run_dir / "trajectories.jsonl"))
    for tr in trajectories:
        view = views.get(tr["task_id"])
        if view is not None:
            yield tr["trajectory_id"], "task", view.model_dump_json()
    observations = run_dir / "observations.jsonl"
    if observations.is_file():
        for row in read_jsonl(observations):
            yield row["trajectory_id"], f"observation t={row['t']}", json.dumps(row["observation"], ensure_ascii=False)


def audit_run(run_dir: Path, package: Path) -> RunAudit:
    """The audit of the run in `run_dir`, a run of `package`."""
    views, _, answers, _ = load_package(package)
    by_id = {v.task_id: v for v in views}
    visible = (package / "tasks.jsonl").read_text(encoding="utf-8") + \
        (package / "evidence.jsonl").read_text(encoding="utf-8")
    terms = forbidden_terms(views, answers, visible)
    task_of = {tr["trajectory_id"]: tr["task_id"] for tr in read_jsonl(run_dir / "trajectories.jsonl")}
    leaks: list[Leak] = []
    checked = 0
    for tid, where, text in _messages(run_dir, by_id):
        checked += 1
        for term, kind in terms.get(task_of.get(tid, ""), {}).items():
            if term in text and _whole(term, text):
                leaks.append(Leak(trajectory_id=tid, message=where, kind=kind,
                                  term_sha256=hashlib.sha256(term.encode()).hexdigest()))
    outcomes: Counter[str] = Counter()
    steps = 0
    for row in read_jsonl(run_dir / "steps.jsonl"):
        steps += 1
        outcomes[row.get("outcome", "")] += 1
    ends = Counter(tr.get("end") for tr in read_jsonl(run_dir / "trajectories.jsonl"))
    return RunAudit(trajectories=len(task_of), steps=steps, parse_errors=outcomes["parse_error"],
                    off_menu=outcomes["off_menu"], duplicates=outcomes["duplicate"],
                    duplicate_loops=ends["duplicate_loop"], horizon_exhausted=ends["horizon_exhausted"],
                    messages_checked=checked, leaks=leaks, passed=not leaks)


def write_audit(run_dir: Path, package: Path) -> RunAudit:
    """Audit the run and write audit.json beside its files."""
    audit = audit_run(run_dir, package)
    (run_dir / AUDIT_FILE).write_text(json.dumps(audit.model_dump(), indent=2, sort_keys=True) + "\n")
    return audit


def read_audit(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / AUDIT_FILE
    return json.loads(path.read_text()) if path.is_file() else None
