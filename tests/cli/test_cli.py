"""`voe --help` and every subcommand's help are written for a person; README documents what exists."""

from __future__ import annotations

import json
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


def _instance(cache: Path, name: str, bolt: int, http: int) -> None:
    """An instance folder as `voe db up` leaves it (its conf and password), not running."""
    home = cache / "instances" / name
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "neo4j.conf").write_text(f"server.bolt.listen_address=127.0.0.1:{bolt}\n"
                                              f"server.http.listen_address=127.0.0.1:{http}\n")
    (home / "password").write_text("pw-of-" + name)


def test_every_db_command_answers_for_the_instance_neo4j_uri_names(tmp_path: Path) -> None:
    _instance(tmp_path, "default", 7687, 7474)
    _instance(tmp_path, "other", 9, 19)
    base = {"VOE_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}

    def voe(*args: str, uri: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {**base, **({"NEO4J_URI": uri} if uri else {})}
        return subprocess.run([sys.executable, "-m", "voe.cli", "db", *args], capture_output=True, text=True, env=env)

    status = voe("status", uri="bolt://127.0.0.1:9")
    assert status.returncode == 1 and "instance other (bolt://127.0.0.1:9" in status.stdout
    assert "`voe db up --instance other --bolt-port 9 --http-port 19`" in status.stdout
    assert voe("password", uri="bolt://127.0.0.1:9").stdout.strip() == "pw-of-other"
    assert voe("password").stdout.strip() == "pw-of-default"
    # --instance alone: the instance with the ports it remembers, whatever NEO4J_URI says
    named = voe("status", "--instance", "other", uri="bolt://127.0.0.1:7687")
    assert "instance other (bolt://127.0.0.1:9" in named.stdout and "--bolt-port 9 --http-port 19" in named.stdout
    # a port no instance has yet: the default instance on that port, said so
    fresh = voe("status", "--json", uri="bolt://localhost:27687")
    got = json.loads(fresh.stdout)
    assert got["instance"] == "default" and got["bolt_uri"].endswith(":27687") and "no local instance" in got["chosen_by"]


def test_a_path_error_prints_the_error_and_no_summary(tmp_path: Path, cli_env: dict[str, str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "voe.cli", "ingest", str(tmp_path / "absent")], capture_output=True,
                          text=True, env=cli_env)
    assert proc.returncode == 2 and "path does not exist" in proc.stderr
    assert proc.stdout == ""  # no all-zero summary that would read as a finished ingest



def test_names_from_the_input_are_printed_with_their_control_characters_escaped(tmp_path: Path,
                                                                               cli_env: dict[str, str]) -> None:
    folder = tmp_path / "rec\x1b]0;owned\x07\x1b[2J"  # a folder name that retitles the terminal and clears it
    folder.mkdir()
    (folder / "data\x1b[31m.csv").write_text("a,b\n1,2\n")
    proc = subprocess.run([sys.executable, "-m", "voe.cli", "ingest", str(folder)], capture_output=True, text=True,
                          env=cli_env)
    missing = subprocess.run([sys.executable, "-m", "voe.cli", "ingest", str(tmp_path / "gone\x1b[2J")],
                             capture_output=True, text=True, env=cli_env)
    assert proc.returncode == 0 and missing.returncode == 2, proc.stderr + missing.stderr
    for out in (proc.stdout, proc.stderr, missing.stderr):
        assert "\x1b" not in out and "\x07" not in out
    assert "rec\\x1b]0;owned\\x07" in proc.stderr and "gone\\x1b[2J" in missing.stderr


# a command that needs an extra the install lacks: the install line, exit 2, nothing written (the modules are hidden
# from the child interpreter as a base install lacks them: sys.modules[name] = None makes their import fail)
HIDE = "import sys\nfor m in {mods!r}: sys.modules[m] = None\nfrom voe.cli.app import main\nsys.argv = {argv!r}\nmain()\n"


@pytest.mark.parametrize("argv, mods, extra", [
    (["serve", "{pkg}", "--out", "{out}"], ["mcp"], "mcp"),
    (["import-inspect", "{pkg}/log.eval", "--out", "{out}"], ["inspect_ai"], "inspect"),
    (["validate", "{pkg}"], ["rocrate_validator", "mlcroissant"], "validate"),
], ids=["serve", "import-inspect", "validate"])
def test_a_missing_extra_is_named_with_its_install_line(tmp_path: Path, argv: list[str], mods: list[str],
                                                        extra: str) -> None:
    pkg, out = tmp_path / "pkg", tmp_path / "out"
    pkg.mkdir()
    args = ["voe", *(a.format(pkg=pkg, out=out) for a in argv)]
    proc = subprocess.run([sys.executable, "-c", HIDE.format(mods=mods, argv=args)], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert f"pip install 'voe-evidence[{extra}]'" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("uri", ["127.0.0.1:7687", "ftp://127.0.0.1:7687"])
def test_a_neo4j_uri_that_is_not_one_is_one_line_and_exit_2(tmp_path: Path, uri: str) -> None:
    env = {"PATH": "/usr/bin:/bin", "VOE_CACHE_DIR": str(tmp_path), "NEO4J_URI": uri}
    proc = subprocess.run([sys.executable, "-m", "voe.cli", "compile", "--out", str(tmp_path / "pkg")],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"voe: error: NEO4J_URI={uri!r} is not a Neo4j URI")
    assert not (tmp_path / "pkg").exists()


def test_a_database_the_server_lacks_is_one_line_and_exit_2(tmp_path: Path, cli_env: dict[str, str]) -> None:
    env = {**cli_env, "NEO4J_DATABASE": "nosuchdb"}
    for args in (["compile", "--out", str(tmp_path / "pkg")], ["ingest", str(tmp_path)]):
        proc = subprocess.run([sys.executable, "-m", "voe.cli", *args], capture_output=True, text=True, env=env)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "NEO4J_DATABASE='nosuchdb'" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
