"""A run folder (DESIGN §6): run.json, steps.jsonl (what the policy sent and how the environment classed it),
observations.jsonl (what each request showed) and trajectories.jsonl (one summary per trajectory); their models,
schemas, writer and reader."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from voe.artifacts.outdir import ARTIFACT_MARKERS, claim_out, fresh_folder, swap_in
from voe.errors import InputError
from voe.jsonl import read_jsonl
from voe.versions import RUN_SCHEMA_VERSION, check, write_schemas

# page: a further page of an item already pulled (voe/artifacts/observations.py), free of the horizon
Outcome = Literal["revealed", "unavailable", "page", "duplicate", "parse_error", "off_menu", "terminal"]


# running: not ended yet; context_exhausted: the conversation outgrew the model's context (an agent run);
# policy_timeout / policy_budget: a sealed python: policy passed its step deadline / its memory, CPU or answer caps
End = Literal["running", "terminal", "horizon_exhausted", "duplicate_loop", "context_exhausted", "policy_timeout",
              "policy_budget"]


class StepLine(BaseModel):
    """A line of a run's steps.jsonl: what the policy sent and how the environment classed it."""

    trajectory_id: str
    task_id: str
    t: int
    raw: Any
    action: str | None = None
    evidence_id: str | None = None
    payload: list[str] | None = None
    outcome: Outcome
    page: int | None = None  # the page of the item's observation asked for (None: the first, not named)


class StepRecord(StepLine):
    """A step with what the environment showed; the observation goes to observations.jsonl (the verifier reads
    steps.jsonl, which stays small: an observation is most of a step's bytes)."""

    observation: dict[str, Any] = Field(default_factory=dict)


class ObservationLine(BaseModel):
    """A line of a run's observations.jsonl: the observation of one step that returned one."""

    trajectory_id: str
    t: int
    observation: dict[str, Any]


class TrajectorySummary(BaseModel):
    trajectory_id: str
    task_id: str
    policy: str
    pass_index: int
    steps: int
    requested: list[str]
    terminal_class: str | None
    payload: list[str]
    end: End
    plumbing: dict[str, int]
    request_steps: int = 0  # every request action issued, duplicates and off-menu ones included
    pages: int = 0  # steps that read a further page of an item (outcome `page`), not counted by the horizon


class RunInfo(BaseModel):
    schema_version: int = RUN_SCHEMA_VERSION  # voe/versions.py: readers refuse another
    run_id: str
    policy: str
    passes: int
    seed: int
    package: str
    content_hash: str
    tasks: int
    trajectories: int
    seconds: float
    # agent runs (replay/agent_run.py): the sampling settings, endpoint, tokens, cost and calls
    settings: dict[str, Any] | None = None
    base_url: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost: float | None = None
    calls: int | None = None
    prompt_version: int | None = None
    # python: policies (replay/sealed.py): "namespaces" (no network, the package and caches masked) or "process"
    sealing: str | None = None
    limits: dict[str, Any] | None = None  # their bounds (replay/sealed.py PolicyLimits)


def write_run_schemas(out: Path) -> None:
    """The JSON Schemas of run.json, steps.jsonl, observations.jsonl and trajectories.jsonl, in schema/."""
    write_schemas(out, "run", (("run", RunInfo), ("step", StepLine), ("observation", ObservationLine),
                               ("trajectory", TrajectorySummary)))


class StepWriter:
    """steps.jsonl and observations.jsonl, a line each per step as it happens (an observation only when the
    step returned one)."""

    def __init__(self, out: Path) -> None:
        self._steps = (out / "steps.jsonl").open("w")
        self._observations = (out / "observations.jsonl").open("w")

    def write(self, rec: StepRecord) -> None:
        line = rec.model_dump(mode="json")
        observation = line.pop("observation")
        if line["page"] is None:  # a step that named no page: its line as before pages existed
            del line["page"]
        self._steps.write(json.dumps(line, sort_keys=True) + "\n")
        if observation:
            self._observations.write(json.dumps({"trajectory_id": rec.trajectory_id, "t": rec.t,
                                                 "observation": observation}, sort_keys=True) + "\n")

    def close(self) -> None:
        self._steps.close()
        self._observations.close()

    def __enter__(self) -> StepWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_run_files(out: Path, steps: list[StepRecord], summaries: list[TrajectorySummary]) -> None:
    with StepWriter(out) as writer:
        for rec in steps:
            writer.write(rec)
    (out / "trajectories.jsonl").write_text("".join(json.dumps(s.model_dump(), sort_keys=True) + "\n"
                                                    for s in summaries))


@contextmanager
def staged_folder(out: Path) -> Iterator[Path]:
    """A folder written aside (beside `out`, so the swap is one rename on one file system) and swapped in whole when
    the block ends: an interrupt or an error leaves `out` as it was, absent or the previous one, never half-written.
    Whether `out` may be replaced is decided before (voe/artifacts/outdir.py claim_out)."""
    tmp = fresh_folder(out, ".partial")
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    swap_in(tmp, out)


@contextmanager
def written_whole(out: Path, what: str, *, force: bool) -> Iterator[Path]:
    """The one --out rule of every command that writes a folder, as `voe run` has it: a folder that holds
    something is refused unless `force`, which replaces only an earlier artifact of the same kind
    (outdir.ARTIFACT_MARKERS); the new one is written aside and swapped in whole (nothing of the earlier one
    stays, an interrupt leaves it as it was)."""
    claim_out(out, markers=ARTIFACT_MARKERS[what], what=what, force=force)
    with staged_folder(out) as folder:
        yield folder


def read_run_info(run_dir: Path, content_hash: str | None = None) -> RunInfo:
    """A run folder's run.json, checked: there, of the schema version this voe reads, a run record; with
    `content_hash`, a run of that package. Every reader of runs (score, labels, training sets, export) starts here."""
    path = run_dir / "run.json"
    if not path.is_file():
        raise InputError("not a run folder (no run.json); create one with `voe run`", path=str(run_dir))
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"run.json is not a voe run record ({exc})", path=str(path)) from None
    check("run", raw.get("schema_version") if isinstance(raw, dict) else None, RUN_SCHEMA_VERSION, str(path))
    try:
        info = RunInfo.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the record"
        raise InputError(f"run.json is not a voe run record ({where}: {first['msg']})", path=str(path)) from None
    if content_hash is not None and info.content_hash != content_hash:
        raise InputError(f"this run is of another package (content hash {info.content_hash[:12]}, this package is "
                         f"{content_hash[:12]})", path=str(run_dir))
    return info


def read_steps(run_dir: Path) -> list[StepRecord]:
    """A run's steps with their observations joined back (what export and the tests read)."""
    seen: dict[tuple[str, int], dict[str, Any]] = {}
    for row in read_jsonl(run_dir / "observations.jsonl"):
        line = ObservationLine.model_validate(row)
        seen[(line.trajectory_id, line.t)] = line.observation
    return [StepRecord.model_validate({**row, "observation": seen.get((row["trajectory_id"], row["t"]), {})})
            for row in read_jsonl(run_dir / "steps.jsonl")]
