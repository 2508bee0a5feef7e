"""The CLI reference (docs/cli.md), generated from `--help` so that it cannot drift: `python -m voe.cli.reference`
rewrites it, tests/cli/test_reference.py fails when it is stale and checks every example line in the help
against the command's real options."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from voe.cli import cli

WIDTH = 100
DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"


def commands(group: click.Group = cli, prefix: tuple[str, ...] = ("voe",)) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command, the group first, then its subcommands in name order."""
    yield prefix, group
    for name in sorted(group.commands):
        sub = group.commands[name]
        if isinstance(sub, click.Group):
            yield from commands(sub, (*prefix, name))
        else:
            yield (*prefix, name), sub


def help_text(path: tuple[str, ...], command: click.Command) -> str:
    # the contexts `voe ... --help` builds (the root's settings, -h among them, pass down), at a fixed width
    ctx = click.Context(cli, info_name=path[0], terminal_width=WIDTH, **cli.context_settings)
    for name in path[1:]:
        group = ctx.command
        assert isinstance(group, click.Group)
        ctx = click.Context(group.commands[name], info_name=name, parent=ctx, terminal_width=WIDTH)
    assert ctx.command is command
    return command.get_help(ctx)


def render() -> str:
    parts = ["# voe command reference", "",
             "Generated from `--help` by `python -m voe.cli.reference`; tests/cli/test_reference.py keeps it "
             "current. Exit codes everywhere: 0 ok, 1 the work found a problem, 2 bad usage or bad input, 130 "
             "interrupted.", ""]
    for path, command in commands():
        parts += [f"## `{' '.join(path)}`", "", "```text", help_text(path, command).rstrip(), "```", ""]
    return "\n".join(parts)


def examples(path: tuple[str, ...], command: click.Command) -> list[list[str]]:
    """The example lines of a command's help (after `Examples:`), as argument lists, comments dropped."""
    doc = command.help or ""
    out: list[list[str]] = []
    if "Examples:" not in doc:
        return out
    for line in doc.split("Examples:", 1)[1].splitlines():
        text = line.split("  #", 1)[0].split("||", 1)[0].strip()
        if not text:
            if out:
                break
            continue
        out.append(shlex.split(text))
    return out


def main() -> None:
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(render())
    print(f"wrote {DOC}", file=sys.stderr)


if __name__ == "__main__":
    main()
