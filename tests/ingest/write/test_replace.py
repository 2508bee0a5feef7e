"""Replacing a record that is written in several transactions (issue 8): the previous complete version stays
readable until the new one commits, a failed or killed replacement leaves one whole version, two ingests at
once do not touch each other's nodes, and the end state is the one a direct ingest of the new version gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import voe.ingest.write.loader as loader
from tests.conftest import REPO
from voe.graph import Graph
from voe.ingest import ingest_paths

# small enough that a record of a few thousand elements is chunked, staged and swapped
SMALL = {"SINGLE_TX_ELEMENTS": 400, "CHUNK_ELEMENTS": 600}


def _record(root: Path, n: int, title: str, held: int = 0) -> Path:
    """A NERDm record of n data files in folders of 100, the first `held` of them present as bytes (so the
    record has File nodes and located facts), with the title given."""
    root.mkdir(parents=True, exist_ok=True)
    comps: list[dict[str, Any]] = [{"@id": f"cmps/d{k}", "@type": ["nrdp:Subcollection"], "filepath": f"d{k}"}
                                   for k in range(n // 100 + 1)]
    for i in range(n):
        path = f"d{i // 100}/f{i}.csv"
        comps.append({"@id": f"cmps/{path}", "@type": ["nrdp:DataFile"], "filepath": path, "mediaType": "text/csv",
                      "size": 12})
        if i < held:
            (root / path).parent.mkdir(exist_ok=True)
            (root / path).write_text(f"a,b\n{i},{i % 7}\n")
    doc = {"@id": "ark:/88434/mds2-7777", "_schema": "https://data.nist.gov/od/dm/nerdm-schema/v0.7#",
           "@type": ["nrdp:PublicDataResource"], "title": title, "version": "1.0.0", "components": comps}
    (root / "nerdm.json").write_text(json.dumps(doc))
    return root


def snapshot(graph: Graph) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Every node (id, labels, properties) and relationship (ends, type, properties) of the graph."""
    with graph._driver.session() as s:  # noqa: SLF001 - the test inspects the graph directly
        nodes = sorted((r["id"], tuple(sorted(r["labels"])), json.dumps(r["p"], sort_keys=True, default=str))
                       for r in s.run("MATCH (n) RETURN n.id AS id, labels(n) AS labels, properties(n) AS p"))
        edges = sorted((r["a"], r["t"], r["b"], json.dumps(r["p"], sort_keys=True, default=str))
                       for r in s.run("MATCH (a)-[r]->(b) RETURN a.id AS a, type(r) AS t, b.id AS b, "
                                      "properties(r) AS p"))
    return nodes, edges


def reader_view(graph: Graph) -> list[Any]:
    """What the compiler reads of the graph."""
    return [graph.query("compiler/records"), graph.query("compiler/evidence_catalog")]


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SMALL.items():
        monkeypatch.setattr(loader, name, value)


@pytest.fixture
def versions(tmp_path: Path) -> tuple[Path, Path]:
    """Two versions of one record (same id): the second has another title and more bytes held."""
    return _record(tmp_path / "v1", 700, "first version", held=40), _record(tmp_path / "v2", 700, "second", held=60)


def test_a_replacement_ends_as_a_direct_ingest_of_the_new_version(graph: Graph, versions: tuple[Path, Path],
                                                                  small_chunks: None) -> None:
    v1, v2 = versions
    assert ingest_paths([v2], graph).errors == []
    direct = snapshot(graph)
    graph.clear()
    assert ingest_paths([v1], graph).errors == []
    first = snapshot(graph)
    again = ingest_paths([v1], graph)
    assert again.records_unchanged == 1 and snapshot(graph) == first
    report = ingest_paths([v2], graph)
    assert report.errors == [] and report.records_replaced == 1
    assert snapshot(graph) == direct
    assert len(direct[0]) > 3 * SMALL["CHUNK_ELEMENTS"]  # the record really was written in chunks


def browser_view(graph: Graph) -> list[tuple[str, str, int, int]]:
    """What the Browser queries of docs/guide/review.md read: the complete Records, each with its components and
    their defects."""
    with graph._driver.session() as s:  # noqa: SLF001
        return sorted((r["ark"], r["title"], r["components"], r["defects"]) for r in s.run(
            "MATCH (r:Record {ingest_state: 'complete'}) OPTIONAL MATCH (r)-[:HAS_COMPONENT]->(c) "
            "OPTIONAL MATCH (c)-[:HAS_DEFECT]->(d:Defect) "
            "RETURN r.ark AS ark, r.title AS title, count(DISTINCT c) AS components, count(d) AS defects"))


