"""voe from Python: the calls a notebook or a script needs, each what the command of the same name does, with typed
results (docs/guide/python.md; its example runs in the tests).

    import voe

    report = voe.ingest_archives("../shared/archives/mds2-2525")  # records into the graph (NEO4J_URI, as the CLI)
    summary = voe.compile("out/pkg")                              # realized-only tasks, gated
    info = voe.run("out/pkg", "random", "out/run-random")         # a baseline, a python: policy or openai:MODEL
    scored = voe.score("out/run-random")                          # graph-query verdicts and metrics
    voe.report(["out/run-random"], "out/report")

Every folder a call writes follows the CLI's one rule: a folder holding something is refused unless `force=True`,
which replaces only an earlier artifact of the same kind, and the new one is swapped in whole. Errors are voe's
own (voe.errors.VoeError and its subclasses), never a traceback of a library below. A run whose own audit fails
(something verifier-only reached the policy), on which the commands exit 1, is not an error here: `run` and
`score` return it, with `.audit.passed` False, for the notebook to look at. Calls that need Neo4j open a
connection from the environment (NEO4J_URI, NEO4J_PASSWORD, NEO4J_DATABASE) unless given `graph`.

This module sits above every stage (it imports them); `import voe` loads it only when one of its names is used.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from voe.artifacts.run import RunInfo, written_whole
from voe.artifacts.scores import TrajectoryScore
from voe.compiler.package import CompileSummary
from voe.errors import InputError
from voe.export.crate import ExportSummary
from voe.export.training import FORMATS, TrainingInfo
from voe.graph import Graph
from voe.ingest import IngestReport
from voe.replay.run_audit import AUDIT_FILE, Leak, RunAudit, read_audit
from voe.verifiers.labels import LabelsInfo

# `ingest` and `export` are the names of stages (voe.ingest, voe.export): the calls are named for what they make
__all__ = ["Audit", "RunResult", "Scored", "compile", "export_crate", "export_training", "ingest_archives", "label",
           "report", "run", "score"]


@contextmanager
def _graph(graph: Graph | None) -> Iterator[Graph]:
    if graph is not None:
        yield graph
        return
    with Graph() as opened:
        opened.verify()
        yield opened


def ingest_archives(*paths: str | Path, schema_dir: str | Path | None = None, validate_schema: bool = True,
           graph: Graph | None = None) -> IngestReport:
    """`voe ingest PATH...`: record folders, NERDm files and collections, RO-Crates/.eln, BagIt bags into the
    graph. A path that fails is reported in the result (`errors`) and the others still land."""
    from voe.ingest import ingest_paths

    with _graph(graph) as g:
        return ingest_paths([Path(p) for p in paths], g, schema_dir=Path(schema_dir) if schema_dir else None,
                            validate_schema=validate_schema)


def compile(out: str | Path, *, force: bool = False, graph: Graph | None = None) -> CompileSummary:  # noqa: A001
    """`voe compile --out OUT`: the graph's decision moments as a content-hashed task package, gated (the
    summary's `gate`; a package that fails its gate is still written, as the CLI writes it)."""
    from voe.replay.admission import compile_package

    out = Path(out)
    with _graph(graph) as g, written_whole(out, "package", force=force) as folder:
        summary = compile_package(g, folder)
    return summary.model_copy(update={"out": str(out)})


class Audit(BaseModel):
    """A run's own audit (audit.json, replay/run_audit.py): `passed` is False when a message given to the policy
    carried a verifier-only term. The commands exit 1 then; a call returns it here and does not raise, so that the
    run and its scores can still be looked at."""

    passed: bool
    line: str  # what `voe run` and `voe score` print
    leaks: list[Leak]  # each by trajectory, message and kind of term (never the term)
    file: Path

    @classmethod
    def of(cls, run_dir: Path) -> Audit:
        raw = read_audit(run_dir)
        if raw is None:  # every writer of a run writes it; a run of an older voe has none
            raise InputError("the run has no audit.json (a run of an older voe); `voe score` writes one",
                             path=str(run_dir))
        audit = RunAudit.model_validate(raw)
        return cls(passed=audit.passed, line=audit.line(), leaks=audit.leaks, file=run_dir / AUDIT_FILE)


class RunResult(RunInfo):
    """What `voe run` writes: run.json's fields, and the run's audit (`audit.passed`, `audit.line`)."""

    audit: Audit


