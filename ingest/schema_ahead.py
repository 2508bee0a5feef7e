"""The schema check of a streamed record's components in a forked process, a chunk ahead of the builder.

In a large streamed ingest the builder's thread and the writing thread share one interpreter: the NERDm schema
check (a fifth of the builder's work) is time the writing thread waits for the interpreter while the server
waits for its next statement. The check of one component depends on that component alone, so a forked process
reads the record file again and checks each component against its schemas (`SchemaCheck.validate_component`),
and hands the builder each chunk's findings. What depends on all components (uniqueness) stays with the
builder. The findings are those of the builder's own check, in the same order (tests/ingest/test_nerdm_stream.py
compares graphs). When the process is gone or answers out of step, the builder checks the rest itself.

The process is forked (as ingest/parse_ahead.py's workers, for the same reason) from the builder's thread; it
only reads the file and the schemas the builder had loaded, and exits when the builder's process does.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import Any

from ingest.nerdm_schema import SchemaCheck, Violation
from ingest.parse_ahead import _worker_start, workers

log = logging.getLogger("voe.ingest")


def _check_all(items: Callable[[], Iterator[Any]], check: SchemaCheck, every: int, conn: Connection,
               parent: int) -> None:
    """In the forked process: (last index, findings) per `every` components, then ("done", None)."""
    _worker_start(parent)
    try:
        last = -1
        for i, raw in enumerate(items()):
            check.validate_component(i, raw)
            last = i
            if (i + 1) % every == 0:
                conn.send((i, check.take()))
        if (last + 1) % every:
            conn.send((last, check.take()))
        conn.send(("done", None))
    except BaseException as exc:  # noqa: BLE001 - the builder checks the rest itself and reads the file anyway
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


class SchemaAhead:
    """The forked checker of one streamed record; `take(last)` gives the findings of the chunk ending at
    component `last`, or None when the builder must check that chunk itself (and every chunk after it)."""

    def __init__(self, items: Callable[[], Iterator[Any]], check: SchemaCheck, every: int) -> None:
        self._conn: Connection | None = None
        self._proc: Any = None
        if workers() < 2:  # VOE_PARSE_WORKERS=1: the ingest keeps to its own process
            return
        receive, send = multiprocessing.Pipe(duplex=False)
        ctx = multiprocessing.get_context("fork")
        try:
            self._proc = ctx.Process(target=_check_all, args=(items, check, every, send, os.getpid()),
                                     name="voe-schema-ahead", daemon=True)
            self._proc.start()
        except OSError as exc:  # no process to be had (limits): the builder checks in its own
            log.info("schema check in the ingest's own process: %s", exc)
            receive.close()
            self._proc = None
        else:
            self._conn = receive
        finally:
            send.close()

    def take(self, last: int) -> list[Violation] | None:
        if self._conn is None:
            return None
        try:
            at, found = self._conn.recv()
        except (EOFError, OSError):
            at, found = "gone", None
        if at != last:
            log.info("schema check ahead stopped (%s); the builder checks the rest", found if at == "error" else at)
            self.close()
            return None
        return list(found)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()
            self._proc.join()
            self._proc = None
