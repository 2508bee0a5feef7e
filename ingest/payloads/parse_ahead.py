"""Parse a record's held files in worker processes, ahead of the builder that consumes them in its own order.

A builder names up front, in its order, the files it expects to parse (a `ParseAhead` of them); the pool parses a
few of them ahead while the builder hashes, checks and builds rows, and `take` hands each result over when
the builder reaches that file. `parse_file` is a pure function of the file's bytes and the budgets, so the rows
are those of a serial build (tests/ingest/payloads/test_parse_ahead.py compares graphs). A file the builder takes that
was not expected, or passes over, is parsed in the builder's process or dropped: expecting is only a guess.

Workers are forked: `spawn` and `forkserver` run a caller's `__main__` again in each worker, which a script
without a `__main__` guard does not survive. When a worker dies (killed from outside), the file it was parsing
and the rest are parsed in the builder's process, as a serial build would.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Iterable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from voe.ingest.payloads.documents import parse_file
from voe.ingest.payloads.parsers.model import Parsed
from voe.settings import settings

log = logging.getLogger("voe.ingest")
AHEAD_PER_WORKER = 2  # files parsed ahead per worker: enough to keep it busy, few results held at once
PARENT_CHECK_S = 0.5


def workers() -> int:
    """VOE_PARSE_WORKERS, else the cores this process may use (at most 4); 1 parses in the builder's process."""
    chosen = settings().voe_parse_workers
    if chosen is not None:
        return max(1, chosen)
    return max(1, min(4, len(os.sched_getaffinity(0))))


def _parse(path: str, relpath: str) -> Parsed | None:
    return parse_file(Path(path), relpath)


def _worker_start(parent: int) -> None:
    """In each worker: Ctrl-C is the ingest's to handle (it stops the pool), and a worker whose ingest died
    (kill -9 leaves the pool no chance to stop it) exits instead of holding the ingest's stdout open."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_S)
        os._exit(1)

    threading.Thread(target=watch, name="voe-parent-watch", daemon=True).start()


class Workers:
    """The worker processes of one ingest call, forked when a record first has files to parse ahead and kept
    for the records after it (forking a large process per record costs more than small files' parsing)."""

    def __init__(self) -> None:
        self.count = workers()
        self._pool: ProcessPoolExecutor | None = None

    def pool(self) -> ProcessPoolExecutor | None:
        if self._pool is None and self.count > 1:
            self._pool = ProcessPoolExecutor(max_workers=self.count, mp_context=multiprocessing.get_context("fork"),
                                             initializer=_worker_start, initargs=(os.getpid(),))
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ParseAhead:
    """One record's build: `relpaths` are the files under `root` it expects to parse, in the order it will take
    them. With one worker, or fewer than two files, it parses in place."""

    def __init__(self, root: Path, relpaths: Iterable[str], pool: Workers) -> None:
        self.root = root
        self._workers = pool
        self._queued: deque[str] = deque(relpaths)
        self._flight: deque[tuple[str, Future[Parsed | None]]] = deque()
        self._expected: dict[str, int] = {}  # relpath -> how many of its parses are queued or in flight
        for rel in self._queued:
            self._expected[rel] = self._expected.get(rel, 0) + 1
        self._pool = pool.pool() if len(self._queued) > 1 else None
        self._ahead = pool.count * AHEAD_PER_WORKER
        self._fill()

    def _fill(self) -> None:
        while self._pool is not None and self._queued and len(self._flight) < self._ahead:
            rel = self._queued[0]
            try:
                future = self._pool.submit(_parse, str(self.root / rel), rel)
            except BrokenProcessPool:
                self._give_up(rel)
                return
            self._flight.append((self._queued.popleft(), future))

    def _give_up(self, relpath: str) -> None:
        """A worker died: what it and the others had not finished is parsed in this process (the next record
        gets new workers)."""
        log.warning("a parser process died (at %s at the latest); the record's other files are parsed in the "
                    "ingest's own process", relpath)
        self._workers.close()
        self.close()
        self._flight.clear()
        self._queued.clear()
        self._expected.clear()

    def _forget(self, rel: str) -> None:
        left = self._expected[rel] - 1
        if left:
            self._expected[rel] = left
        else:
            del self._expected[rel]

    def take(self, path: Path, relpath: str) -> Parsed | None:
        """What `parse_file(path, relpath)` returns: from the pool when it was expected, else parsed here."""
        if self._pool is None or relpath not in self._expected or path != self.root / relpath:
            return parse_file(path, relpath)
        while True:
            if not self._flight:
                self._fill()
            if not self._flight:  # expected, but passed over with the files before it
                return parse_file(path, relpath)
            rel, future = self._flight.popleft()
            self._forget(rel)
            if rel == relpath:
                break
            future.cancel()  # a file the builder passed over (not held after all): its result is not needed
        self._fill()
        try:
            return future.result()
        except BrokenProcessPool:
            self._give_up(relpath)
            return parse_file(path, relpath)

    def close(self) -> None:
        """What is still in flight is not needed (a build that stopped early): dropped."""
        for _, future in self._flight:
            future.cancel()
        self._flight.clear()
        self._pool = None
