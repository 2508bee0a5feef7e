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
own (voe.errors.VoeError and its subclasses), never a traceback of a library below. Calls that need Neo4j open
a connection from the environment (NEO4J_URI, NEO4J_PASSWORD, NEO4J_DATABASE) unless given `graph`.

This module sits above every stage (it imports them); `import voe` loads it only when one of its names is used.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voe.artifacts.run import RunInfo, written_whole
from voe.artifacts.scores import TrajectoryScore
from voe.compiler.package import CompileSummary
from voe.export.crate import ExportSummary
from voe.export.training import FORMATS, TrainingInfo
from voe.graph import Graph
from voe.ingest import IngestReport
from voe.verifiers.labels import LabelsInfo

# `ingest` and `export` are the names of stages (voe.ingest, voe.export): the calls are named for what they make
__all__ = ["Scored", "compile", "export_crate", "export_training", "ingest_archives", "label", "report", "run", "score"]


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


def run(package: str | Path, policy: str, out: str | Path, *, passes: int = 1, seed: int = 0,
        base_url: str | None = None, force: bool = False, **agent: Any) -> RunInfo:
    """`voe run PKG --policy POLICY --out OUT`: a baseline by name, `python:MODULE:FUNCTION` (sealed), or
    `openai:MODEL` against an OpenAI-compatible endpoint (`base_url`, else OPENAI_BASE_URL; further keyword
    arguments are replay.agent_run.run_agent's: concurrency, max_requests, resume, timeout, ...; a python: run
    takes `resume=True` too)."""
    from voe.artifacts.outdir import RUN_MARKERS, claim_out, start_run_over

    pkg, folder = Path(package), Path(out)
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
    """What `voe score` computes: the summary (summary.json: rates with their intervals, codebook, audit) and
    one score per trajectory (scores.jsonl), unplayed tasks included."""

    summary: dict[str, Any]
    scores: list[TrajectoryScore]

    @property
    def validity(self) -> float:
        """Evidence-grounded validity over every task and pass."""
        return float(self.summary["evidence_grounded_valid"]["mean"])


def score(run_dir: str | Path, *, graph: Graph | None = None) -> Scored:
    """`voe score RUN`: the run's trajectories verified by graph queries; writes summary.json, scores.jsonl and
    audit.json into the run folder."""
    from voe.verifiers.score import score_run

    with _graph(graph) as g:
        summary, scores = score_run(g, Path(run_dir))
    return Scored(summary, scores)


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
