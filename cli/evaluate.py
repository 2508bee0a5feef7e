"""`voe run`, `voe score` and `voe report`: policies through the replay environment, verdicts, reports."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from voe.artifacts.run import written_whole
from voe.cli.app import (
    artifact_force_option,
    claim_out,
    cli,
    emit_json,
    force_option,
    progress_reporter,
    quiet_option,
    terminate_as_interrupt,
)
from voe.errors import UsageError
from voe.extras import require
from voe.llm import DEFAULT_MAX_TOKENS

if TYPE_CHECKING:
    from voe.llm import Protocol, ResponseFormat


def policy_names() -> list[str]:
    from voe.replay.registry import names

    return names()


def _check_policy(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if value.startswith(("openai:", "python:")) and len(value.split(":", 1)[1]) > 0:
        return value
    if value not in policy_names():
        raise click.BadParameter(f"{value!r}: choose a baseline or probe ({', '.join(policy_names())}), "
                                 "openai:MODEL or python:MODULE:FUNCTION")
    return value


class _PolicyOption(click.Option):
    """--policy, whose help names the registered policies only when help is shown: the registry imports the
    task models, which `voe --help` and every other command would otherwise pay for at start-up."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        self.help = (self.help or "").replace("{policies}", ", ".join(policy_names()))
        return super().get_help_record(ctx)


def _size(value: str, param: click.Parameter) -> int:
    """A size as the budgets write them (2GiB, 512M, 1073741824)."""
    from voe.ingest.payloads.limits import parse_size

    try:
        return parse_size(value)
    except ValueError as exc:
        raise click.BadParameter(f"{value!r} is not a size (e.g. 2GiB, 512MiB): {exc}", param=param) from None


@cli.command("run")
@click.argument("package", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--policy", cls=_PolicyOption, required=True, callback=_check_policy,
              help="A baseline or shortcut probe ({policies}), openai:MODEL (any "
                   "OpenAI-compatible endpoint) or python:MODULE:FUNCTION (your own policy, run in a child "
                   "process; on Linux with namespaces it cannot reach the answers, the package folder or the "
                   "graph; run.json says which sealing it had).")
@click.option("--passes", default=1, show_default=True, type=click.IntRange(1), help="Replicate passes over every task.")
@click.option("--seed", default=0, show_default=True,
              help="Seed for the random policy and python: policies (per task and pass); sent to the model as "
                   "`seed` where the server honours it.")
