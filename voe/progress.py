"""Progress of long commands on stderr: messages, and a bar for counted work (paths, files, moments, episodes).

On a terminal the bar redraws in place at most ten times a second; elsewhere (a log, CI) it prints one line
when the work ends, so logs stay readable. `--quiet` turns both off; `--json` does not (it is stdout's shape).
"""

from __future__ import annotations

import sys
import time
from typing import IO


class Progress:
    def __init__(self, enabled: bool = True, stream: IO[str] | None = None) -> None:
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._bar: Bar | None = None

    def say(self, message: str) -> None:
        if not self.enabled:
            return
        if self._bar is not None and self.tty:
            self.stream.write("\r\x1b[K")  # the message goes above the bar, which redraws below it
        self.stream.write(message + "\n")
        if self._bar is not None:
            self._bar.draw(force=True)
        self.stream.flush()

    def bar(self, label: str, total: int, unit: str = "") -> Bar:
        self._bar = Bar(self, label, total, unit)
        return self._bar


class Bar:
    def __init__(self, progress: Progress, label: str, total: int, unit: str) -> None:
        self.progress, self.label, self.total, self.unit = progress, label, total, unit
        self.done = 0
        self.started = time.monotonic()
        self._drawn = 0.0

    def __enter__(self) -> Bar:
        self.draw(force=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def advance(self, n: int = 1) -> None:
        self.update(self.done + n)

    def update(self, done: int, total: int | None = None) -> None:
        self.done = done
        if total is not None:
            self.total = total
        self.draw()

    def _amount(self, n: float) -> str:
        if self.unit != "B":
            return f"{n:.0f}" if isinstance(n, int) else f"{n:.1f}"
        for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if n >= size:
                return f"{n / size:.1f} {unit}"
        return f"{n:.0f} B"

    def _count(self) -> str:
        """`3/10 paths`, or for bytes `1.5 MiB/12.0 MiB`."""
        if self.unit == "B":
            return f"{self._amount(self.done)}/{self._amount(self.total)}"
        return f"{self.done}/{self.total}" + (f" {self.unit}" if self.unit else "")

    def _line(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.done / elapsed
        width = 24
        filled = min(width, int(width * self.done / self.total)) if self.total else width
        eta = f", {max(self.total - self.done, 0) / rate:.0f} s left" if rate > 0 and self.done < self.total else ""
        per_s = f"{self._amount(rate)}/s" if self.unit == "B" else f"{rate:.1f}/s"
        return f"{self.label} [{'#' * filled}{'.' * (width - filled)}] {self._count()} ({per_s}{eta})"

    def draw(self, force: bool = False) -> None:
        p = self.progress
        if not p.enabled or not p.tty:
            return
        now = time.monotonic()
        if force or now - self._drawn >= 0.1 or self.done >= self.total:
            self._drawn = now
            p.stream.write("\r\x1b[K" + self._line())
            p.stream.flush()

    def close(self) -> None:
        p = self.progress
        if p.enabled:
            elapsed = time.monotonic() - self.started
            p.stream.write(("\r\x1b[K" if p.tty else "") + f"{self.label}: {self._count()} in {elapsed:.1f} s\n")
            p.stream.flush()
        if p._bar is self:
            p._bar = None
