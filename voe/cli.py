"""The `voe` command line: a thin layer over the library (ingest, voe.neo4j_server, voe.graph).

Exit codes (DESIGN §8): 0 ok, 1 the work found a problem, 2 bad usage or bad input.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from voe import __version__
from voe.errors import VoeError

F = TypeVar("F", bound=Callable[..., Any])


def _emit_json(payload: Any) -> None:
    click.echo(json.dumps(payload, indent=2, sort_keys=False))


def _quiet_option(fn: F) -> F:
    return click.option("--quiet", "-q", is_flag=True,
                        help="No progress on stderr (messages and bars; --json does not turn them off).")(fn)


def _reporter(quiet: bool) -> Any:
    from voe.progress import Progress

    return Progress(enabled=not quiet)


def _progress(enabled: bool) -> Callable[[str], None]:
    return (lambda msg: click.echo(msg, err=True)) if enabled else (lambda _msg: None)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="voe")
def cli() -> None:
    """voe compiles a published experiment archive (NIST PDR / AM Bench records) into a Neo4j
    provenance graph in which every fact points back to the exact place in the file it came from.

    \b
    A whole session:
      voe db up                                    # a local Neo4j (Bolt 7687, Browser 7474)
      voe ingest ../shared/archives/mds2-4103      # records into the provenance graph
      voe compile --out out/pkg                    # decision moments -> realized-only tasks
      voe run out/pkg --policy random --out out/run-random
      voe score out/run-random                     # Cypher verifiers, metrics, codebook
      voe report out/run-random --out out/report   # Markdown/HTML with intervals and plots
      voe export out/pkg --out out/crate           # JSON-LD RO-Crate (+ Croissant)
      voe browse TASK_ID                           # review a task in Neo4j Browser
      voe db down

    Connection settings come from NEO4J_URI, NEO4J_USER, NEO4J_PASSWORD and NEO4J_DATABASE
    (default bolt://127.0.0.1:7687, no auth, database neo4j).

    Exit codes: 0 ok, 1 the work found a problem, 2 bad usage or bad input.
    """


# ---------------------------------------------------------------------------------------- db
def _server_options(fn: F) -> F:
    fn = click.option("--instance", default="default", show_default=True,
                      help="Name of the local server; each has its own data folder.")(fn)
    fn = click.option("--bolt-port", default=7687, show_default=True, type=int, help="Bolt port on 127.0.0.1.")(fn)
    fn = click.option("--http-port", default=7474, show_default=True, type=int,
                      help="HTTP port on 127.0.0.1 (Neo4j Browser at /browser/).")(fn)
    return fn


@cli.group()
def db() -> None:
    """Start, stop and inspect a local Neo4j Community server.

    The server is assembled from Maven Central jars (Java 17+ and Maven needed; the jars, about
    140 MB, are fetched once into ~/.cache/voe or $VOE_CACHE_DIR). No Docker engine is required;
    users with Docker can run `docker compose up -d` instead.

    \b
    Examples:
      voe db up --instance mine --bolt-port 27687 --http-port 27474
      voe db status --json
      voe db down
    """


@db.command("up")
@_server_options
@click.option("--heap", default="2g", show_default=True, help="JVM heap for Neo4j.")
@click.option("--pagecache", default="512m", show_default=True, help="Neo4j page cache size.")
@click.option("--timeout", default=180.0, show_default=True, help="Seconds to wait until Bolt answers.")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def db_up(instance: str, bolt_port: int, http_port: int, heap: str, pagecache: str, timeout: float,
          as_json: bool) -> None:
    """Start the local Neo4j (resolving its jars on first use) and wait until it answers on Bolt.

    \b
    Examples:
      voe db up                      # Bolt 127.0.0.1:7687, Browser http://127.0.0.1:7474/browser/
      voe db up --heap 1g --pagecache 256m --json
    """
    from voe.neo4j_server import LocalNeo4j

    server = LocalNeo4j(instance, bolt_port, http_port, heap, pagecache, log=_progress(not as_json))
    status = server.up(timeout=timeout)
    if as_json:
        _emit_json(status.model_dump())
        return
    click.echo(f"Neo4j {status.version} is up (pid {status.pid})")
    click.echo(f"  Bolt:    {status.bolt_uri}   (export NEO4J_URI={status.bolt_uri})")
    click.echo(f"  Browser: {status.browser_url}   (connect without authentication)")
    click.echo(f"  Data:    {status.home}")


@db.command("down")
@_server_options
def db_down(instance: str, bolt_port: int, http_port: int) -> None:
    """Stop the local Neo4j cleanly (it checkpoints its data before exiting).

    \b
    Examples:
      voe db down
      voe db down --instance test --bolt-port 17687 --http-port 17474
    """
    from voe.neo4j_server import LocalNeo4j

    stopped = LocalNeo4j(instance, bolt_port, http_port).down()
    click.echo("Neo4j stopped" if stopped else "Neo4j was not running")


@db.command("status")
@_server_options
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def db_status(instance: str, bolt_port: int, http_port: int, as_json: bool) -> None:
    """Say whether the local Neo4j runs and answers on Bolt (exit 1 when it does not).

    \b
    Examples:
      voe db status || voe db up
    """
    from voe.neo4j_server import LocalNeo4j

    status = LocalNeo4j(instance, bolt_port, http_port).status()
    if as_json:
        _emit_json(status.model_dump())
    elif status.running:
        click.echo(f"running: Neo4j {status.version}, pid {status.pid}, {status.bolt_uri}, {status.browser_url}")
    else:
        click.echo(f"not running ({status.bolt_uri}); start it with `voe db up`")
    if not status.running:
        sys.exit(1)


@db.command("clear")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def db_clear(yes: bool) -> None:
    """Delete every node and relationship in the database NEO4J_URI points at.

    \b
    Examples:
      voe db clear --yes
    """
    from voe.graph import Graph

    with Graph() as graph:
        graph.verify()
        if not yes:
            click.confirm(f"Delete the whole graph at {graph.settings.uri}?", abort=True)
        graph.clear()
    click.echo("graph cleared")


# ---------------------------------------------------------------------------------------- ingest
@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--schemas", "schema_dir", type=click.Path(path_type=Path, file_okay=False),
              help="Folder with the NERDm schemas (nerdm/, ejsonschema/). Default: $VOE_SCHEMA_DIR, "
                   "else ../shared/archives/schemas beside the checkout.")
@click.option("--no-schema", is_flag=True, help="Skip NERDm schema validation.")
@click.option("--strict", is_flag=True, help="Exit 1 when any defect is found.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@_quiet_option
def ingest(paths: tuple[Path, ...], schema_dir: Path | None, no_schema: bool, strict: bool, as_json: bool,
           quiet: bool) -> None:
    """Ingest archive folders into the graph.

    Each PATH is, by content: a NERDm record folder (nerdm.json plus payload files and .sha256
    sidecars at their NERDm filepath) or a nerdm.json file; a plain folder of files (every file
    a component); or a facts catalog (FACTS.md: records whose bytes we do not hold, marked
    provenance "reconstructed"). Held files are parsed by content (PDF, CSV, XLSX, XML, NC
    programs, STEP headers, build logs, thermocouple exports) into facts, each with a
    SourceLocation (page+bbox, sheet+cell, line, XPath or JSON pointer) and evidence objects.
    Re-ingesting the same input changes nothing. A path that cannot be read is reported and the others still ingest
    (exit 2). Defects are findings, not failures: exit 0 unless --strict.

    \b
    Examples:
      voe ingest ../shared/archives/mds2-4103 ../shared/archives/mds2-2525 --json
      voe ingest ../shared/archives/amb2025-template ../shared/archives/FACTS.md
    """
    from ingest import ingest_paths
    from voe.graph import Graph

    if schema_dir is not None and not schema_dir.is_dir():
        raise click.BadParameter(f"{schema_dir} is not a folder", param_hint="--schemas")
    reporter = _reporter(quiet)
    with Graph() as graph:
        graph.verify()
        with reporter.bar("ingest", len(paths), "paths") as bar:
            report = ingest_paths(list(paths), graph, schema_dir=schema_dir, validate_schema=not no_schema,
                                  progress=reporter.say, bar=bar.update)
    if as_json:
        _emit_json(report.model_dump())
    else:
        click.echo(f"records:    {report.records}")
        click.echo("components: " + (", ".join(f"{k} {v}" for k, v in report.components.items()) or "0"))
        click.echo(f"files held: {report.files} ({', '.join(f'{k} {v}' for k, v in report.formats.items()) or 'none parsed'})")
        click.echo(f"facts:      {report.facts} located facts ({report.pages} PDF pages, {report.cells} cells)")
        click.echo("evidence:   " + (", ".join(f"{k} {v}" for k, v in report.evidence.items()) or "none"))
        click.echo("defects:    " + (", ".join(f"{k} {v}" for k, v in report.defects.items()) or "none"))
        click.echo(f"graph:      {report.graph['nodes_created']} nodes and "
                   f"{report.graph['relationships_created']} relationships created")
        click.echo(f"seconds:    {report.seconds}")
        for err in report.errors:
            where = err.path + (f"#{err.pointer}" if err.pointer else "")
            click.echo(f"error: {where}: {err.message}", err=True)
    code = report.exit_code
    if code == 0 and strict and report.defects:
        code = 1
    sys.exit(code)


# ---------------------------------------------------------------------------------------- fetch
@cli.command()
@click.argument("record")
@click.option("--into", "into", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Folder to write nerdm.json and the files into (created if missing).")
@click.option("--include", multiple=True, metavar="GLOB",
              help="Only files whose NERDm filepath matches (repeatable, e.g. '*.csv'). Default: every file.")
@click.option("--max-bytes", type=click.IntRange(min=0),
              help="Stop once this many file bytes have arrived (counted as they arrive); the rest is skipped.")
@click.option("--base-url", envvar="VOE_PDR_BASE_URL", help="PDR base URL (default https://data.nist.gov).")
@click.option("--retries", default=4, show_default=True, help="Retries per file after the first attempt.")
@click.option("--timeout", default=30.0, show_default=True,
              help="Seconds one read may stall before the request is retried (per read; see --file-deadline).")
@click.option("--file-deadline", default=3600.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Seconds one file (or the NERDm record) may take, all attempts included.")
@click.option("--deadline", default=21600.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Seconds the whole run may take; files not reached by then fail.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@_quiet_option
def fetch(record: str, into: Path, include: tuple[str, ...], max_bytes: int | None, base_url: str | None,
          retries: int, timeout: float, file_deadline: float, deadline: float, as_json: bool, quiet: bool) -> None:
    """Download a NIST PDR record (e.g. mds2-2525) and its files into the layout `voe ingest` reads.

    Files are checked against the NERDm size and checksum (in the algorithm it names), resumed
    after a cut connection (HTTP Range, verifiable files only) and retried with backoff; a
    partial or corrupt file is never left under its final name. A file with no usable checksum
    is reported unverified. Redirects go only to the same host over HTTPS. Re-running fetches
    only what is missing. Exit 1 when any file failed.

    \b
    Examples:
      voe fetch mds2-2525 --into data/mds2-2525 --include '*.csv' --include '*.sha256'
      voe ingest data/mds2-2525
    """
    from ingest.fetch import as_json as report_json
    from ingest.fetch import fetch as do_fetch

    report = do_fetch(record, into, include=list(include) or None, max_bytes=max_bytes, base_url=base_url,
                      retries=retries, timeout=timeout, file_deadline=file_deadline, deadline=deadline,
                      progress=_reporter(quiet).say)
    if as_json:
        _emit_json(report_json(report))
    else:
        ok = sum(1 for f in report.files if f.status in ("ok", "exists", "unverified"))
        unverified = f" ({len(report.unverified)} unverified)" if report.unverified else ""
        click.echo(f"{report.record}: {ok} of {len(report.files)} files in place{unverified}, {report.bytes} B "
                   f"downloaded in {report.seconds} s -> {report.into}")
        for f in report.unverified:
            click.echo(f"unverified: {f.filepath}: {f.note}", err=True)
        for f in report.failed:
            click.echo(f"failed: {f.filepath}: {f.error}", err=True)
    sys.exit(1 if report.failed else 0)


# ---------------------------------------------------------------------------------------- compile
def _model_client(spec: str, option: str, base_url: str | None, response_format: str) -> Any:
    from voe.errors import UsageError
    from voe.llm import Budget, ChatClient, ResponseCache, Settings, default_cache_dir

    if not spec.startswith("openai:") or not spec.removeprefix("openai:"):
        raise UsageError(f"{option} {spec!r}: expected openai:MODEL")
    settings = Settings(model=spec.removeprefix("openai:"), protocol="json", response_format=response_format)
    return ChatClient(settings, base_url, cache=ResponseCache(default_cache_dir()), run_cache=ResponseCache(None),
                      budget=Budget(), prices={})


def _annotator(spec: str | None, base_url: str | None, response_format: str) -> Any:
    if spec is None:
        return None
    from compiler.annotate import LLMAnnotator

    return LLMAnnotator(_model_client(spec, "--annotator", base_url, response_format))


def _judge(spec: str | None, base_url: str | None) -> Any:
    if spec is None:
        return None
    from compiler.judge import Judge

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
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@_quiet_option
def compile_cmd(out: Path, archives: tuple[Path, ...], annotator: str | None, judge: str | None,
                base_url: str | None, response_format: str, as_json: bool, quiet: bool) -> None:
    """Compile realized-only decision tasks from the graph into a versioned task package.

    Each subject item of the graph becomes one decision (compiler/moments.py): a packet whose
    menu holds only evidence the archive really has. A request returns the archive's facts
    about an item, never a verdict. Policy-visible tasks and verifier-only answers go to
    separate files; the content hash is the same every time the same graph is compiled.

    \b
    The release gate runs on every package and is recorded in manifest.json: the reference
    valid on every task, every null policy and shortcut probe valid on at most 50% of the
    tasks, the text-only probe on at most 40%. A package that fails the gate is still
    written; the command prints the gate table and exits 1.

    \b
    Examples:
      voe compile --out out/pkg --json
      voe compile --out out/pkg --archive ../shared/archives/mds2-4103
    """
    from compiler.package import compile_package, gate_table
    from ingest import ingest_paths
    from voe.graph import Graph

    with Graph() as graph:
        graph.verify()
        if archives:
            reporter = _reporter(quiet)
            with reporter.bar("ingest", len(archives), "paths") as bar:
                report = ingest_paths(list(archives), graph, progress=reporter.say, bar=bar.update)
            if report.errors:
                for err in report.errors:
                    click.echo(f"error: {err.path}: {err.message}", err=True)
                sys.exit(2)
        summary = compile_package(graph, out, annotator=_annotator(annotator, base_url, response_format),
                                  judge=_judge(judge, base_url))
    if as_json:
        _emit_json(summary.model_dump())
    else:
        click.echo(f"{summary.tasks} tasks in {summary.workflows} workflows "
                   f"({', '.join(f'{k} {v}' for k, v in summary.families.items())})")
        click.echo(f"{summary.evidence_entries} evidence entries over {summary.canonical_evidence} canonical evidence ids")
        click.echo(f"{summary.decisions} distinct decisions; the largest group of tasks sharing one binding item: "
                   f"{summary.largest_item_group}")
        click.echo(f"content hash {summary.content_hash} -> {summary.out}")
        click.echo(gate_table(summary))
    if summary.tasks == 0:
        click.echo("error: the graph holds no decision moments (ingest an archive first, or pass --archive)", err=True)
        sys.exit(1)
    if not summary.gate_passed:
        if as_json:
            click.echo(gate_table(summary), err=True)
        click.echo("error: the package fails the release gate (written anyway; see the table)", err=True)
        sys.exit(1)


# ---------------------------------------------------------------------------------------- run / score / report
def _policy_names() -> list[str]:
    from replay.registry import names

    return names()


def _check_policy(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if value.startswith(("openai:", "python:")) and len(value.split(":", 1)[1]) > 0:
        return value
    if value not in _policy_names():
        raise click.BadParameter(f"{value!r}: choose a baseline or probe ({', '.join(_policy_names())}), "
                                 "openai:MODEL or python:MODULE:FUNCTION")
    return value


class _PolicyOption(click.Option):
    """--policy, whose help names the registered policies only when help is shown: the registry imports the
    task models, which `voe --help` and every other command would otherwise pay for at start-up."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        self.help = (self.help or "").replace("{policies}", ", ".join(_policy_names()))
        return super().get_help_record(ctx)


@cli.command("run")
@click.argument("package", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--policy", cls=_PolicyOption, required=True, callback=_check_policy,
              help="A baseline or shortcut probe ({policies}), openai:MODEL (any "
                   "OpenAI-compatible endpoint) or python:MODULE:FUNCTION (your own policy).")
@click.option("--passes", default=1, show_default=True, type=click.IntRange(1), help="Replicate passes over every task.")
@click.option("--seed", default=0, show_default=True,
              help="Seed for the random policy and python: policies (per task and pass); sent to the model as "
                   "`seed` where the server honours it.")
@click.option("--out", "out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Run folder: steps.jsonl, trajectories.jsonl, run.json (agents also transcripts.jsonl, "
                   "timing.jsonl, parts/ and responses/).")
@click.option("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 (default: "
                                 "OPENAI_BASE_URL, else the OpenAI API). The key comes from OPENAI_API_KEY.")
@click.option("--protocol", type=click.Choice(["tools", "json"]), default="tools", show_default=True,
              help="tools: one function per action; json: one JSON object per turn.")
@click.option("--response-format", "response_format",
              type=click.Choice(["json_schema", "json_object", "json_object_schema", "none"]),
              default="json_schema", show_default=True,
              help="With --protocol json: how the reply format is requested (servers differ; json_object_schema "
                   "is llama.cpp's form).")
@click.option("--temperature", default=0.0, show_default=True, type=float,
              help="Sampling temperature sent to the model (recorded in run.json).")
@click.option("--max-tokens", type=click.IntRange(1), help="Longest reply the model may write, in tokens.")
@click.option("--concurrency", default=4, show_default=True, type=click.IntRange(1),
              help="Trajectories in flight at once (the output does not depend on it).")
@click.option("--max-requests", type=click.IntRange(0), help="Stop cleanly after this many API calls (cache hits "
                                                              "are free).")
@click.option("--max-cost", type=float, help="Stop cleanly once this much (USD, from --prices) is spent.")
@click.option("--prices", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help='Price table JSON {model: {"input_per_mtok": USD, "output_per_mtok": USD}} (or VOE_PRICES).')
@click.option("--timeout", default=120.0, show_default=True, type=float, help="Seconds per API call.")
@click.option("--resume", is_flag=True, help="Continue an interrupted agent run in --out where it stopped.")
@click.option("--no-cache", "no_cache", is_flag=True,
              help="Do not reuse answers from the shared response cache (VOE_CACHE_DIR/llm).")
@click.option("--json", "as_json", is_flag=True, help="Print the run info as JSON.")
@_quiet_option
def run_cmd(package: Path, policy: str, passes: int, seed: int, out: Path, base_url: str | None, protocol: str,
            response_format: str, temperature: float, max_tokens: int | None, concurrency: int,
            max_requests: int | None, max_cost: float | None, prices: Path | None, timeout: float, resume: bool,
            no_cache: bool, as_json: bool, quiet: bool) -> None:
    """Run a policy over every task of a package through the replay environment.

    One JSON line per step (steps.jsonl) and one summary per trajectory (trajectories.jsonl).
    Only the reference policy reads the verifier-only answers. An agent run (openai:MODEL) also
    records every conversation (transcripts.jsonl) and can be interrupted and resumed.

    \b
    Examples:
      voe run out/pkg --policy reference --passes 3 --seed 1 --out out/run-reference
      voe run out/pkg --policy openai:gpt-4o-mini --base-url http://127.0.0.1:8000/v1 --out out/run-model
      voe run out/pkg --policy python:mypolicy:act --out out/run-mine
    """
    if policy.startswith("openai:"):
        from replay.agent_run import run_agent
        from voe.llm import Settings, load_prices

        settings = Settings(model=policy.removeprefix("openai:"), temperature=temperature, max_tokens=max_tokens,
                            seed=seed, protocol=protocol, response_format=response_format)

        reporter = _reporter(quiet)
        bar = reporter.bar("run", 0, "trajectories")

        def progress(done: int, total: int) -> None:
            bar.update(done, total)

        with bar:
            info = run_agent(package, settings.model, out, passes=passes, seed=seed, base_url=base_url,
                             settings=settings, concurrency=concurrency, max_requests=max_requests,
                             max_cost=max_cost, prices=load_prices(prices), resume=resume, use_cache=not no_cache,
                             timeout=timeout, progress=progress)
    else:
        from replay.runner import run_policy

        with _reporter(quiet).bar("run", 0, "trajectories") as bar:
            info = run_policy(package, policy, passes, seed, out, progress=bar.update)
    if as_json:
        _emit_json(info.model_dump(exclude_none=True))
    else:
        extra = f", {info.calls} model calls, {info.tokens_in}+{info.tokens_out} tokens" if info.calls is not None else ""
        if info.cost is not None:
            extra += f", cost {info.cost}"
        click.echo(f"{info.run_id}: {info.trajectories} trajectories in {info.seconds} s{extra} -> {out}")


@cli.command("score")
@click.argument("run_dir", metavar="RUN", type=click.Path(path_type=Path, file_okay=False))
@click.option("--compare", type=click.Path(path_type=Path, file_okay=False),
              help="A second run on the same tasks: paired difference of validity.")
@click.option("--json", "as_json", is_flag=True, help="Print the metrics as JSON.")
def score_cmd(run_dir: Path, compare: Path | None, as_json: bool) -> None:
    """Verify a run with the graph-query verifiers and print its metrics and codebook.

    Trajectories are written to the graph (Run, Trajectory, Step) and checked by Cypher:
    action class accepted, payload bound to pulled evidence, grounded.

    \b
    Examples:
      voe score out/run-random --compare out/run-reference --json
    """
    from verifiers.metrics import paired
    from verifiers.score import score_run
    from voe.graph import Graph

    with Graph() as graph:
        graph.verify()
        summary, scores = score_run(graph, run_dir)
        if compare is not None:
            other, other_scores = score_run(graph, compare)
            summary["paired"] = {"against": other["policy"], **paired(scores, other_scores)}
    if as_json:
        _emit_json(summary)
        return
    egv = summary["evidence_grounded_valid"]
    click.echo(f"{summary['policy']}: {summary['tasks']} tasks x {summary['passes']} passes")
    flat = " no variance between passes," if "no variance" in egv["method"] else ""
    click.echo(f"  evidence-grounded valid {egv['mean']:.3f} (95% CI {egv['ci95'][0]:.3f}-{egv['ci95'][1]:.3f},{flat} "
               f"{egv['count']} of {egv['n']})")
    click.echo(f"  clustered by workflow ({egv['clusters']} clusters): 95% CI {egv['ci95_cluster'][0]:.3f}-"
               f"{egv['ci95_cluster'][1]:.3f} (cluster SE), {egv['ci95_cluster_bootstrap'][0]:.3f}-"
               f"{egv['ci95_cluster_bootstrap'][1]:.3f} (cluster bootstrap)")
    click.echo(f"  action valid {summary['action_valid']['mean']:.3f}, useful precision {summary['useful_precision']:.3f}, "
               f"regret {summary['evidence_regret']:.2f}, cost score {summary['cost_score']:.3f}, "
               f"over-submit {summary['over_submit']:.3f}")
    for family, f in summary["by_family"].items():
        click.echo(f"  {family:<24} {f['evidence_grounded_valid']['mean']:.3f} ({f['tasks']} tasks)")
    click.echo("  codebook: " + ", ".join(f"{k} {v}" for k, v in summary["codebook"].items()))
    if "paired" in summary:
        p = summary["paired"]
        click.echo(f"  paired vs {p['against']}: {p.get('mean_difference', 0):+.3f} over {p['tasks']} tasks")


@cli.command("report")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path, file_okay=False))
@click.option("--out", "out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Folder for report.md, report.html and the plots.")
@click.option("--against", type=click.Path(path_type=Path, file_okay=False),
              help="A run to compare every run with: paired difference of validity on the same tasks.")