@click.option("--out", "out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Run folder: steps.jsonl, observations.jsonl, trajectories.jsonl, run.json (agents also transcripts.jsonl, "
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
@click.option("--max-tokens", type=click.IntRange(1), default=DEFAULT_MAX_TOKENS, show_default=True,
              help="Longest reply the model may write, in tokens (bounded: a local model left alone writes until its "
                   "context is full).")
@click.option("--concurrency", type=click.IntRange(1),
              help="Model calls in flight at most (default: 1 for a server on this machine, which serves one request "
                   "at a time unless started with more slots; 4 otherwise).")
@click.option("--max-requests", type=click.IntRange(0), help="Stop cleanly after this many API calls (cache hits "
                                                              "are free).")
@click.option("--max-cost", type=float, help="Stop cleanly once this much (USD, from --prices) is spent.")
@click.option("--prices", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help='Price table JSON {model: {"input_per_mtok": USD, "output_per_mtok": USD}} (or VOE_PRICES).')
@click.option("--timeout", default=120.0, show_default=True, type=float,
              help="Seconds one try of an API call may take, its whole answer included; a call makes up to 8 tries "
                   "with 0.5-8 s of backoff between (or the server's Retry-After).")
@click.option("--resume", is_flag=True, help="Continue an interrupted agent or python: run in --out where it "
                                             "stopped (its finished trajectories are kept as each ends).")
@click.option("--step-timeout", default=60.0, show_default=True, type=click.FloatRange(0, min_open=True),
              help="python: policies: seconds one step's answer may take; past it the trajectory ends "
                   "policy_timeout (scored) and a new process plays the next.")
@click.option("--policy-memory", default="2GiB", show_default=True, callback=lambda c, p, v: _size(v, p),
              help="python: policies: the address space of the policy's process; past it (or past its CPU or "
                   "answer-size limit) the trajectory ends policy_budget.")
@force_option
@click.option("--no-cache", "no_cache", is_flag=True,
              help="Do not reuse answers from the shared response cache (VOE_CACHE_DIR/llm).")
@click.option("--json", "as_json", is_flag=True, help="Print the run info as JSON.")
@quiet_option
def run_cmd(package: Path, policy: str, passes: int, seed: int, out: Path, base_url: str | None, protocol: Protocol,
            response_format: ResponseFormat, temperature: float, max_tokens: int | None, concurrency: int | None,
            max_requests: int | None, max_cost: float | None, prices: Path | None, timeout: float, resume: bool,
            step_timeout: float, policy_memory: int, force: bool, no_cache: bool, as_json: bool, quiet: bool) -> None:
    """Run a policy over every task of a package through the replay environment.

    One JSON line per step (steps.jsonl), one per observation a request returned (observations.jsonl)
    and one summary per trajectory (trajectories.jsonl).
    Only the reference policy reads the verifier-only answers. An agent run (openai:MODEL) also
    records every conversation (transcripts.jsonl) and can be interrupted and resumed.

    \b
    Examples:
      voe run out/pkg --policy reference --passes 3 --seed 1 --out out/run-reference
      voe run out/pkg --policy openai:gpt-4o-mini --base-url http://127.0.0.1:8000/v1 --out out/run-model
      voe run out/pkg --policy python:mypolicy:act --out out/run-mine
    """
    if resume and not policy.startswith(("openai:", "python:")):
        raise UsageError("--resume continues an agent run (openai:MODEL) or a python: policy's; other policies run "
                         "whole in seconds")
    claim_out(out, force=force, resume=resume)
    if force and not resume:
        from voe.artifacts.outdir import start_run_over

        start_run_over(out, policy)
    if policy.startswith("openai:"):
        from voe.llm import Settings, load_prices
        from voe.replay.agent_run import run_agent

        if concurrency is None:
            from urllib.parse import urlsplit

            from voe.settings import settings as environment

            host = urlsplit(base_url or environment().openai_base_url or "").hostname
            concurrency = 1 if host in ("127.0.0.1", "localhost", "::1") else 4
        settings = Settings(model=policy.removeprefix("openai:"), temperature=temperature, max_tokens=max_tokens,
                            seed=seed, protocol=protocol, response_format=response_format)

        reporter = progress_reporter(quiet)
        bar = reporter.bar("run", 0, "trajectories")

        def progress(done: int, total: int, retries: int = 0) -> None:
            bar.note = f"{retries} calls retried (rate limits, timeouts, server errors)" if retries else ""
            bar.update(done, total)

        with bar:
            info = run_agent(package, settings.model, out, passes=passes, seed=seed, base_url=base_url,
                             settings=settings, concurrency=concurrency, max_requests=max_requests,
                             max_cost=max_cost, prices=load_prices(prices), resume=resume, use_cache=not no_cache,
                             timeout=timeout, progress=progress)
    else:
        from voe.replay.runner import run_policy
        from voe.replay.sealed import PolicyLimits

        limits = PolicyLimits(step_timeout=step_timeout, memory=policy_memory)
        with progress_reporter(quiet).bar("run", 0, "trajectories") as bar:
            info = run_policy(package, policy, passes, seed, out, progress=bar.update, limits=limits, resume=resume)
    if as_json:
        emit_json(info.model_dump(exclude_none=True))
    else:
        extra = f", {info.calls} model calls, {info.tokens_in}+{info.tokens_out} tokens" if info.calls is not None else ""
        if info.cost is not None:
            extra += f", cost {info.cost}"
        click.echo(f"{info.run_id}: {info.trajectories} trajectories in {info.seconds} s{extra} -> {out}")
    audited(out)


def audited(out: Path) -> None:
    """Say the run's audit (replay/run_audit.py) when it failed: the run is kept, the command exits 1."""
    from voe.errors import VoeError
    from voe.replay.run_audit import read_audit

    audit = read_audit(out)
    if audit is not None and not audit["passed"]:
        raise VoeError(f"{out}: the run's audit failed: {len(audit['leaks'])} message(s) given to the policy carry "
                       f"verifier-only terms ({', '.join(sorted({x['kind'] for x in audit['leaks']}))}); see "
                       f"{out}/audit.json")


@cli.command("score")
@click.argument("run_dir", metavar="RUN", type=click.Path(path_type=Path, file_okay=False))
@click.option("--compare", type=click.Path(path_type=Path, file_okay=False),
              help="A second run on the same tasks: paired difference of validity.")
@click.option("--json", "as_json", is_flag=True, help="Print the metrics as JSON.")
def score_cmd(run_dir: Path, compare: Path | None, as_json: bool) -> None:
    """Verify a run with the graph-query verifiers and print its metrics and codebook.

    Trajectories are written to the graph (Run, Trajectory with its steps as lists, REQUESTED edges to the
    evidence the steps were answered with) and checked by Cypher:
    action class accepted, payload bound to pulled evidence, grounded.

    \b
    Examples:
      voe score out/run-random --compare out/run-reference --json
    """
    from voe.graph import Graph
    from voe.verifiers.metrics import paired
    from voe.verifiers.score import score_run

    with Graph() as graph:
        graph.verify()
        summary, scores = score_run(graph, run_dir)  # audits the run again (summary["audit"], audit.json)
        if compare is not None:
            other, other_scores = score_run(graph, compare)
            summary["paired"] = {"against": other["policy"], **paired(scores, other_scores)}
    if as_json:
        emit_json(summary)
        if not summary["audit"]["passed"]:
            audited(run_dir)
        return
    egv = summary["evidence_grounded_valid"]
    click.echo(f"{summary['policy']}: {summary['tasks']} tasks x {summary['passes']} passes"
               + (f" ({summary['unplayed']} never played, counted as not valid)" if summary.get("unplayed") else ""))
    click.echo(f"  evidence-grounded valid {egv['mean']:.3f} ({egv['count']} of {egv['n']}), 95% CI "
               f"{egv['ci95'][0]:.3f}-{egv['ci95'][1]:.3f} clustered by workflow and gold fact ({egv['clusters']} "
               f"clusters; cluster bootstrap {egv['ci95_cluster_bootstrap'][0]:.3f}-"
               f"{egv['ci95_cluster_bootstrap'][1]:.3f})")
    if "zero width" in egv["passes_method"]:
        click.echo("  per pass: the same rate on every pass (no interval over passes)")
    else:
        click.echo(f"  per pass: 95% CI {egv['ci95_passes'][0]:.3f}-{egv['ci95_passes'][1]:.3f} ({egv['passes_method']})")
    click.echo(f"  action valid {summary['action_valid']['mean']:.3f}, useful precision {summary['useful_precision']:.3f}, "
               f"regret {summary['evidence_regret']:.2f}, cost score {summary['cost_score']:.3f}, "
               f"over-submit {summary['over_submit']:.3f}")
    for family, f in summary["by_family"].items():
        fe = f["evidence_grounded_valid"]
        interval = "one task: no interval" if f["tasks"] == 1 else f"95% CI {fe['ci95'][0]:.3f}-{fe['ci95'][1]:.3f}"
        click.echo(f"  {family:<24} {fe['mean']:.3f} ({f['tasks']} tasks; {interval})")
    click.echo("  codebook: " + ", ".join(f"{k} {v}" for k, v in summary["codebook"].items()))
    if "paired" in summary:
        p = summary["paired"]
        if not p["tasks"]:
            click.echo(f"  paired vs {p['against']}: no task in common")
        else:
            click.echo(f"  paired vs {p['against']}: {p['mean_difference']:+.3f}, 95% CI {p['ci95'][0]:+.3f} to "
                       f"{p['ci95'][1]:+.3f} {p['method']} ({p['clusters']} clusters) over {p['tasks']} tasks; "
                       f"{len(p['discordant_tasks'])} discordant tasks in {len(p['discordant_clusters'])} clusters "
                       f"({p['a_only_valid']} valid only here, {p['b_only_valid']} only there)")
    click.echo(f"  {summary['audit']['line']}")
    audited(run_dir)


@cli.command("label")
@click.argument("package", type=click.Path(path_type=Path, file_okay=False))
@click.option("--runs", "runs", multiple=True, type=click.Path(path_type=Path, file_okay=False),
              help="A run of this package: its steps are labelled too (OUT/step_labels/RUN.jsonl). Repeatable.")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False),
              help="The labels folder, beside the package and runs, never inside them (default PACKAGE-labels next "
                   "to PACKAGE). Verifier-only: never give it to a policy.")
