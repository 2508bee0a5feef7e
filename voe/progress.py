"""Progress of long commands on stderr: messages, and a bar for counted work (paths, files, moments, episodes).

On a terminal the bar is rich's live display (redrawn ten times a second, so its clock moves while one long file
is parsed; messages print above it); elsewhere (a log, CI) a bar prints one line when the work ends, and a
heartbeat line every HEARTBEAT_S while it runs, so a log shows a long parse is alive without filling up.
`--quiet` turns both off; `--json` does not (it is stdout's shape).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import IO

from rich.console import Console
from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as Live

from voe.terminal import safe

HEARTBEAT_S = 30.0


class Progress:
    def __init__(self, enabled: bool = True, stream: IO[str] | None = None, heartbeat_s: float = HEARTBEAT_S) -> None:
        self.enabled = enabled
        self.heartbeat_s = heartbeat_s
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._bar: Bar | None = None

    def say(self, message: str) -> None:
        if not self.enabled:
            return
        message = safe(message)  # names of folders, files and records are echoed: never a terminal's escape
        if self._bar is not None and self._bar.live is not None:
            # through the live display's console: the message lands above the bar, which redraws below it
            self._bar.live.console.print(message, markup=False, highlight=False, soft_wrap=True)
            return
        self.stream.write(message + "\n")
        self.stream.flush()

    def bar(self, label: str, total: int, unit: str = "") -> Bar:
        self._bar = Bar(self, label, total, unit)
        return self._bar


class Bar:
    def __init__(self, progress: Progress, label: str, total: int, unit: str) -> None:
        self.progress, self.label, self.total, self.unit = progress, label, total, unit
        self.done = 0
        self.note = ""  # what else the count should say (an agent run's retries)
        self.started = time.monotonic()
        self.live: Live | None = None
        self._closed = False
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        if progress.enabled and not progress.tty and progress.heartbeat_s > 0:
            self._beat = threading.Thread(target=self._heartbeat, name=f"progress-{label}", daemon=True)
            self._beat.start()
        if progress.enabled and progress.tty:
            console = Console(file=progress.stream, force_terminal=True, highlight=False, soft_wrap=True)
            self.live = Live(TextColumn("{task.description}"), BarColumn(bar_width=24),
                             TextColumn("{task.fields[count]} ({task.fields[rate]})"), TimeElapsedColumn(),
                             console=console, transient=True, refresh_per_second=10)
            self._task = self.live.add_task(label, total=total or None, count=self._count(), rate=self._rate())
            self.live.start()

    def _heartbeat(self) -> None:
        """Off a terminal: where the work stands every heartbeat_s, until the bar closes."""
        while not self._stop.wait(self.progress.heartbeat_s):
            elapsed = time.monotonic() - self.started
            self.progress.say(f"{self.label}: {self._count()} after {elapsed:.0f} s, working")

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def advance(self, n: int = 1) -> None:
        self.update(self.done + n)

    def update(self, done: int, total: int | None = None) -> None:
        self.done = done
        if total is not None:
            self.total = total
        if self.live is not None:
            self.live.update(self._task, completed=done, total=self.total or None, count=self._count(),
                             rate=self._rate())

    def _amount(self, n: float) -> str:
        if self.unit != "B":
            return f"{n:.0f}" if isinstance(n, int) else f"{n:.1f}"
        for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if n >= size:
                return f"{n / size:.1f} {unit}"
        return f"{n:.0f} B"

    def _count(self) -> str:
        """`3/10 paths`, or for bytes `1.5 MiB/12.0 MiB`; with the bar's note after it."""
        note = f", {self.note}" if self.note else ""
        if self.unit == "B":
            return f"{self._amount(self.done)}/{self._amount(self.total)}{note}"
        return f"{self.done}/{self.total}" + (f" {self.unit}" if self.unit else "") + note

    def _rate(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.done / elapsed
        per_s = f"{self._amount(rate)}/s" if self.unit == "B" else f"{rate:.1f}/s"
        left = f", {max(self.total - self.done, 0) / rate:.0f} s left" if rate > 0 and self.done < self.total else ""
        return per_s + left

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
        p = self.progress
        if self.live is not None:
            self.live.stop()  # transient: the live bar is erased, the summary line below replaces it
        if p.enabled:
            elapsed = time.monotonic() - self.started
            p.stream.write(f"{self.label}: {self._count()} in {elapsed:.1f} s\n")
            p.stream.flush()
        if p._bar is self:
            p._bar = None