def report_cmd(runs: tuple[Path, ...], out: Path, against: Path | None) -> None:
    """Write a Markdown/HTML report for one or more scored runs: headline table with intervals,
    per-family breakdown, failure codebook distribution, model usage (tokens, cost) and plots (PNG/SVG).

    Reads what `voe score` wrote into each run (summary.json, scores.jsonl): no Neo4j needed; a run not scored
    yet, or changed since, is refused with the command that scores it.

    \b
    Examples:
      voe report out/run-reference out/run-random --out out/report --against out/run-random
    """
    from verifiers.metrics import paired
    from verifiers.report import write_report
    from verifiers.score import load_scored

    scored = [load_scored(r) for r in runs]  # what `voe score` wrote: no Neo4j needed
    pairs = None
    if against is not None:
        base_summary, base = load_scored(against)
        pairs = [{**paired(s, base), "against": base_summary["policy"]} for _, s in scored]
    path = write_report([s for s, _ in scored], out, pairs)
    click.echo(f"report written to {path}")


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
              help="The crate's license (default: a note that the source records' terms apply).")
@click.option("--json", "as_json", is_flag=True, help="Print the export summary as JSON.")
def export_cmd(package: Path, out: Path, runs: tuple[Path, ...], include_answers: bool, date: str | None,
               license_url: str | None, as_json: bool) -> None:
    """Export a task package as JSON-LD in an RO-Crate 1.2, validated with SHACL, with its RDFC-1.0 content hash.

    PROV-O for provenance (tasks derived from evidence, facts located in files), schema.org for the crate.
    Offline: every context ships in ontology/. Exit 1 when the export fails the shapes (the report says where).

    \b
    Examples:
      voe export out/pkg --out out/crate
      voe export out/pkg --out out/crate-full --runs out/run-random --include-answers
    """
    from export.jsonld import export_package

    summary = export_package(package, out, include_answers=include_answers, runs=runs, date=date,
                             license_url=license_url)
    if as_json:
        _emit_json(summary.model_dump())
        return
    ran = f", {summary.runs} runs ({summary.trajectories} trajectories)" if runs else ""
    answers = f", {summary.answers} verifier-only answers" if include_answers else ""
    if summary.verdicts:
        answers += f" and {summary.verdicts} verdicts"
    click.echo(f"exported {summary.tasks} tasks, {summary.evidence} evidence objects{ran}{answers} to {out} "
               f"(content hash {summary.content_hash})")


