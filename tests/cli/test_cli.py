"""`voe --help` and every subcommand's help are written for a person; README documents what exists."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from voe.cli import cli

REPO = Path(__file__).resolve().parents[2]


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name, cmd in sorted(group.commands.items()):
        found.append((*prefix, name))
        if isinstance(cmd, click.Group):
            found += _commands(cmd, (*prefix, name))
    return found


@pytest.mark.parametrize("path", [(), *_commands(cli)], ids=lambda p: " ".join(p) or "voe")
def test_help_is_written_for_a_person(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0
    text = result.output
    assert text.startswith("Usage: ")
    description = text.split("\n\n", 2)[1].strip()
    assert len(description.split()) >= 6, f"{path}: description too thin: {description!r}"
    cmd: click.Command = cli
    for name in path:
        assert isinstance(cmd, click.Group)
        cmd = cmd.commands[name]
    for param in cmd.params:
        if isinstance(param, click.Option):
            assert param.help and len(param.help.split()) >= 3, f"{path}: option {param.name} has no real help"


def test_readme_names_every_command() -> None:
    readme = (REPO / "README.md").read_text()
    for path in _commands(cli):
        assert f"voe {' '.join(path)}" in readme, f"README does not mention `voe {' '.join(path)}`"


def test_ci_runs_readmes_test_command() -> None:
    readme = (REPO / "README.md").read_text()
    ci = (REPO / ".ci" / "run").read_text()
    match = re.search(r"<!-- test-command -->\s*```(?:sh|bash)?\n(.+?)\n```", readme, flags=re.S)
    assert match, "README marks its test command with <!-- test-command -->"
    assert "bash tools/test.sh" in match.group(1)
    assert "bash tools/test.sh" in ci


def test_bad_usage_exits_2() -> None:
    proc = subprocess.run([sys.executable, "-m", "voe.cli", "ingest"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Missing argument" in proc.stderr and "Traceback" not in proc.stderr


def test_db_status_of_an_instance_that_is_not_running(tmp_path: Path) -> None:
    env = {"VOE_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "voe.cli", "db", "status", "--instance", "idle", "--bolt-port", "9"],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 1
    assert "not running" in proc.stdout
    assert "`voe db up --instance idle --bolt-port 9`" in proc.stdout  # the hint keeps the user's flags


def test_a_path_error_prints_the_error_and_no_summary(tmp_path: Path, cli_env: dict[str, str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "voe.cli", "ingest", str(tmp_path / "absent")], capture_output=True,
                          text=True, env=cli_env)
    assert proc.returncode == 2 and "path does not exist" in proc.stderr
    assert proc.stdout == ""  # no all-zero summary that would read as a finished ingest