@click.option("--json", "as_json", is_flag=True, help="Print what was labelled as JSON.")
@artifact_force_option("labels")
def label_cmd(package: Path, runs: tuple[Path, ...], out: Path | None, as_json: bool, force: bool) -> None:
    """Value and sufficiency labels (DESIGN §10) of every state of every task, and of every step of RUNs.

    For each state (the items pulled so far): whether some terminal is already valid (sufficient), the fewest
    requests to such a state (cost_to_go), for each item not pulled whether it is needed, useful and what
    pulling it next is worth under the cost score, and the optimal actions. For each step of a run: its
    state, an extra request after sufficiency, a needed/useful/wasted request, a premature terminal, and the
    value the action lost against the best one. No graph needed: the labels use the verifier's Python twin.

    \b
    Examples:
      voe label out/pkg
      voe label out/pkg --runs out/run-random --runs out/run-gpt --json
    """
    from voe.verifiers.labels import label_package, labels_folder

    where = out if out is not None else labels_folder(package)
    with written_whole(where, "labels", force=force) as folder:
        info = label_package(package, folder, runs)
    if as_json:
        emit_json(info.model_dump())
        return
    click.echo(f"{info.states} states of {info.tasks} tasks labelled in {info.seconds} s -> {where}/states.jsonl")
    for run, n in info.runs.items():
        click.echo(f"  {n} steps of {run} -> {where}/{info.step_files[run]}")
    if info.not_enumerated:
        click.echo(f"  {len(info.not_enumerated)} task(s) with too many states: labelled on visited states only")