@cli.command("import-package")
@click.argument("crate", metavar="CRATE", type=click.Path(path_type=Path, file_okay=False))
@click.option("--out", "out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Folder for the rebuilt package (tasks.jsonl, evidence.jsonl, answers.jsonl, manifest.json).")
def import_package_cmd(crate: Path, out: Path) -> None:
    """Rebuild a task package from an export made with --include-answers; it runs and scores as the original.

    The crate's files are checked against their recorded sha256 and validated first; nothing is written unless
    the rebuilt package has the exported package's content hash (exit 1 otherwise).

    \b
    Examples:
      voe import-package out/crate-full --out out/pkg-again
    """
    from compiler.package import load_package
    from export.rebuild import import_package

    import_package(crate, out)
    views, evidence, answers, manifest = load_package(out)
    click.echo(f"rebuilt package {out} from {crate}: {len(views)} tasks, {len(evidence)} evidence objects, "
               f"{len(answers)} answers (content hash {manifest.content_hash})")


@cli.command("browse")
@click.argument("task_id", required=False)
@click.option("--query", "name", help="A named query of cypher/browser/ (default: task_evidence with TASK_ID).")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="A parameter of the query (repeatable).")
@click.option("--http-url", default="http://127.0.0.1:7474", show_default=True,
              help="Where the Browser is served (the local server's HTTP port).")
