"""Hostile files under the parsers' bounds (issue 44): tiny files that a library left alone turns into gigabytes
or minutes end quickly beside a good record, with a defect; each operating-system limit stops its file and names
itself; a file swapped for a link while the ingest runs never brings outside content; a parse is paid once."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import random
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.ingest.payloads.hostile import shared_strings_bomb, write_all
from voe.graph import Graph
from voe.ingest import ingest_paths
from voe.ingest.builder import BuilderCore
from voe.ingest.payloads import parse_ahead
from voe.ingest.payloads.files import LocalBytes
from voe.ingest.payloads.parsers.model import FileDefect, Parsed

GOOD = "sample,yield_strength_MPa\nB1,1012\n"
PEAK = 1.5 * (1 << 30)

# runs `voe ingest` and prints its exit, its time and the largest resident size of it or any of its workers
MEASURED = """
import json, resource, subprocess, sys, time
t = time.monotonic()
done = subprocess.run([sys.executable, "-m", "voe.cli", *sys.argv[1:]], capture_output=True, text=True)
print(json.dumps({"rc": done.returncode, "seconds": time.monotonic() - t, "stdout": done.stdout,
                  "stderr": done.stderr, "peak": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))
"""


def _defects(graph: Graph, path: str) -> list[dict[str, str]]:
    with graph._driver.session() as s:  # noqa: SLF001 - the test reads what a reviewer would
        return s.run("MATCH (d:Defect {path: $p}) RETURN d.kind AS kind, d.rule AS rule, d.detail AS detail",
                     p=path).data()


def _values(graph: Graph) -> list[str]:
    """The text of every located fact."""
    with graph._driver.session() as s:  # noqa: SLF001
        return [str(r["v"]) for r in s.run("MATCH (f:SourceLocation) RETURN coalesce(f.text, f.value) AS v")]


def test_the_hostile_files_end_within_a_minute_and_a_gigabyte_and_a_half_beside_a_good_record(
        graph: Graph, archives: Path, cli_env: dict[str, str], tmp_path: Path) -> None:
    folder = tmp_path / "hostile"
    write_all(folder)
    (folder / "good.csv").write_text(GOOD)
    done = subprocess.run([sys.executable, "-c", MEASURED, "ingest", str(folder), str(archives / "amb2025-template"),
                           "--json"], capture_output=True, text=True, env=cli_env, check=True)
    run = json.loads(done.stdout)
    assert run["rc"] in (0, 2) and "Traceback" not in run["stderr"], run["stderr"]
    assert run["seconds"] < 60 and run["peak"] < PEAK, (run["seconds"], run["peak"])
    report = json.loads(run["stdout"])
    assert report["errors"] == [] and len(report["per_record"]) == 2  # the good record landed in the same call
    assert "B1" in _values(graph) and "1012" in _values(graph)
    # the ranges a font or a CMap may declare were cut before they were expanded; the string table at the cells
    assert [d["kind"] for d in _defects(graph, "cmap.pdf")] == ["corrupt_file"]
    assert "CMap range 000000..ffffff" in _defects(graph, "cmap.pdf")[0]["detail"]
    assert "width range 0..2147483647" in _defects(graph, "widths.pdf")[0]["detail"]
    assert [(d["kind"], d["rule"]) for d in _defects(graph, "strings.xlsx")] == [("resource_limit", "parse.budget")]


@pytest.mark.parametrize(("limit", "variable", "value"), [
    ("memory", "VOE_LIMIT_PARSE_MEMORY", "16M"), ("cpu", "VOE_LIMIT_PARSE_CPU_SECONDS", "1"),
    ("wall", "VOE_LIMIT_PARSE_WALL_SECONDS", "1")])
def test_each_operating_system_limit_stops_its_file_names_itself_and_the_ingest_goes_on(
        graph: Graph, tmp_path: Path, cli_env: dict[str, str], limit: str, variable: str, value: str) -> None:
    folder = tmp_path / "rec"
    folder.mkdir()
    (folder / "strings.xlsx").write_bytes(shared_strings_bomb())  # ~11 s of parsing, 4 million strings (32 MiB)
    (folder / "good.csv").write_text(GOOD)
    # a fresh `voe ingest`, as a user runs it: the address-space limit is the worker's size at fork plus the
    # setting, and heap a long test process freed but still maps would be headroom no user's ingest has
    done = subprocess.run([sys.executable, "-m", "voe.cli", "ingest", str(folder), "--json"], capture_output=True,
                          text=True, env={**cli_env, variable: value}, check=False)
    assert done.returncode in (0, 2) and "Traceback" not in done.stderr, done.stderr
    assert json.loads(done.stdout)["errors"] == []
    found = _defects(graph, "strings.xlsx")
    assert [(d["kind"], d["rule"]) for d in found] == [("parse_budget_exceeded", "parse.os_limit")]
    assert f"the {limit} limit" in found[0]["detail"] and variable in found[0]["detail"]
    assert "B1" in _values(graph) and _defects(graph, "good.csv") == []


def test_a_file_swapped_for_a_link_while_the_ingest_runs_never_brings_outside_content(
        graph: Graph, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOE_PARSE_WORKERS", "2")
    outside = tmp_path / "outside.csv"
    outside.write_text("secret,value\nOUTSIDE_CANARY,987654321\n")
    folder = tmp_path / "rec"
    folder.mkdir()
    names = [f"m{i:03}.csv" for i in range(300)]
    for i, name in enumerate(names):
        (folder / name).write_text(f"sample,value\ninside{i},{i}\n" + "".join(f"r{j},{j}\n" for j in range(200)))
    stop = threading.Event()
    swapped: list[str] = []

    def swap() -> None:  # a file at a time becomes a link to the outside file, atomically (rename over it)
        order = random.Random(44).sample(names, len(names))
        for name in order:
            if stop.is_set():
                return
            link = folder / f".{name}.link"
            link.symlink_to(outside)
            os.replace(link, folder / name)
            swapped.append(name)
            time.sleep(0.004)

    swapper = threading.Thread(target=swap)
    swapper.start()
    try:
        report = ingest_paths([folder], graph)
    finally:
        stop.set()
        swapper.join()
    assert report.errors == [] and swapped
    assert not [v for v in _values(graph) if "OUTSIDE_CANARY" in v or "987654321" in v]
    with graph._driver.session() as s:  # noqa: SLF001
        kinds = {r["k"]: r["n"] for r in s.run("MATCH (d:Defect) RETURN d.kind AS k, count(*) AS n")}
    assert kinds.get("not_a_regular_file", 0) + kinds.get("changed_during_ingest", 0) >= 1, kinds


def test_a_file_swapped_for_a_link_after_it_was_hashed_is_a_changed_file_without_facts(
        graph: Graph, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "outside.csv"
    outside.write_text("secret,value\nOUTSIDE_CANARY,987654321\n")
    folder = tmp_path / "rec"
    folder.mkdir()
    for name in ("a.csv", "b.csv", "c.csv"):
        (folder / name).write_text(GOOD.replace("B1", f"{name[0]}1"))
    monkeypatch.setenv("VOE_CACHE_DIR", str(tmp_path / "cache"))
    hashed = tmp_path / "b-was-hashed"
    document, parse = BuilderCore.document, parse_ahead._parse  # noqa: SLF001

    def hashed_by_the_builder(self: BuilderCore, path: Path, relpath: str, local: LocalBytes, subject: str) -> None:
        if relpath == "b.csv":
            hashed.touch()  # `local` is its hash; the parse is taken next
        document(self, path, relpath, local, subject)

    def swapped_before_the_worker_opens_it(path: str, relpath: str, cpu_seconds: int) -> Any:  # in the worker
        if relpath == "b.csv":
            deadline = time.monotonic() + 30
            while not hashed.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            link = folder / ".link"
            link.symlink_to(outside)
            os.replace(link, path)
        return parse(path, relpath, cpu_seconds)

    monkeypatch.setattr(BuilderCore, "document", hashed_by_the_builder)
    monkeypatch.setattr(parse_ahead, "_parse", swapped_before_the_worker_opens_it)  # the workers fork after this
    report = ingest_paths([folder], graph)
    assert report.errors == []
    assert not [v for v in _values(graph) if "OUTSIDE_CANARY" in v or "987654321" in v]
    found = [d["kind"] for d in _defects(graph, "b.csv")]
    assert found == ["changed_during_ingest"], found
    assert "b1" not in _values(graph) and "a1" in _values(graph) and "c1" in _values(graph)


def test_a_parse_is_paid_once_a_reingest_reads_it_from_the_cache(graph: Graph, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOE_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "rec"
    folder.mkdir()
    (folder / "good.csv").write_text(GOOD)
    first = ingest_paths([folder], graph)
    entry = parse_ahead._cache_file(hashlib.sha256(GOOD.encode()).hexdigest(), "good.csv")  # noqa: SLF001
    cached = pickle.loads(entry.read_bytes())  # noqa: S301 - the test's own cache
    assert isinstance(cached, Parsed) and first.facts >= 2
    # the entry, altered on disk, is what a re-ingest of a cleared graph shows: the file was not parsed again
    cached.defects.append(FileDefect("parse.budget", "read from the cache"))
    entry.write_bytes(pickle.dumps(cached))
    graph.clear()
    graph.apply_schema()
    ingest_paths([folder], graph)
    assert [d["detail"] for d in _defects(graph, "good.csv")] == ["good.csv: read from the cache"]
