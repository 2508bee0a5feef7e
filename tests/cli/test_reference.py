"""The CLI reference and the examples in the help are kept true (sqlite-utils style: tests that check the docs)."""

from __future__ import annotations

import click
import pytest

from voe.cli import cli
from voe.cli.reference import DOC, commands, examples, render


def test_docs_cli_md_is_generated_from_the_current_help() -> None:
    assert DOC.read_text() == render(), "docs/cli.md is stale: run `python -m voe.cli.reference`"


def test_the_top_level_help_shows_the_whole_session() -> None:
    session = (cli.help or "").split("A whole session:", 1)[1]
    steps = [" ".join(ln.split()[1:3]) for ln in session.splitlines() if ln.strip().startswith("voe ")]
    assert [s.split()[0] if not s.startswith("db") else s for s in steps] == [
        "db up", "ingest", "compile", "run", "score", "report", "export", "browse", "db down"]


COMMANDS = [(p, c) for p, c in commands() if not isinstance(c, click.Group) or p == ("voe", "db")]


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_has_examples_that_parse_with_its_real_options(path: tuple[str, ...],
                                                                     command: click.Command) -> None:
    lines = examples(path, command)
    assert lines, f"{' '.join(path)} --help has no Examples: block"
    for args in lines:
        assert args[0] == "voe", args
        ctx = click.Context(cli, info_name="voe")
        target: click.Command = cli
        rest = args[1:]
        while isinstance(target, click.Group):  # walk down to the command the example calls
            target = target.commands[rest[0]]
            ctx = click.Context(target, info_name=rest[0], parent=ctx)
            rest = rest[1:]
        if isinstance(target, click.Group):
            continue
        try:
            target.parse_args(ctx, list(rest))  # raises on an unknown option or a missing argument
        except click.BadParameter as exc:  # the example's folders need not exist here; anything else is wrong
            assert "does not exist" in exc.format_message(), (args, exc.format_message())
