"""The task package (DESIGN §5): its models and its reader. `TaskView` and `EvidenceObject` are what a policy may
see; `TaskAnswer` is verifier-only and lives in a separate file of the package. `load_package` reads a package
folder without the compiler's imports (the graph driver among them), so that `voe run` starts in a fraction of
a second."""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from voe.errors import InputError
from voe.versions import PACKAGE_VERSION, check, write_schemas


class Family(StrEnum):
    SOURCE_INTEGRITY = "source_integrity"
    MISSING_EVIDENCE = "missing_evidence"
    CALIBRATION_SUFFICIENCY = "calibration_sufficiency"
    PACKET_SUBMISSION = "packet_submission"
    PACKET_ESCALATION = "packet_escalation"


class Action(StrEnum):
    REQUEST_CHARACTERIZATION = "request_characterization"
    REQUEST_CALIBRATION_ARTIFACT = "request_calibration_artifact"
    REQUEST_PROCESS_RECORD = "request_process_record"
    FLAG_SOURCE_DEFECT = "flag_source_defect"
    LOCALIZE_MISSING_EVIDENCE = "localize_missing_evidence"
    SUBMIT_RISK_PACKET = "submit_risk_packet"
    ABSTAIN_OR_ESCALATE = "abstain_or_escalate"


REQUESTS = (Action.REQUEST_CHARACTERIZATION, Action.REQUEST_CALIBRATION_ARTIFACT, Action.REQUEST_PROCESS_RECORD)
TERMINALS = (Action.FLAG_SOURCE_DEFECT, Action.LOCALIZE_MISSING_EVIDENCE, Action.SUBMIT_RISK_PACKET,
             Action.ABSTAIN_OR_ESCALATE)
REQUEST_FOR_KIND = {
    "characterization": Action.REQUEST_CHARACTERIZATION,
    "calibration_artifact": Action.REQUEST_CALIBRATION_ARTIFACT,
    "process_record": Action.REQUEST_PROCESS_RECORD,
    # there is no request action of its own for documents; they are asked for like characterization
    "source_document": Action.REQUEST_CHARACTERIZATION,
}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MenuEntry(Strict):
    entry_id: str
    evidence_id: str
    kind: str
    title: str
    request_action: Action


class TaskView(Strict):
    """Policy-visible state: menu metadata only (ids, kinds, titles) and the framing."""

    task_id: str
    workflow_id: str
    workflow_title: str
    question: str
    menu: list[MenuEntry]
    actions: list[Action]
    horizon: int


class ObservedFact(Strict):
    """One thing a reviewer holding the archive would see, stated as a fact (never as a verdict), with the
    place it comes from (file, locator, sha256 of the span) when it is read from a file."""

    statement: str
    source: dict[str, Any] | None = None


# archived: the object is in the archive; referenced: a record the archive names and resolves elsewhere;
# unavailable: no acquisition path
EvidenceStatus = Literal["archived", "referenced", "unavailable"]


class EvidenceObject(Strict):
    """What a request returns: the archived object (`archived`), a record reference the archive names and
    resolves elsewhere (`referenced`), or `unavailable` (no acquisition path), with what the archive itself
    says about the item. `metadata` holds the same facts in structured form. Nothing here is a conclusion of
    the compiler: no defect kind, rule name or defect list (DESIGN §4)."""

    evidence_id: str
    status: EvidenceStatus
    kind: str | None = None
    title: str | None = None
    record: str | None = None
    provenance: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    facts: list[ObservedFact] = Field(default_factory=list)


class ReferenceStep(Strict):
    action: Action
    evidence_id: str | None = None
    payload: list[str] | None = None


class TaskAnswer(Strict):
    """Verifier-only: never shown to a policy."""

    task_id: str
    family: Family
    moment_id: str
    accepted_classes: list[Action]
    binding: list[str]
    needed: list[str]  # what the reference needs pulled to justify its class (the grounded check)
    useful: list[str]  # decision-changing items (useful precision, evidence regret)
    reference: list[ReferenceStep]
    reference_class: Action
    reference_payload: list[str]
    must_bind: dict[str, list[str]]  # accepted class -> ids its payload must name ("bound to that item")
    may_bind: dict[str, list[str]]  # terminal class -> the only ids its payload may name (strict payloads)
    decision: str  # hash of the visible question and the gold: tasks sharing it are one decision
    source_facts: list[str]  # defect ids and other graph facts the moment was computed from
    # the independent facts of the archive the gold rests on (a defect of one item, a changelog statement, a
    # gap, a clean subject): tasks sharing one are not independent (metrics cluster by them, DESIGN §6)
    gold_facts: list[str] = Field(default_factory=list)


