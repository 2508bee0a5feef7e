"""Progress on stderr: a bar that redraws in place on a terminal (rich's live display), one line per finished bar
elsewhere, nothing with --quiet; messages go above the bar."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import time
from pathlib import Path

from voe.progress import Progress


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_messages_and_one_line_per_bar() -> None:
    out = io.StringIO()
    p = Progress(stream=out)
    with p.bar("run", 3, "trajectories") as bar:
        for _ in range(3):
            bar.advance()
        p.say("a message")
    lines = out.getvalue().splitlines()
    assert lines[0] == "a message" and lines[1].startswith("run: 3/3 trajectories in ") and len(lines) == 2


def test_a_log_hears_a_heartbeat_while_one_long_item_runs() -> None:
    """Off a terminal a bar stuck on one long file still says it is alive (not once per file started)."""
    out = io.StringIO()
    p = Progress(stream=out, heartbeat_s=0.2)
    with p.bar("ingest", 2, "paths"):
        time.sleep(0.7)  # one long parse: no update at all
    lines = out.getvalue().splitlines()
    beats = [ln for ln in lines if re.fullmatch(r"ingest: 0/2 paths after \d+ s, working", ln)]
    assert len(beats) >= 2 and lines[-1].startswith("ingest: 0/2 paths in ")
    time.sleep(0.5)
    assert out.getvalue().splitlines() == lines  # nothing after the bar closed


def test_a_terminal_gets_a_bar_redrawn_in_place() -> None:
    out = Tty()
    p = Progress(stream=out)
    with p.bar("ingest", 2, "paths") as bar:
        bar.update(1)
        time.sleep(0.25)  # the live display redraws ten times a second
        p.say("cleaned x")
        bar.update(2)
    text = out.getvalue()
    assert "\r\x1b[2Kingest " in text and "━" in text and " 1/2 paths (" in text  # redrawn over itself
    assert "\x1b[2Kcleaned x\ningest " in text  # the message goes above the bar, which is drawn again below it
    assert re.search(r"\x1b\[2Kingest: 2/2 paths in \d+\.\d s\n\Z", text)  # the bar erased, one line for it


def test_a_terminal_bar_keeps_its_clock_moving_between_updates() -> None:
    out = Tty()
    with Progress(stream=out).bar("parse", 2, "paths"):
        time.sleep(1.3)  # one long file: no update, yet the elapsed time is redrawn
    assert "0:00:01" in out.getvalue()


def test_a_byte_bar_counts_in_binary_units() -> None:
    out = Tty()
    p = Progress(stream=out)
    with p.bar("fetch", 0, "B") as bar:
        bar.update(1536, 3 << 20)
        time.sleep(0.25)
        bar.update(3 << 20, 3 << 20)
    text = out.getvalue()
    assert "fetch " in text and " 1.5 KiB/3.0 MiB (" in text and "fetch: 3.0 MiB/3.0 MiB in " in text


def test_quiet_prints_nothing(tmp_path: Path) -> None:
    out = Tty()
    p = Progress(enabled=False, stream=out)
    with p.bar("x", 1) as bar:
        bar.advance()
        p.say("hidden")
    assert out.getvalue() == ""


def test_voe_run_shows_progress_even_with_json_and_none_with_quiet(package: Path, tmp_path: Path,
                                                                   cli_env: dict[str, str]) -> None:
    base = [sys.executable, "-m", "voe.cli", "run", str(package), "--policy", "random", "--json"]
    shown = subprocess.run([*base, "--out", str(tmp_path / "a")], capture_output=True, text=True, env=cli_env)
    assert shown.returncode == 0 and "run: " in shown.stderr and " trajectories in " in shown.stderr
    quiet = subprocess.run([*base, "--quiet", "--out", str(tmp_path / "b")], capture_output=True, text=True,
                           env=cli_env)
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert (tmp_path / "a" / "steps.jsonl").read_bytes() == (tmp_path / "b" / "steps.jsonl").read_bytes()