def test_readers_see_the_previous_version_until_the_swap(graph: Graph, versions: tuple[Path, Path],
                                                         small_chunks: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the commit point the compiler's reading and the Browser's see the previous version; from it on the
    Browser's (which starts from complete Records) sees the new one whole while the swap deletes and renames
    in batches — at no step neither version, or a part of one."""
    v1, v2 = versions
    ingest_paths([v2], graph)
    new_browser = browser_view(graph)
    graph.clear()
    ingest_paths([v1], graph)
    before, old_browser = reader_view(graph), browser_view(graph)
    assert old_browser != new_browser and len(old_browser) == 1
    seen: dict[str, tuple[list[Any], list[Any]]] = {}
    monkeypatch.setattr(loader, "_fault",
                        lambda step: seen.setdefault(step, (reader_view(graph), browser_view(graph))))
    ingest_paths([v2], graph)
    staging = ["lease", "nodes", "files", "edges", "late"]
    assert set(staging) | {"commit", "deleted_old", "renamed"} <= set(seen)
    for step in staging:
        assert seen[step] == (before, old_browser), step
    for step in ("commit", "deleted_old", "renamed"):
        assert seen[step][1] == new_browser, step
    after = reader_view(graph)
    assert after != before and after[0][0]["title"] == "second"
    assert browser_view(graph) == new_browser


def test_a_failed_replacement_keeps_the_previous_version(graph: Graph, versions: tuple[Path, Path],
                                                         small_chunks: None, monkeypatch: pytest.MonkeyPatch) -> None:
    v1, v2 = versions
    ingest_paths([v1], graph)
    first = snapshot(graph)
    commits = [0]
    original = loader.Chunker._commit

    def failing(self: loader.Chunker, nodes: Any, edges: Any) -> Any:
        commits[0] += 1
        if commits[0] == 4:
            raise RuntimeError("injected failure in the fourth chunk")
        return original(self, nodes, edges)

    monkeypatch.setattr(loader.Chunker, "_commit", failing)
    report = ingest_paths([v2], graph)
    assert [e.message for e in report.errors] == [
        "could not be ingested: RuntimeError while writing record:ark:/88434/mds2-7777@1.0.0 to the graph: "
        "injected failure in the fourth chunk"]
    assert snapshot(graph) == first


def test_a_replacement_takes_over_source_locations_another_record_wrote_meanwhile(
        graph: Graph, tmp_path: Path, versions: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Two records holding the same bytes share their located facts (content-addressed ids). Replaced in
    chunks, a record takes them back as a direct ingest would."""
    v1, v2 = versions
    other = _record(tmp_path / "other", 60, "other", held=60)
    doc = json.loads((other / "nerdm.json").read_text())
    doc["@id"] = "ark:/88434/mds2-7778"
    (other / "nerdm.json").write_text(json.dumps(doc))
    ingest_paths([v1], graph)
    ingest_paths([other], graph)
    ingest_paths([v2], graph)
    direct = snapshot(graph)
    graph.clear()
    for name, value in SMALL.items():
        monkeypatch.setattr(loader, name, value)
    ingest_paths([v1], graph)
    ingest_paths([other], graph)
    assert ingest_paths([v2], graph).errors == []
    assert snapshot(graph) == direct


def _ingest_in_child(paths: list[Path], uri: str, fault: str | None = None,
                     streamed: bool = False) -> subprocess.Popen[str]:
    code = ("import sys; import voe.ingest.write.loader as L; import voe.ingest.sources.nerdm.stream as N; "
            + "N.CHUNK_COMPONENTS = 100; "
            + "".join(f"L.{k} = {v}; " for k, v in SMALL.items())
            + "from pathlib import Path; from voe.ingest import ingest_paths; from voe.graph import Graph; "
            "g = Graph(); r = ingest_paths([Path(p) for p in sys.argv[1:]], g); "
            "print(r.model_dump_json()); g.close()")
    env = {**os.environ, "NEO4J_URI": uri}
    env.pop("VOE_FAULT_AT", None)
    env.pop("VOE_STREAM_BYTES", None)
    if streamed:  # read in passes and written 100 components a transaction (ingest/sources/nerdm/stream.py)
        env["VOE_STREAM_BYTES"] = "1"
    if fault:
        env["VOE_FAULT_AT"] = fault
    return subprocess.Popen([sys.executable, "-c", code, *map(str, paths)], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _old_held_new_known(graph: Graph, versions: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """With small chunks: the graph a clean ingest of each version leaves (old, new); the graph holds the old."""
    v1, v2 = versions
    for name, value in SMALL.items():
        monkeypatch.setattr(loader, name, value)
    ingest_paths([v2], graph)
    new = snapshot(graph)
    graph.clear()
    ingest_paths([v1], graph)
    return snapshot(graph), new


@pytest.mark.timeout(600)
@pytest.mark.parametrize("streamed", [False, True], ids=["chunked", "streamed"])
@pytest.mark.parametrize("step", loader.FAULT_STEPS)
def test_kill_9_at_any_step_leaves_one_whole_version(graph: Graph, versions: tuple[Path, Path], tmp_path: Path,
                                                     step: str, streamed: bool,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The replacement is killed (SIGKILL) at `step`; the next ingest of anything, or a reader, finds either the
    previous version or the new one, exactly as a clean ingest leaves it. Streamed: the record file is read in
    passes and written 100 components a transaction (the graphs it writes equal the in-memory build's)."""
    _, v2 = versions
    old, new = _old_held_new_known(graph, versions, monkeypatch)
    child = _ingest_in_child([v2], graph.settings.uri, fault=step, streamed=streamed)
    out, err = child.communicate(timeout=300)
    assert child.returncode == -9, out + err
    unrelated = _record(tmp_path / "unrelated", 5, "unrelated")
    doc = json.loads((unrelated / "nerdm.json").read_text())
    doc["@id"] = "ark:/88434/mds2-7779"
    (unrelated / "nerdm.json").write_text(json.dumps(doc))
    assert ingest_paths([unrelated], graph).errors == []
    with graph._driver.session() as s:  # noqa: SLF001
        s.run("MATCH (n:Node) WHERE n.record_id STARTS WITH 'record:ark:/88434/mds2-7779' DETACH DELETE n").consume()
        s.run("MATCH (a:Archive) WHERE NOT (a)--() DELETE a").consume()
        s.run("MATCH (f:File) WHERE NOT EXISTS { ()-[:STORED_AS|IN_FILE|EVIDENCED_BY]->(f) } DELETE f").consume()
    after = snapshot(graph)
    committed = loader.FAULT_STEPS.index(step) >= loader.FAULT_STEPS.index("commit")
    assert after == (new if committed else old)


def _view_of(graph: Graph, record_id: str) -> list[Any]:
    """The compiler's rows of one record, lists in a fixed order (`collect` gives no order)."""
    def fixed(row: dict[str, Any]) -> dict[str, Any]:
        return {k: sorted(v, key=lambda x: json.dumps(x, sort_keys=True, default=str)) if isinstance(v, list) else v
                for k, v in row.items()}
    return [[fixed(r) for r in rows if r["record_id"] == record_id] for rows in reader_view(graph)]


@pytest.mark.timeout(600)
def test_two_ingests_at_once_do_not_touch_each_others_nodes(graph: Graph, tmp_path: Path,
                                                           versions: tuple[Path, Path]) -> None:
    """A chunked ingest runs while another process replaces a record over and over whose held files have the
    same bytes as some of the first one's (so they share File nodes and each replacement prunes orphan files);
    the chunked record lands whole: the compiler reads it exactly as when it is ingested alone."""
    big = _record(tmp_path / "big", 1500, "big", held=300)
    doc = json.loads((big / "nerdm.json").read_text())
    doc["@id"] = "ark:/88434/mds2-7780"
    (big / "nerdm.json").write_text(json.dumps(doc))
    rid = "record:ark:/88434/mds2-7780@1.0.0"
    v1, v2 = versions
    alone = _ingest_in_child([big], graph.settings.uri)
    assert alone.wait(timeout=300) == 0
    reference = _view_of(graph, rid)
    assert reference[0] and len(reference[1]) > 10
    graph.clear()
    child = _ingest_in_child([big], graph.settings.uri)
    rounds = 0
    while child.poll() is None and rounds < 40:
        assert ingest_paths([v1 if rounds % 2 == 0 else v2], graph).errors == []
        rounds += 1
    out, err = child.communicate(timeout=300)
    assert child.returncode == 0, err
    assert json.loads(out.strip().splitlines()[-1])["errors"] == []
    assert rounds >= 2
    assert _view_of(graph, rid) == reference


def test_the_same_record_twice_at_once_is_refused_cleanly(graph: Graph, versions: tuple[Path, Path]) -> None:
    """While one ingest holds the record's lease, a second one of the same record says so and writes nothing."""
    v1, v2 = versions
    slow = _record(v1.parent / "slow", 5000, "first version")  # written in many chunks: seconds
    child = _ingest_in_child([slow], graph.settings.uri)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and child.poll() is None:
        state = graph.query("ingest/record_state", record_id="record:ark:/88434/mds2-7777@1.0.0")
        if state and state[0]["state"] == "writing":
            break
        time.sleep(0.05)
    else:
        pytest.fail("the first ingest never reached its chunked write")
    report = ingest_paths([v2], graph)
    assert child.wait(timeout=300) == 0
    assert len(report.errors) == 1 and "is being written by another ingest" in report.errors[0].message
    assert reader_view(graph)[0][0]["title"] == "first version"


def test_a_stale_row_of_a_writer_that_died_past_its_commit_point_finishes_its_swap(
        graph: Graph, versions: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A recovery that read the staged Record as `writing` just before its writer committed the swap and died
    acts on what it finds under the lock (the swap to finish), not on the row it read (which would delete the
    version readers now see)."""
    _, v2 = versions
    _, new = _old_held_new_known(graph, versions, monkeypatch)
    child = _ingest_in_child([v2], graph.settings.uri, fault="commit")
    out, err = child.communicate(timeout=300)
    assert child.returncode == -9, out + err
    [row] = [r for r in graph.query("ingest/stale_writers") if r["record_id"].startswith(loader.STAGED)]
    assert row["state"] == "deleting"
    assert loader._finish_dead(graph, {**row, "state": "writing"})  # noqa: SLF001 - the row as read before the commit
    assert snapshot(graph) == new