class Manifest(BaseModel):
    package_version: int = 3  # the package's schema version (voe/versions.py PACKAGE_VERSION)
    compiler_version: str
    content_hash: str
    graph_hash: str
    sources: list[dict[str, Any]]
    counts: dict[str, Any]
    files: dict[str, str]
    annotator: str = "deterministic template"
    gate: dict[str, Any] = Field(default_factory=dict)


PACKAGE_SCHEMAS: tuple[tuple[str, type[BaseModel]], ...] = (
    ("task", TaskView), ("evidence", EvidenceObject), ("answer", TaskAnswer), ("manifest", Manifest))


def package_content_hash(files: dict[str, bytes]) -> str:
    """The package's content hash (manifest.json `content_hash`): sha256 over the sha256 of each data file, by name."""
    return hashlib.sha256(b"".join(hashlib.sha256(files[n]).digest() for n in sorted(files))).hexdigest()


def write_package(out: Path, files: dict[str, bytes], manifest: Manifest) -> None:
    """Write a package folder: its data files, schema/ and manifest.json. `voe compile` and `voe import-package`
    both write through here, so that a package rebuilt from an export is the compiled one byte for byte."""
    out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (out / name).write_bytes(data)
    write_schemas(out, "package", PACKAGE_SCHEMAS)
    (out / "manifest.json").write_text(json.dumps(manifest.model_dump(), indent=2, sort_keys=True) + "\n",
                                       encoding="utf-8")


# the release gate as the manifest records it (DESIGN §7; voe.replay.gate runs it)
GateKind = Literal["reference", "null", "probe", "rules_probe", "text_probe", "structure_probe", "metadata_probe",
                   "empty", "error"]


class GateRow(BaseModel):
    policy: str
    kind: GateKind
    valid: int
    tasks: int
    rate: float
    limit: float | None
    passed: bool
    detail: str | None = None  # what the row is (the best combination's rules), or why it could not run


class GateReport(BaseModel):
    passed: bool
    rows: list[GateRow]
    _solved: dict[str, set[str]] = PrivateAttr(default_factory=dict)  # probe -> the task ids it is right on

    def solved(self, policy: str) -> set[str]:
        return self._solved.get(policy, set())

    def table(self) -> str:
        lines = ["| policy | kind | valid | rate | limit | |", "|---|---|---|---|---|---|"]
        for r in self.rows:
            limit = ("all tasks" if r.kind == "reference" else "at least one" if r.kind == "empty"
                     else "recorded" if r.limit is None else f"<= {r.limit:.0%}")
            verdict_ = "-" if r.limit is None and r.kind not in ("reference", "empty", "error") \
                else "ok" if r.passed else "FAIL"
            name = f"{r.policy} ({r.detail})" if r.detail else r.policy
            lines.append(f"| {name} | {r.kind} | {r.valid}/{r.tasks} | {r.rate:.1%} | {limit} | {verdict_} |")
        return "\n".join(lines)


def load_package(pkg: Path) -> tuple[list[TaskView], dict[str, EvidenceObject], dict[str, TaskAnswer], Manifest]:
    """Read a package folder; anything missing or malformed is an InputError naming the file and line."""

    def lines(name: str) -> list[dict[str, Any]]:
        path = pkg / name
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text (byte {exc.start})", path=str(path)) from exc
        except OSError as exc:
            raise InputError(f"not a task package ({exc.strerror or exc}); create one with `voe compile`",
                             path=str(path)) from exc
        out = []
        for n, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise InputError(f"line {n} is not JSON ({exc.msg})", path=str(path)) from exc
        return out

    manifest_path = pkg / "manifest.json"
    try:  # the version first: a package of another version is refused as that, not as a schema mismatch
        found = json.loads(manifest_path.read_text()).get("package_version")
    except (OSError, ValueError, AttributeError) as exc:
        raise InputError(f"not a task package (no readable manifest.json: {exc}); create one with `voe compile`",
                         path=str(manifest_path)) from exc
    check("package", found, PACKAGE_VERSION, str(manifest_path))
    try:
        views = [TaskView.model_validate(x) for x in lines("tasks.jsonl")]
        evidence = {x["evidence_id"]: EvidenceObject.model_validate(x) for x in lines("evidence.jsonl")}
        answers = {x["task_id"]: TaskAnswer.model_validate(x) for x in lines("answers.jsonl")}
        manifest = Manifest.model_validate_json((pkg / "manifest.json").read_text())
    except (ValidationError, KeyError, OSError, TypeError, UnicodeDecodeError) as exc:
        raise InputError(f"package files do not match the package schema: {str(exc).splitlines()[0]}",
                         path=str(pkg)) from exc
    return views, evidence, answers, manifest
