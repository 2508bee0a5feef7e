"""A record's held files parsed in worker processes ahead of the build (ingest/payloads/parse_ahead.py, issue 13) give the
graph a serial ingest gives, byte for byte: for the shared NERDm records (read whole and streamed) and a plain
folder; each file is parsed once, in a worker; a file the builder passes over or did not announce, and a worker
killed mid-record, change nothing."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

import voe.ingest.payloads.parse_ahead as parse_ahead
from tests.ingest.write.test_replace import snapshot
from voe.graph import Graph
from voe.ingest import ingest_paths
from voe.ingest.payloads.documents import parse_file
from voe.ingest.payloads.parse_ahead import ParseAhead, Workers

RECORDS = ("mds2-4103", "mds2-2525", "amb2025-template")


def _in_this_process(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files ParseAhead parses in the ingest's own process (a worker's calls happen in its own copy)."""
    here: list[str] = []

    def counting(path: Path, relpath: str) -> Any:
        here.append(relpath)
        return parse_file(path, relpath)

    monkeypatch.setattr(parse_ahead, "parse_file", counting)
    return here


def _taken(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    take = ParseAhead.take

    def counting(self: ParseAhead, path: Path, relpath: str) -> Any:
        seen.append(relpath)
        return take(self, path, relpath)

    monkeypatch.setattr(ParseAhead, "take", counting)
    return seen


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_parsed_ahead_the_graph_is_the_serial_one(graph: Graph, archives: Path, monkeypatch: pytest.MonkeyPatch,
                                                  streamed: bool) -> None:
    paths = [archives / name for name in RECORDS]
    if streamed:
        monkeypatch.setenv("VOE_STREAM_BYTES", "1")
    monkeypatch.setenv("VOE_PARSE_WORKERS", "1")
    with monkeypatch.context() as m:
        parsed_serially = _in_this_process(m)  # one worker: each file parsed in place, in the builder's order
        serial = ingest_paths(paths, graph)
    assert serial.errors == [] and len(parsed_serially) >= 20
    expected = snapshot(graph)
    graph.clear()
    monkeypatch.setenv("VOE_PARSE_WORKERS", "2")
    here, taken = _in_this_process(monkeypatch), _taken(monkeypatch)
    ahead = ingest_paths(paths, graph)
    assert ahead.errors == []
    assert taken == parsed_serially  # the same files, in the same order, each once
    assert here == []  # ... every one parsed by a worker
    assert snapshot(graph) == expected
    assert (ahead.facts, ahead.formats, ahead.defects) == (serial.facts, serial.formats, serial.defects)


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.suffix != ".sha256")


def test_passed_over_and_unannounced_files_are_parsed_as_parse_file_would(archives: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOE_PARSE_WORKERS", "2")
    root = archives / "amb2025-template"
    files = _files(root)
    assert len(files) >= 8
    workers = Workers()
    ahead = ParseAhead(root, files[:6], workers)
    try:
        # the second and fourth announced files are passed over; an unannounced one is taken in between
        for rel in (files[0], files[2], files[7], files[4], files[5], files[1]):
            assert ahead.take(root / rel, rel) == parse_file(root / rel, rel), rel
    finally:
        ahead.close()
        workers.close()


def test_a_killed_worker_leaves_the_rest_to_the_ingest_process(archives: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOE_PARSE_WORKERS", "2")
    root = archives / "amb2025-template"
    files = _files(root)
    here = _in_this_process(monkeypatch)
    workers = Workers()
    ahead = ParseAhead(root, files, workers)
    try:
        assert ahead.take(root / files[0], files[0]) == parse_file(root / files[0], files[0])
        assert here == []
        pool = ahead._pool  # noqa: SLF001 - the test kills one of its processes
        assert pool is not None
        os.kill(next(iter(pool._processes)), signal.SIGKILL)  # noqa: SLF001
        time.sleep(0.5)  # the pool notices
        for rel in files[1:]:
            assert ahead.take(root / rel, rel) == parse_file(root / rel, rel), rel
        assert here  # after the worker died, files were parsed here
        assert workers.pool() is not None  # the next record gets new workers
        again = ParseAhead(root, files[:3], workers)
        for rel in files[:3]:
            assert again.take(root / rel, rel) == parse_file(root / rel, rel), rel
    finally:
        ahead.close()
        workers.close()


def test_one_worker_parses_in_place(archives: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOE_PARSE_WORKERS", "1")
    root = archives / "amb2025-template"
    files = _files(root)
    ahead = ParseAhead(root, files, Workers())
    assert ahead._pool is None  # noqa: SLF001
    assert ahead.take(root / files[0], files[0]) == parse_file(root / files[0], files[0])
    ahead.close()
