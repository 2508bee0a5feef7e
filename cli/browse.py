"""`voe browse`: a Neo4j Browser URL with a review query ready to run."""

from __future__ import annotations

from pathlib import Path

import click

from voe.cli.app import cli, emit_json


@cli.command("browse")
@click.argument("task_id", required=False)
@click.option("--query", "name", help="A named query of cypher/browser/ (default: task_evidence with TASK_ID).")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="A parameter of the query (repeatable).")
@click.option("--http-url", envvar="VOE_HTTP_URL",
              help="Where the Browser is served (or VOE_HTTP_URL). Default: the HTTP port of the local server of "
                   "`voe db up` that NEO4J_URI names, else http://127.0.0.1:7474.")
@click.option("--answers", is_flag=True,
              help="With TASK_ID: the verifier's side of the task (its answer, the items it binds, its decision "
                   "moment), for a curator checking a gold. Never show it to a policy.")
@click.option("--style", "show_style", is_flag=True, help="Print the Browser style (GraSS) to paste after `:style`.")
@click.option("--bundle", "bundle_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Write the Browser with voe's style and guide (DIR/neo4j-browser.zip) for a server voe does not "
                   "start: docker-compose.yml serves it from ./.voe-browser (see docs/guide/review.md).")
@click.option("--json", "as_json", is_flag=True, help="Print the URL, the query and the named queries as JSON.")
def browse_cmd(task_id: str | None, name: str | None, params: tuple[str, ...], http_url: str | None, answers: bool,
               show_style: bool, bundle_dir: Path | None, as_json: bool) -> None:
    """Print the Neo4j Browser URL that opens with a review query ready to run.

    With TASK_ID: the task's menu, the evidence behind it and the source locations of its facts (the task as a
    row of what a policy sees: the review queries draw nothing of the verifier's side; --answers shows it).
    Other named queries (--query): record_defects (--param ark=...), admission (--param package=...),
    trajectory (--param trajectory_id=...), tasks (--param package=...). The Browser connects to
    NEO4J_URI as NEO4J_USER (neo4j); the password of a local server of `voe db up` is printed beside the URL
    (the Browser asks for it once). --style prints ontology/browser.grass for `:style`; --bundle DIR writes the
    Browser with voe's style and guide for a server started otherwise (docker-compose.yml).

    \b
    Examples:
      voe browse TASK_ID
      voe browse TASK_ID --answers
      voe browse --query record_defects --param ark=ark:/88434/mds2-4103
      voe browse --style
      voe browse --bundle .voe-browser
    """
    from voe.browse import browser_url, named_queries, query_text, style
    from voe.config import Neo4jSettings, local_instance, local_password
    from voe.errors import UsageError
    from voe.settings import settings

    if show_style:
        click.echo(style())
        return
    if bundle_dir is not None:
        _write_bundle(bundle_dir, as_json)
        return
    values = {}
    for p in params:
        key, sep, value = p.partition("=")
        if not sep:
            raise UsageError(f"--param {p!r}: expected NAME=VALUE")
        values[key] = value
    if task_id is not None:
        values.setdefault("task_id", task_id)
        name = name or ("task_answers" if answers else "task_evidence")
    elif answers:
        raise UsageError("--answers shows one task's answer: give its TASK_ID")
    query = query_text(name, values) if name else None
    conn = Neo4jSettings.from_env()
    if task_id is not None:
        _check_task(task_id, conn.uri)
    if http_url is None:
        local = local_instance(conn.uri, settings().cache_dir)
        http_url = f"http://127.0.0.1:{local.http_port}" if local is not None else "http://127.0.0.1:7474"
    # the Browser signs in as the user whether voe holds a password or not: a server voe did not start
    # (docker-compose.yml's) requires one, and one running without authentication takes any, where the Browser's
    # "no authentication" fails against a server that requires it
    user = conn.user
    url = browser_url(http_url, conn.uri, query, user)
    if as_json:
        emit_json({"url": url, "query": query, "queries": named_queries(), "user": user})
        return
    click.echo(url)
    if conn.password and conn.password == local_password(conn.uri, settings().cache_dir):
        # the local server's own password, in the user's own terminal (never one the user set for a remote
        # server): the Browser asks for it once per session
        click.echo(f"connect as {conn.user} with the password {conn.password} (voe db password prints it)", err=True)
    if query is None:
        click.echo("named queries (voe browse --query NAME --param ...):", err=True)
        for q, what in named_queries().items():
            click.echo(f"  {q:<16} {what}", err=True)


def _check_task(task_id: str, uri: str) -> None:
    """A URL for a task the graph does not hold would open an empty view: refused, saying where to find ids."""
    from voe.errors import UsageError
    from voe.graph import Graph

    with Graph() as graph:
        graph.verify()
        if not graph.query("stats/task_known", task_id=task_id)[0]["tasks"]:
            raise UsageError(f"the graph at {uri} holds no task {task_id!r}; `voe browse --query tasks "
                             "--param package=CONTENT_HASH` lists a package's tasks (tasks.jsonl names them too)")


def _write_bundle(out: Path, as_json: bool) -> None:
    """The Browser of the Neo4j version voe runs (its jar fetched once, as `voe db up` does) with voe's style and
    guide under browser/voe/, for a server that serves `out` as its web folder (docker-compose.yml)."""
    from voe.browse import GUIDE_PATH, STYLE_PATH, browser_bundle
    from voe.errors import ServerError
    from voe.neo4j_server import LocalNeo4j

    bundle = browser_bundle(LocalNeo4j().resolve(), out)
    if bundle is None:
        raise ServerError("the Neo4j jars voe fetched hold no Browser jar (neo4j-browser-*.jar)")
    if as_json:
        emit_json({"bundle": str(bundle), "style": f"browser/{STYLE_PATH}", "guide": f"browser/{GUIDE_PATH}"})
        return
    click.echo(str(bundle))
    click.echo(f"served from {out} as internal.dbms.web_dir_path (docker-compose.yml mounts ./.voe-browser there)",
               err=True)
