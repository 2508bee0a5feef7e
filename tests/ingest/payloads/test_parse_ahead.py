"""A record's held files parsed in worker processes ahead of the build (ingest/payloads/parse_ahead.py, issues 13 and
44) give the graph one worker gives, byte for byte: for the shared NERDm records (read whole and streamed) and a
plain folder; each file is parsed once, in a worker, never in the ingest's process; a file the builder passes over
or did not announce changes nothing; a worker killed mid-file costs that file only."""

from __future__ import annotations

import os
import signal
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

    def counting(self: ParseAhead, path: Path, relpath: str, local: Any = None) -> Any:
        seen.append(relpath)
        return take(self, path, relpath, local)

    monkeypatch.setattr(ParseAhead, "take", counting)
    return seen


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_parsed_ahead_the_graph_is_the_one_of_a_single_worker(graph: Graph, archives: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch, streamed: bool) -> None:
    paths = [archives / name for name in RECORDS]
    if streamed:
        monkeypatch.setenv("VOE_STREAM_BYTES", "1")
    monkeypatch.setenv("VOE_CACHE_DIR", str(tmp_path / "one"))
    here = _in_this_process(monkeypatch)
    monkeypatch.setenv("VOE_PARSE_WORKERS", "1")
    with monkeypatch.context() as m:
        taken_serially = _taken(m)  # one worker: each file parsed in the builder's order, one at a time
        serial = ingest_paths(paths, graph)
    assert serial.errors == [] and len(taken_serially) >= 20
    expected = snapshot(graph)
    graph.clear()
    monkeypatch.setenv("VOE_PARSE_WORKERS", "2")
    monkeypatch.setenv("VOE_CACHE_DIR", str(tmp_path / "two"))  # parsed anew
    taken = _taken(monkeypatch)
    ahead = ingest_paths(paths, graph)
    assert ahead.errors == []
    assert taken == taken_serially  # the same files, in the same order, each once
    assert here == []  # ... every one parsed by a worker, in both ingests
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


def test_a_killed_worker_costs_its_file_only_and_is_replaced(archives: Path, monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    monkeypatch.setenv("VOE_PARSE_WORKERS", "2")
    monkeypatch.setenv("VOE_CACHE_DIR", str(tmp_path))
    root = archives / "amb2025-template"
    files = _files(root)
    here = _in_this_process(monkeypatch)
    workers = Workers()
    ahead = ParseAhead(root, files, workers)
    try:
        assert ahead.take(root / files[0], files[0]) == parse_file(root / files[0], files[0])
        busy = workers._busy[0]  # noqa: SLF001 - the test kills the worker parsing a file ahead
        assert busy.job is not None
        victim = busy.job.relpath
        os.kill(busy.proc.pid, signal.SIGKILL)
        for rel in files[1:]:
            parsed = ahead.take(root / rel, rel)
            if rel == victim:
                assert parsed is not None and [d.rule for d in parsed.defects] == ["parse.os_limit"], rel
            else:
                assert parsed == parse_file(root / rel, rel), rel
        assert here == [] and workers.forked == 3  # the two workers and the one that replaced the dead
        again = ParseAhead(root, files[:3], workers)  # the next record is parsed by the same workers
        for rel in files[:3]:
            assert again.take(root / rel, rel) == parse_file(root / rel, rel), rel
        assert workers.forked == 3
    finally:
        ahead.close()
        workers.close()


def test_one_worker_still_parses_out_of_the_ingest_process(archives: Path, monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    monkeypatch.setenv("VOE_PARSE_WORKERS", "1")
    monkeypatch.setenv("VOE_CACHE_DIR", str(tmp_path))
    root = archives / "amb2025-template"
    files = _files(root)
    here = _in_this_process(monkeypatch)
    with Workers() as workers:
        ahead = ParseAhead(root, files, workers)
        for rel in files:
            assert ahead.take(root / rel, rel) == parse_file(root / rel, rel), rel
        ahead.close()
        assert here == [] and workers.forked == 1
