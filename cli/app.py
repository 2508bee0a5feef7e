"""The `voe` group and what every command shares: JSON output, --quiet, progress on stderr, and `main`, which turns
the library's errors into one line and the documented exit code.

Exit codes (DESIGN §8): 0 ok, 1 the work found a problem, 2 bad usage or bad input; 130 on Ctrl-C.
"""

from __future__ import annotations

import io
import json
import logging
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from voe import __version__
from voe.errors import VoeError
from voe.terminal import safe

F = TypeVar("F", bound=Callable[..., Any])


def emit_json(payload: Any) -> None:
    click.echo(json.dumps(payload, indent=2, sort_keys=False))


def quiet_option(fn: F) -> F:
    return click.option("--quiet", "-q", is_flag=True,
                        help="No progress on stderr (messages and bars; --json does not turn them off).")(fn)


def progress_reporter(quiet: bool) -> Any:
    from voe.progress import Progress

    return Progress(enabled=not quiet)


def echo_errors(report: Any) -> None:
    """An ingest report's problems on stderr, each with its path and pointer."""
    for err in report.errors:
        where = err.path + (f"#{err.pointer}" if err.pointer else "")
        click.echo(safe(f"error: {where}: {err.message}"), err=True)


def claim_out(out: Path, *, force: bool, resume: bool | None = None, flag: str = "--force") -> None:
    """A run's --out, by the one rule of voe/artifacts/outdir.py: refused when it holds something, unless `--force`
    (an earlier run only; `flag` is its name in this command) or `--resume` (None: the command has no such flag)."""
    from voe.artifacts.outdir import RUN_MARKERS
    from voe.artifacts.outdir import claim_out as claim

    claim(out, markers=RUN_MARKERS, what="run", force=force, resume=resume, flag=flag)


def artifact_force_option(what: str) -> Callable[[F], F]:
    from voe.artifacts.outdir import ARTIFACT_MARKERS

    def wrap(fn: F) -> F:
        return click.option("--force", is_flag=True,
                            help=f"Replace the earlier {what} in --out (a folder holding "
                                 f"{' or '.join(ARTIFACT_MARKERS[what])}); any other folder that is not empty is "
                                 "refused.")(fn)
    return wrap


def force_option(fn: F) -> F:
    return click.option("--force", is_flag=True,
                        help="Replace the earlier run in --out (a folder holding run.json or an agent's "
                             "run.plan.json); any other folder that is not empty is refused.")(fn)


def log_to_stderr(enabled: bool) -> Callable[[str], None]:
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

    Exit codes: 0 ok, 1 the work found a problem, 2 bad usage or bad input, 130 interrupted.
    """



class Terminated(KeyboardInterrupt):
    """SIGTERM met as an interrupt, so what a command does on Ctrl-C (write what is whole, say it) runs too."""


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM (a service manager stopping the command, an MCP client closing its server)
    raises Terminated in the main thread; the exit is then 143 (128 + SIGTERM). uvicorn keeps its own handler while
    it serves and sends the signal again once it has shut down, so the block sees it after a graceful stop."""
    def on_term(_signum: int, _frame: object) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class _FirstDriverWarning(logging.Handler):
    """The Neo4j driver's own warnings (a transaction it retries, a socket that went away) reach a user as one
    line, the first; without a handler Python prints every retry's multi-line reason for the driver's whole retry
    window. voe's own error line follows if the retries do not succeed."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.shown = False

    def emit(self, record: logging.LogRecord) -> None:
        if self.shown:
            return
        self.shown = True
        first = record.getMessage().strip().splitlines()[0][:240] if record.getMessage().strip() else ""
        click.echo(safe(f"voe: warning: Neo4j: {first} (the driver retries for up to 30 s; "
                        "its further warnings are not shown)"), err=True)


def _quiet_driver() -> None:
    driver = logging.getLogger("neo4j")
    if not any(isinstance(h, _FirstDriverWarning) for h in driver.handlers):
        driver.addHandler(_FirstDriverWarning())
    driver.propagate = False


def main() -> None:
    _quiet_driver()
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort as exc:
        # click turns Ctrl-C into Abort: it keeps the shell's code for an interrupt (128 + SIGINT)
        if isinstance(exc.__context__, Terminated):
            click.echo("terminated", err=True)
            sys.exit(128 + signal.SIGTERM)
        if isinstance(exc.__context__, KeyboardInterrupt):
            click.echo("interrupted", err=True)
            sys.exit(130)
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        shown = io.StringIO()
        exc.show(file=shown)
        sys.stderr.write(safe(shown.getvalue()))  # it may quote a path or value as given
        sys.exit(2)
    except VoeError as exc:
        click.echo(f"voe: error: {safe(exc)}", err=True)
        sys.exit(exc.exit_code)
    except Terminated:
        click.echo("terminated", err=True)
        sys.exit(128 + signal.SIGTERM)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except SystemExit:
        raise