@click.option("--style", "show_style", is_flag=True, help="Print the Browser style (GraSS) to paste after `:style`.")
@click.option("--json", "as_json", is_flag=True, help="Print the URL, the query and the named queries as JSON.")
def browse_cmd(task_id: str | None, name: str | None, params: tuple[str, ...], http_url: str, show_style: bool,
               as_json: bool) -> None:
    """Print the Neo4j Browser URL that opens with a review query ready to run.

    With TASK_ID: the task's menu, the evidence behind it and the source locations of its facts.
    Other named queries (--query): record_defects (--param ark=...), admission (--param package=...),
    trajectory (--param trajectory_id=...), tasks (--param package=...). The Browser connects to
    NEO4J_URI without authentication; --style prints ontology/browser.grass for `:style`.

    \b
    Examples:
      voe browse TASK_ID
      voe browse --query record_defects --param ark=ark:/88434/mds2-4103
      voe browse --style
    """
    from voe.browse import browser_url, named_queries, query_text, style
    from voe.config import Neo4jSettings
    from voe.errors import UsageError

    if show_style:
        click.echo(style())
        return
    values = {}
    for p in params:
        key, sep, value = p.partition("=")
        if not sep:
            raise UsageError(f"--param {p!r}: expected NAME=VALUE")
        values[key] = value
    if task_id is not None:
        values.setdefault("task_id", task_id)
        name = name or "task_evidence"
    query = query_text(name, values) if name else None
    url = browser_url(http_url, Neo4jSettings.from_env().uri, query)
    if as_json:
        _emit_json({"url": url, "query": query, "queries": named_queries()})
        return
    click.echo(url)
    if query is None:
        click.echo("named queries (voe browse --query NAME --param ...):", err=True)
        for q, what in named_queries().items():
            click.echo(f"  {q:<16} {what}", err=True)


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2)
    except VoeError as exc:
        click.echo(f"voe: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except SystemExit:
        raise