def run(package: str | Path, policy: str, out: str | Path, *, passes: int = 1, seed: int = 0,
        base_url: str | None = None, force: bool = False, **agent: Any) -> RunResult:
    """`voe run PKG --policy POLICY --out OUT`: a baseline by name, `python:MODULE:FUNCTION` (sealed), or
    `openai:MODEL` against an OpenAI-compatible endpoint (`base_url`, else OPENAI_BASE_URL; further keyword
    arguments are replay.agent_run.run_agent's: concurrency, max_requests, resume, timeout, ...; a python: run
    takes `resume=True` too). A run whose audit fails is returned, not raised: see `.audit`."""
    folder = Path(out)
    info = _run(Path(package), policy, folder, passes=passes, seed=seed, base_url=base_url, force=force, **agent)
    return RunResult(**info.model_dump(), audit=Audit.of(folder))


def _run(pkg: Path, policy: str, folder: Path, *, passes: int, seed: int, base_url: str | None, force: bool,
         **agent: Any) -> RunInfo:
    from voe.artifacts.outdir import RUN_MARKERS, claim_out, start_run_over

    resume = bool(agent.get("resume"))
    resumable = policy.startswith(("openai:", "python:"))
    claim_out(folder, markers=RUN_MARKERS, what="run", force=force, resume=resume if resumable else None)
    if force and not resume:
        start_run_over(folder, policy)
    if policy.startswith("openai:"):
        from voe.replay.agent_run import run_agent

        return run_agent(pkg, policy.removeprefix("openai:"), folder, passes=passes, seed=seed, base_url=base_url,
                         **agent)
    from voe.replay.runner import run_policy

    return run_policy(pkg, policy, passes, seed, folder, resume=resume)


@dataclass(frozen=True)
class Scored:
    """What `voe score` computes: the summary (summary.json: rates with their intervals, codebook, audit), one
    score per trajectory (scores.jsonl), unplayed tasks included, and the run's audit, checked again (a failed one
    is returned, not raised: `audit.passed`)."""

    summary: dict[str, Any]
    scores: list[TrajectoryScore]
    audit: Audit

    @property
    def validity(self) -> float:
        """Evidence-grounded validity over every task and pass."""
        return float(self.summary["evidence_grounded_valid"]["mean"])


def score(run_dir: str | Path, *, graph: Graph | None = None) -> Scored:
    """`voe score RUN`: the run's trajectories verified by graph queries; writes summary.json, scores.jsonl and
    audit.json into the run folder. A failed audit is in the result (`.audit`), not raised."""
    from voe.verifiers.score import score_run

    folder = Path(run_dir)
    with _graph(graph) as g:
        summary, scores = score_run(g, folder)
    return Scored(summary, scores, Audit.of(folder))


def label(package: str | Path, out: str | Path | None = None, runs: Sequence[str | Path] = ()) -> LabelsInfo:
    """`voe label PKG`: state labels of every task (verifier-only) and the step labels of each run."""
    from voe.verifiers.labels import label_package

    return label_package(Path(package), Path(out) if out is not None else None, [Path(r) for r in runs])


def report(runs: Sequence[str | Path], out: str | Path, *, curator: bool = False, force: bool = False) -> Path:
    """`voe report RUN... --out OUT` for scored runs; returns the path of report.md (report.html beside it)."""
    from voe.artifacts.scores import load_scored
    from voe.verifiers.report import about, questions_of, write_report

    folders = [Path(r) for r in runs]
    scored = [load_scored(r) for r in folders]
    target = Path(out)
    with written_whole(target, "report", force=force) as folder:
        write_report([s for s, _ in scored], folder, None, [t for _, t in scored],
                     about(questions_of(folders), curator=curator))
    return target / "report.md"


def export_crate(package: str | Path, out: str | Path, *, runs: Sequence[str | Path] = (), include_answers: bool = False,
           force: bool = False) -> ExportSummary:
    """`voe export PKG --out OUT`: the package (and runs) as a JSON-LD RO-Crate, validated with SHACL."""
    from voe.export.crate import export_package

    return export_package(Path(package), Path(out), include_answers=include_answers, runs=[Path(r) for r in runs],
                          force=force)


def export_training(package: str | Path, out: str | Path, runs: Sequence[str | Path] = (),
                    formats: Sequence[str] = FORMATS, *, force: bool = False) -> TrainingInfo:
    """`voe export-training PKG --out OUT`: sft, preference and value sets split by workflow, with a dataset card
    (`datasets.load_dataset(OUT, FORMAT)` reads them)."""
    from voe.export.training import export_training as write

    target = Path(out)
    with written_whole(target, "training set", force=force) as folder:
        info = write(Path(package), [Path(r) for r in runs], folder, formats)
    return info