@cli.command("serve")
@click.argument("package", type=click.Path(path_type=Path, file_okay=False))
@click.option("--out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="The run folder the session writes (a voe run after every finished episode).")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True,
              help="stdio: the MCP client starts this command; http: streamable HTTP on 127.0.0.1.")
@click.option("--port", type=int, default=0, show_default=True,
              help="The http port (0: a free one, printed on stderr).")
@click.option("--passes", type=int, default=1, show_default=True, help="Episodes of each task the client may play.")
@click.option("--fresh", "--force", "fresh", is_flag=True,
              help="Start the run over: replace the earlier run in --out (by default a served run there is "
                   "continued).")
def serve_cmd(package: Path, out: Path, transport: str, port: int, passes: int, fresh: bool) -> None:
    """The replay environment as an MCP server: an agent plays the tasks on its own surface, and the session is a
    voe run (`voe score`, `voe report` and `voe export --runs` take it).

    Tools: list_tasks, start_task, the three requests (an entry id of the open task's menu), the three terminals
    (a payload of entry ids) and abstain_or_escalate, with MCP annotations (read-only, ends the episode); resource
    voe://task. Nothing verifier-only is loaded. Needs the mcp extra (pip install 'voe-evidence[mcp]').

    A client restarts its MCP servers with each new session: the same command then continues the run in --out
    (its finished episodes kept; an episode left open is played again), so one folder holds one run of one
    package. --fresh starts over. Nothing is written before the first episode ends.

    When the server ends (the client disconnects or closes stdin, Ctrl-C or SIGTERM), the run is written with its audit
    (audit.json) and the audit line is said on stderr. Exit 0, or 1 when the audit failed (something
    verifier-only reached the client; the run is kept), as for `voe run`; 130 on Ctrl-C and 143 on SIGTERM (a
    client or service manager stopping the server) with a passed audit.

    \b
    Examples:
      voe serve out/pkg --out out/run-claude                  # in an MCP client's configuration (stdio)
      voe serve out/pkg --out out/run-ide --transport http --port 8765
      voe serve out/pkg --out out/run-claude --fresh          # throw the earlier episodes away
    """
    require("mcp", "voe serve")  # before anything is claimed or written
    from voe.replay.mcp_server import serve

    served = (out / "run.json").is_file()
    claim_out(out, force=fresh, resume=served and not fresh, flag="--fresh")
    if fresh:
        from voe.artifacts.outdir import clear_for_rewrite

        clear_for_rewrite(out)  # none of an earlier run's files may stay

    def ready(bound: int) -> None:
        click.echo(f"voe serve: MCP over streamable HTTP at http://127.0.0.1:{bound}/mcp (run folder {out})",
                   err=True)

    def resumed(kept: int) -> None:
        click.echo(f"voe serve: continuing the run in {out} ({kept} finished episodes kept; --fresh starts over)",
                   err=True)

    try:
        with terminate_as_interrupt():
            serve(package, out, passes=passes, transport=transport, port=port, ready=ready, fresh=fresh,
                  resumed=resumed)
    except KeyboardInterrupt:  # the run is whole to its last episode: its audit is said before the exit (130 or
        # 143 on SIGTERM, or 1)
        said_audit(out)
        raise
    said_audit(out)


