"""`voe compile`, `voe export` and `voe import-package`: the graph to a task package, a package to JSON-LD and back."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from voe.artifacts.run import written_whole
from voe.cli.app import artifact_force_option, cli, emit_json, progress_reporter, quiet_option
from voe.errors import UsageError
from voe.extras import require

if TYPE_CHECKING:
    from voe.llm import ResponseFormat


def _model_client(spec: str, option: str, base_url: str | None, response_format: ResponseFormat) -> Any:
    from voe.errors import UsageError
    from voe.llm import Budget, ChatClient, ResponseCache, Settings, default_cache_dir

    if not spec.startswith("openai:") or not spec.removeprefix("openai:"):
        raise UsageError(f"{option} {spec!r}: expected openai:MODEL")
    settings = Settings(model=spec.removeprefix("openai:"), protocol="json", response_format=response_format)
    return ChatClient(settings, base_url, cache=ResponseCache(default_cache_dir()), run_cache=ResponseCache(None),
                      budget=Budget(), prices={})


def _annotator(spec: str | None, base_url: str | None, response_format: ResponseFormat) -> Any:
    if spec is None:
        return None
    from voe.compiler.annotate import LLMAnnotator

    return LLMAnnotator(_model_client(spec, "--annotator", base_url, response_format))


def _judge(spec: str | None, base_url: str | None) -> Any:
    if spec is None:
        return None
    from voe.compiler.judge import Judge

    return Judge(_model_client(spec, "--judge", base_url, "json_object"))


@cli.command("compile")
@click.option("--out", "out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Folder for the task package (tasks, evidence, answers, manifest, schema).")
@click.option("--archive", "archives", multiple=True, type=click.Path(path_type=Path),
              help="Ingest this path first (repeatable); without it the graph is taken as it stands.")
@click.option("--annotator", help="openai:MODEL writes each task's framing and picks its distractors (default: the "
                                  "deterministic template, offline).")
@click.option("--judge", help="openai:MODEL scores every framing on the six criteria of DESIGN 7, after it passes "
                              "calibration on the project's fixed cases.")
@click.option("--base-url", help="OpenAI-compatible endpoint of the annotator and judge (default: OPENAI_BASE_URL).")
@click.option("--response-format", "response_format",
              type=click.Choice(["json_schema", "json_object", "json_object_schema", "none"]), default="json_schema",
              show_default=True, help="How the annotator's JSON reply is requested (servers differ).")
@click.option("--since", "old", type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="An earlier package: list the tasks added, kept and removed since it, and why each was removed.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@quiet_option
@artifact_force_option("package")
def compile_cmd(out: Path, archives: tuple[Path, ...], annotator: str | None, judge: str | None,
                base_url: str | None, response_format: ResponseFormat, old: Path | None, as_json: bool,
                quiet: bool, force: bool) -> None:
    """Compile realized-only decision tasks from the graph into a versioned task package.

    Each subject item of the graph can become one decision (compiler/moments.py): a packet whose
    menu holds only evidence the archive really has. A request returns the archive's facts
    about an item, never a verdict. Every defect becomes a task; at most two tasks rest on one
    gold fact; the other packets join while no cheap rule answers the package (docs/golds.md
    says why each fact leads where it does). Policy-visible tasks and verifier-only answers go
    to separate files; the content hash is the same every time the same graph is compiled.

    \b
    The release gate runs on every package and is recorded in manifest.json: the reference
    valid on every task, every null policy, rule probe and metadata-only classifier valid on
    at most 50% of the tasks, every text-only classifier on at most 40%. A package that fails
    the gate (or holds no task) is still written; the command prints the gate table and
    exits 1.

    \b
    Examples:
      voe compile --out out/pkg --json
      voe compile --out out/pkg --archive ../shared/archives/mds2-4103
      voe compile --out out/pkg-new --since out/pkg
    """
    from voe.compiler.package import gate_table, since
    from voe.graph import Graph
    from voe.ingest import ingest_paths
    from voe.replay.admission import compile_package

    with Graph() as graph:
        graph.verify()
        if archives:
            reporter = progress_reporter(quiet)
            with reporter.bar("ingest", len(archives), "paths") as bar:
                report = ingest_paths(list(archives), graph, progress=reporter.say, bar=bar.update)
            if report.errors:
                for err in report.errors:
                    click.echo(f"error: {err.path}: {err.message}", err=True)
                sys.exit(2)
        with written_whole(out, "package", force=force) as folder:
            summary = compile_package(graph, folder, annotator=_annotator(annotator, base_url, response_format),
                                      judge=_judge(judge, base_url), progress=progress_reporter(quiet))
        summary = summary.model_copy(update={"out": str(out)})
    changes = since(old, out) if old is not None else None
    if as_json:
        emit_json(summary.model_dump() | ({"since": changes} if changes is not None else {}))
    else:
        click.echo(f"{summary.tasks} tasks in {summary.workflows} workflows "
                   f"({', '.join(f'{k} {v}' for k, v in summary.families.items())})")
        click.echo(f"{summary.evidence_entries} evidence entries over {summary.canonical_evidence} canonical evidence ids")
        click.echo(f"{summary.decisions} distinct decisions; the largest group of tasks sharing one binding item: "
                   f"{summary.largest_item_group}")
        click.echo(f"{summary.gold_facts} distinct gold facts; the most tasks resting on one: {summary.largest_fact_group}")
        for family, why in summary.families_absent.items():
            click.echo(f"no {family} task: {why}")
        click.echo(f"content hash {summary.content_hash} -> {summary.out}")
        if changes is not None:
            click.echo(f"since {changes['old']}: {len(changes['added'])} added, {changes['kept']} kept "
                       f"({len(changes['gold_changed'])} with another gold), {len(changes['removed'])} removed")
            for task, why in changes["removed"].items():
                click.echo(f"  removed {task}: {why}")
        click.echo(gate_table(summary))
    if summary.tasks == 0:
        click.echo("error: the package fails the release gate: no decision of this graph needs judgment (ingest an "
                   "archive with defects, gaps or stated changes, or pass --archive; the manifest says why each "
                   "family is absent)", err=True)
        sys.exit(1)
    if not summary.gate_passed:
        if as_json:
            click.echo(gate_table(summary), err=True)
        click.echo("error: the package fails the release gate (written anyway; see the table)", err=True)
        sys.exit(1)




@cli.command("export")
@click.argument("package", metavar="PKG", type=click.Path(path_type=Path, file_okay=False))
@click.option("--out", "out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Folder for the RO-Crate (ro-crate-metadata.json and the .jsonld files).")
@click.option("--runs", "runs", multiple=True, metavar="RUN", type=click.Path(path_type=Path, file_okay=False),
              help="A run folder of this package to add as PROV activities (runs.jsonld); repeatable. With "
                   "--include-answers its verdicts (from `voe score`) go to answers.jsonld.")
@click.option("--include-answers", is_flag=True,
              help="Add answers.jsonld: the verifier-only answers and audit, each node marked voe:verifierOnly.")
@click.option("--date", metavar="YYYY-MM-DD",
              help="The crate's datePublished (default: SOURCE_DATE_EPOCH if set, else today, UTC).")
@click.option("--license", "license_url", metavar="URL",
              help="The crate's license (default: the licenses the source records state, else a note that their "
                   "terms apply).")
@click.option("--publisher", "publisher_id", metavar="URL",
              help="Who publishes the crate: a ROR id (https://ror.org/..., as RO-Crate 1.2 recommends) or the "
                   "organisation's URL. voe names none unless told: the publisher is whoever redistributes the crate.")
@click.option("--publisher-name", metavar="NAME", help="The --publisher's name (default: the URL).")
@click.option("--contact", metavar="MAILTO_OR_URL",
              help="Where the --publisher is reached: mailto:ADDRESS or a URL (the crate's ContactPoint).")
@click.option("--force", is_flag=True,
              help="Replace the earlier export in --out (a folder holding ro-crate-metadata.json; the new export is "
                   "swapped in whole); any other folder that is not empty is refused.")
@click.option("--json", "as_json", is_flag=True, help="Print the export summary as JSON.")
def export_cmd(package: Path, out: Path, runs: tuple[Path, ...], include_answers: bool, date: str | None,
               license_url: str | None, publisher_id: str | None, publisher_name: str | None, contact: str | None,
               force: bool, as_json: bool) -> None:
    """Export a task package as JSON-LD in an RO-Crate 1.2, validated with SHACL, with its RDFC-1.0 content hash.

    PROV-O for provenance (tasks derived from evidence, facts located in files), schema.org for the crate.
    Offline: every context ships in ontology/. Exit 1 when the export fails the shapes (the report says where).
    The export is written beside --out and renamed into place once it conforms: a failed export leaves
    nothing. An --out that is a symbolic link is refused; one that is not empty needs --force.

    \b
    Examples:
      voe export out/pkg --out out/crate
      voe export out/pkg --out out/crate-full --runs out/run-random --include-answers
      voe export out/pkg --out out/crate --publisher https://ror.org/05xpvk416 --contact mailto:data@example.org
    """
    from voe.export.crate import SOURCE_TERMS, Publisher, export_package

    if (publisher_name is not None or contact is not None) and publisher_id is None:
        raise UsageError("--publisher-name and --contact describe a --publisher URL: give it too")
    publisher = (Publisher(id=publisher_id, name=publisher_name or publisher_id, contact=contact)
                 if publisher_id else None)
    summary = export_package(package, out, include_answers=include_answers, runs=runs, date=date,
                             license_url=license_url, force=force, publisher=publisher)
    if as_json:
        emit_json(summary.model_dump())
        return
    ran = f", {summary.runs} runs ({summary.trajectories} trajectories)" if runs else ""
    answers = f", {summary.answers} verifier-only answers" if include_answers else ""
    if summary.verdicts:
        answers += f" and {summary.verdicts} verdicts"
    click.echo(f"exported {summary.tasks} tasks, {summary.evidence} evidence objects{ran}{answers} to {out} "
               f"(content hash {summary.content_hash})")
    if summary.publisher is None:
        click.echo("note: the crate names no publisher (RO-Crate recommends one): pass --publisher ROR_OR_URL "
                   "--publisher-name NAME --contact mailto:ADDRESS", err=True)
    if SOURCE_TERMS in summary.license:
        click.echo("note: no source record states a license, so the crate says their archives' terms apply: pass "
                   "--license URL to state one", err=True)


@cli.command("validate")
@click.argument("crate", metavar="CRATE", type=click.Path(path_type=Path, file_okay=False))
@click.option("--severity", type=click.Choice(["REQUIRED", "RECOMMENDED", "OPTIONAL"], case_sensitive=False),
              default="RECOMMENDED",
              show_default=True, help="The lowest RO-Crate requirement level checked.")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
def validate_cmd(crate: Path, severity: str, as_json: bool) -> None:
    """Check an export with the ecosystem's own tools, offline: roc-validator (the RO-Crate 1.2 profile, at
    --severity and above) and mlcroissant (croissant.json). Exit 1 when either finds anything.

    The RO-Crate context comes from the copy voe ships, through the validator's own cache, seeded here; no
    network is used. Needs the validate extra (pip install 'voe-evidence[validate]').

    \b
    Examples:
      voe validate out/crate
      voe validate out/crate --severity REQUIRED --json
    """
    require("validate", "voe validate")
    from voe.export.validate import validate_crate

    findings = validate_crate(crate, severity)
    if as_json:
        emit_json([f.__dict__ for f in findings])
    else:
        for tool in ("roc-validator", "mlcroissant"):
            mine = [f for f in findings if f.tool == tool]
            click.echo(f"{tool}: {len(mine)} finding(s)" + (":" if mine else ""))
            # one line per check: the same finding on every File entity would bury the rest
            for (sev, check, message), n in Counter((f.severity, f.check, f.message) for f in mine).items():
                click.echo(f"  {sev:<11} {check}: {message}" + (f" ({n} entities)" if n > 1 else ""))
    sys.exit(1 if findings else 0)


@cli.command("export-training")
@click.argument("package", metavar="PKG", type=click.Path(path_type=Path, file_okay=False))
@click.option("--runs", "runs", multiple=True, metavar="RUN", type=click.Path(path_type=Path, file_okay=False),
              help="A run folder of this package: its valid trajectories, lost-value steps and labels; repeatable.")
@click.option("--format", "formats", multiple=True, type=click.Choice(["sft", "preference", "value"]),
              help="Which training set(s) to write (default: all three); repeatable.")
@click.option("--out", "out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Folder for FORMAT/<split>.jsonl, schema/, training.json and the dataset card README.md.")
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
@artifact_force_option("training set")
def export_training_cmd(package: Path, runs: tuple[Path, ...], formats: tuple[str, ...], out: Path,
                        as_json: bool, force: bool) -> None:
    """Training sets from a package and its runs (DESIGN §10), split by workflow (no workflow in two splits).

    sft: chat lines of the reference and of valid, clean run trajectories, as a json-protocol agent sees them;
    preference: at one state, an optimal action against the action a run took that lost value, with both
    values; value: (state, action, value) rows for every state of every task. Prompts hold only what a policy
    may see; values and chosen actions come from the verifier's labels (`voe label`). Loads with Hugging
    Face `datasets.load_dataset(OUT, FORMAT)`.

    \b
    Examples:
      voe export-training out/pkg --out out/training
      voe export-training out/pkg --runs out/run-random --format preference --out out/prefs --json
    """
    from voe.export.training import FORMATS, export_training

    with written_whole(out, "training set", force=force) as folder:
        info = export_training(package, runs, folder, formats or FORMATS)
    if as_json:
        emit_json(info.model_dump())
        return
    for fmt, splits in info.counts.items():
        merged = info.merged.get(fmt, 0)
        click.echo(f"{fmt}: " + ", ".join(f"{splits.get(split, 0)} {split}" for split in ("train", "validation", "test"))
                   + (f" ({merged} identical rows merged into others, counted)" if merged else "") + f" -> {out / fmt}")
    click.echo("workflows: " + ", ".join(f"{len(ids)} {split}" for split, ids in info.workflows.items()))
    for warning in info.warnings:
        click.echo(f"warning: {warning}", err=True)


@cli.command("import-package")
@click.argument("crate", metavar="CRATE", type=click.Path(path_type=Path, file_okay=False))
@click.option("--out", "out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Folder for the rebuilt package (tasks.jsonl, evidence.jsonl, answers.jsonl, manifest.json).")
@artifact_force_option("package")
def import_package_cmd(crate: Path, out: Path, force: bool) -> None:
    """Rebuild a task package from an export made with --include-answers; it runs and scores as the original.

    The crate's files are checked against their recorded sha256 and validated first; nothing is written unless
    the rebuilt package has the exported package's content hash (exit 1 otherwise).

    \b
    Examples:
      voe import-package out/crate-full --out out/pkg-again
    """
    from voe.artifacts.package import load_package
    from voe.export.rebuild import import_package

    with written_whole(out, "package", force=force) as folder:
        import_package(crate, folder)
    views, evidence, answers, manifest = load_package(out)
    click.echo(f"rebuilt package {out} from {crate}: {len(views)} tasks, {len(evidence)} evidence objects, "
               f"{len(answers)} answers (content hash {manifest.content_hash})")
