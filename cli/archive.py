"""`voe ingest` and `voe fetch`: archives into the graph, PDR records onto disk."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from voe.cli.app import artifact_force_option, cli, echo_errors, emit_json, progress_reporter, quiet_option
from voe.terminal import safe


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--schemas", "schema_dir", type=click.Path(path_type=Path, file_okay=False),
              help="Folder with the NERDm schemas (nerdm/, ejsonschema/). Default: $VOE_SCHEMA_DIR, "
                   "else ../shared/archives/schemas beside the checkout.")
@click.option("--no-schema", is_flag=True, help="Skip NERDm schema validation.")
@click.option("--strict", is_flag=True, help="Exit 1 when any defect is found.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@quiet_option
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
    (exit 2). Defects are findings, not failures: exit 0 unless --strict. A record file of
    VOE_STREAM_BYTES (32 MiB) or more is read in passes and written a chunk of components at
    a time, so memory does not grow with the record (a million components in under 1 GiB).

    \b
    Examples:
      voe ingest ../shared/archives/mds2-4103 ../shared/archives/mds2-2525 --json
      voe ingest ../shared/archives/amb2025-template ../shared/archives/FACTS.md
    """
    from voe.graph import Graph
    from voe.ingest import ingest_paths

    if schema_dir is not None and not schema_dir.is_dir():
        raise click.BadParameter(f"{schema_dir} is not a folder", param_hint="--schemas")
    reporter = progress_reporter(quiet)
    with Graph() as graph:
        graph.verify()
        with reporter.bar("ingest", len(paths), "paths") as bar:
            report = ingest_paths(list(paths), graph, schema_dir=schema_dir, validate_schema=not no_schema,
                                  progress=reporter.say, bar=bar.update)
    # when every path failed there is nothing to sum up: an all-zero summary on stdout would read as success
    nothing = report.errors and not (report.records or report.files or sum(report.components.values()))
    if as_json:
        emit_json(report.model_dump())
    elif nothing:
        echo_errors(report)
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
        echo_errors(report)
    code = report.exit_code
    if code == 0 and strict and report.defects:
        code = 1
    sys.exit(code)


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
@quiet_option
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
    from voe.ingest.fetch import as_json as report_json
    from voe.ingest.fetch import fetch as do_fetch

    reporter = progress_reporter(quiet)
    with reporter.bar("fetch", 0, "B") as bar:
        report = do_fetch(record, into, include=list(include) or None, max_bytes=max_bytes, base_url=base_url,
                          retries=retries, timeout=timeout, file_deadline=file_deadline, deadline=deadline,
                          progress=reporter.say, bytes_bar=bar.update)
    if as_json:
        emit_json(report_json(report))
    else:
        ok = sum(1 for f in report.files if f.status in ("ok", "exists", "unverified"))
        unverified = f" ({len(report.unverified)} unverified)" if report.unverified else ""
        click.echo(safe(f"{report.record}: {ok} of {len(report.files)} files in place{unverified}, {report.bytes} B "
                        f"downloaded in {report.seconds} s -> {report.into}"))
        for f in report.unverified:  # a record's file paths are the archive's text: never a terminal's escape
            click.echo(safe(f"unverified: {f.filepath}: {f.note}"), err=True)
        for f in report.failed:
            click.echo(safe(f"failed: {f.filepath}: {f.error}"), err=True)
    sys.exit(1 if report.failed else 0)


@cli.command("audit")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Folder for audit.md, audit.csv, letters.txt and audit.json (with its schema).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (what audit.json holds).")
@artifact_force_option("defect report")
@quiet_option
def audit_cmd(paths: tuple[Path, ...], out: Path, as_json: bool, force: bool, quiet: bool) -> None:
    """The curator's defect report: every defect and conflict of each archive and version, for its owner.

    With PATHs, they are ingested first (as `voe ingest` does) and only their records are reported; without,
    every record the graph holds. Each finding names the file, where it sits (JSON pointer, line, cell),
    what is declared against what is found, the rule, and how the archive resolves it when it does; sorted
    by what blocks use first (blocks use, conflict, stale, note, our tools). letters.txt holds a plain-text
    letter to the contact each record names. Offline: nothing is fetched. Exit 1 when a record has a finding
    that blocks use, 2 when a path cannot be read (the others are still reported).

    \b
    Examples:
      voe audit ../shared/archives/mds2-4103 --out out/audit
      voe audit --out out/audit-all --json
    """
    from voe.artifacts.outdir import ARTIFACT_MARKERS, claim_out
    from voe.compiler.audit import audit, write
    from voe.graph import Graph
    from voe.ingest import ingest_paths

    # refused before anything is ingested or written (`write` holds to the same rule)
    claim_out(out, markers=ARTIFACT_MARKERS["defect report"], what="defect report", force=force)
    with Graph() as graph:
        graph.verify()
        records = None
        failed = False
        if paths:
            reporter = progress_reporter(quiet)
            with reporter.bar("ingest", len(paths), "paths") as bar:
                report = ingest_paths(list(paths), graph, progress=reporter.say, bar=bar.update)
            echo_errors(report)
            failed = bool(report.errors)
            records = sorted({r.record_id for r in report.per_record})
        result = audit(graph, records)
    files = write(result, out, force=force)
    if as_json:
        click.echo(result.model_dump_json(indent=2))
    else:
        for r in result.records:
            click.echo(safe(f"{r.ark} {r.version or '-'}: " + (", ".join(f"{s} {n}" for s, n in r.counts.items())
                                                              or "nothing found")))
        click.echo(f"wrote {', '.join(str(p) for k, p in files.items() if k != 'schema')}")
    if failed:
        sys.exit(2)
    if any(r.counts.get("blocks use") for r in result.records):
        sys.exit(1)