def said_audit(out: Path) -> None:
    """A served run's audit at the server's end, on stderr (stdout is the MCP channel over stdio): its line, and a
    failed one exits 1 (audited) as `voe run` does. Nothing when no episode was ever played (no run was written)."""
    from voe.replay.run_audit import RunAudit, read_audit

    audit = read_audit(out)
    if audit is None:
        return
    click.echo(f"voe serve: {out}: {RunAudit.model_validate(audit).line()}", err=True)
    audited(out)


@cli.command("import-inspect")
@click.argument("log", metavar="LOG", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="The run folder to write.")
@click.option("--package", type=click.Path(path_type=Path, file_okay=False),
              help="The package the log was played on (default: the path the log records).")
@click.option("--json", "as_json", is_flag=True, help="Print run.json's fields and the skipped samples as JSON.")
@force_option
def import_inspect_cmd(log: Path, out: Path, package: Path | None, as_json: bool, force: bool) -> None:
    """Turn an Inspect log of `inspect eval voe/bench` into a voe run (`voe score`, `voe report` and
    `voe export --runs` take it).

    Each sample's conversation is played again through the package's environment and must get the answers the
    log recorded; a log of another package or an edited one is refused. Samples that did not end an episode
    are left out and counted. Needs the inspect extra (pip install 'voe-evidence[inspect]').

    The log comes from `inspect eval voe/bench -T package=PKG --model PROVIDER/MODEL [-T passes=N]`.

    \b
    Examples:
      voe import-inspect logs/2026-12-04T12-00-00_bench_XYZ.eval --out out/run-gpt
      voe import-inspect run.eval --out out/run-gpt --package out/pkg --json
    """
    require("inspect", "voe import-inspect")
    from voe.replay.inspect_import import import_log

    claim_out(out, force=force)
    done = import_log(log, out, package)
    if as_json:
        emit_json({**done.info.model_dump(), "skipped": done.skipped})
        audited(out)  # JSON or not, a run whose audit failed exits 1
        return
    click.echo(f"{done.info.trajectories} trajectories of {done.info.policy} -> {out} "
               f"(score: voe score {out})")
    for where, why in done.skipped.items():
        click.echo(f"  skipped {where}: {why}")
    audited(out)


@cli.command("report")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path, file_okay=False))
@click.option("--out", "out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Folder for report.md, report.html and the plots.")
@click.option("--against", type=click.Path(path_type=Path, file_okay=False),
              help="A run to compare every run with: paired difference of validity on the same tasks.")
@click.option("--curator", is_flag=True,
              help="Add a section with each task's family (verifier-only: it decides the answer; for the archive's "
                   "curator, never for a policy).")
@artifact_force_option("report")
def report_cmd(runs: tuple[Path, ...], out: Path, against: Path | None, curator: bool, force: bool) -> None:
    """Write a Markdown/HTML report for one or more scored runs: headline table with intervals,
    per-family breakdown, failure codebook distribution, model usage (tokens, cost), a sortable per-task table
    and plots (PNG/SVG). report.html is one self-contained file (light and dark, plots inline).

    Reads what `voe score` wrote into each run (summary.json, scores.jsonl): no Neo4j needed; a run not scored
    yet, or changed since, is refused with the command that scores it.

    \b
    Examples:
      voe report out/run-reference out/run-random --out out/report --against out/run-random
    """
    from voe.artifacts.scores import load_scored
    from voe.verifiers.metrics import paired
    from voe.verifiers.report import NO_PLOTS, about, questions_of, write_report

    scored = [load_scored(r) for r in runs]  # what `voe score` wrote: no Neo4j needed
    pairs = None
    if against is not None:
        base_summary, base = load_scored(against)
        pairs = [{**paired(s, base), "against": base_summary["policy"]} for _, s in scored]
    with written_whole(out, "report", force=force) as folder:
        write_report([s for s, _ in scored], folder, pairs, [t for _, t in scored],
                     about(questions_of(runs), curator=curator))
    path = out / "report.md"
    click.echo(f"report written to {path}")
    if "Plots not drawn" in path.read_text():
        click.echo(f"note: plots not drawn: {NO_PLOTS}", err=True)
