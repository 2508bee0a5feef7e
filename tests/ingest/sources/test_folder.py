"""Plain folders (no NERDm record): `.sha256` sidecars, two folders with the same name, and what a re-ingest
of a folder reports (small folders written in the test, real Neo4j)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from tests.ingest.helpers import rows
from voe.graph import Graph
from voe.ingest import ingest_paths
from voe.ingest.payloads.files import list_entries, walk_order
from voe.ingest.pipeline import _files_progress
from voe.ingest.sources.folder import SKIP, FolderBuilder

FIRST = "record:folder:data@unversioned"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_sidecars_in_a_plain_folder_are_checksum_files(graph: Graph, tmp_path: Path) -> None:
    folder = tmp_path / "bench"
    (folder / "sub").mkdir(parents=True)
    good, bad = b"x (mm),y (mm)\n1,2\n", b"a,b\n3,4\n"
    (folder / "good.csv").write_bytes(good)
    (folder / "good.csv.sha256").write_text(f"{_sha(good).upper()}  good.csv\n")  # sha256sum line, upper case
    (folder / "sub" / "bad.csv").write_bytes(bad)
    (folder / "sub" / "bad.csv.sha256").write_text(_sha(b"something else"))
    (folder / "orphan.csv.sha256").write_text(_sha(b"gone"))
    report = ingest_paths([folder], graph)
    assert report.errors == []
    assert report.components == {"ChecksumFile": 3, "DataFile": 2, "Subcollection": 1}
    assert report.defects == {"sidecar_checksum_mismatch": 1, "sidecar_target_missing": 1}
    assert sum(report.evidence.values()) == 3
    evidence = rows(graph, "MATCH (e:Evidence) OPTIONAL MATCH (e)-[:EVIDENCED_BY]->(c) "
                           "RETURN e.filepath AS f, labels(c) AS labels, e.provenance AS p, e.available AS a")
    assert sorted(r["f"] for r in evidence) == ["good.csv", "orphan.csv", "sub/bad.csv"]
    assert all("ChecksumFile" not in (r["labels"] or []) for r in evidence)
    # the file the orphan checksum file attests: evidence with no acquisition path (a request answers unavailable)
    orphan = next(r for r in evidence if r["f"] == "orphan.csv")
    assert (orphan["labels"], orphan["p"], orphan["a"]) == (None, "attested", False)
    sidecars = rows(graph, "MATCH (s:Component) WHERE s.filepath ENDS WITH '.sha256' "
                           "RETURN s.filepath AS f, labels(s) AS labels, s.describes AS d ORDER BY f")
    assert [(r["f"], sorted(r["labels"])) for r in sidecars] == [
        (f, ["ChecksumFile", "Component", "Node"]) for f in ("good.csv.sha256", "orphan.csv.sha256", "sub/bad.csv.sha256")]
    assert [r["d"] for r in sidecars] == ["good.csv", "orphan.csv", "sub/bad.csv"]
    describes = rows(graph, "MATCH (s:ChecksumFile)-[:DESCRIBES]->(t:Component) RETURN s.filepath AS s, t.filepath AS t")
    assert sorted((r["s"], r["t"]) for r in describes) == [("good.csv.sha256", "good.csv"),
                                                           ("sub/bad.csv.sha256", "sub/bad.csv")]
    defects = rows(graph, "MATCH (c:ChecksumFile)-[:HAS_DEFECT]->(d:Defect)-[:LOCATED_AT]->(l:SourceLocation)"
                          "-[:IN_FILE]->(f:File) RETURN c.filepath AS c, d.kind AS kind, d.rule AS rule, "
                          "d.detail AS detail, l.locator AS loc, f.sha256 AS sha ORDER BY c")
    assert [(d["c"], d["kind"], d["rule"], d["loc"]) for d in defects] == [
        ("orphan.csv.sha256", "sidecar_target_missing", "folder.sidecar.describes", "file"),
        ("sub/bad.csv.sha256", "sidecar_checksum_mismatch", "folder.sidecar.bytes", "file")]
    assert defects[1]["sha"] == _sha((folder / "sub" / "bad.csv.sha256").read_bytes())
    assert _sha(bad) in defects[1]["detail"]
    # a component written as a DataFile by an older ingest loses that label on the next one
    rows(graph, "MATCH (c:ChecksumFile {filepath: 'good.csv.sha256'}) SET c:DataFile")
    again = ingest_paths([folder], graph)
    assert again.per_record[0].unchanged
    assert rows(graph, "MATCH (c:ChecksumFile:DataFile) RETURN count(c) AS n") == [{"n": 0}]


def test_two_folders_with_the_same_name_are_two_records(graph: Graph, tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "data", tmp_path / "b" / "data"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    (a / "one.csv").write_text("x,y\n1,2\n")
    (b / "one.csv").write_text("x,y\n1,2\n")  # same bytes, another folder
    (b / "two.csv").write_text("x,y\n3,4\n")
    said: list[str] = []
    first = ingest_paths([a], graph, progress=said.append)
    second = ingest_paths([b], graph, progress=said.append)
    other = f"record:folder:data~{_sha(str(b.resolve()).encode())[:8]}@unversioned"
    assert first.per_record[0].record_id == FIRST and first.per_record[0].shares_name_with is None
    assert second.per_record[0].record_id == other and second.per_record[0].shares_name_with == FIRST
    assert not second.per_record[0].replaced and second.records_replaced == 0
    assert any("already holds record:folder:data@unversioned from another folder" in m for m in said)
    records = rows(graph, "MATCH (r:Record) OPTIONAL MATCH (r)-[:HAS_COMPONENT]->(c) "
                          "RETURN r.id AS id, r.source_root AS root, r.title AS title, count(c) AS n ORDER BY id")
    assert records == [{"id": FIRST, "root": str(a.resolve()), "title": "data", "n": 1},
                       {"id": other, "root": str(b.resolve()), "title": "data", "n": 2}]
    # both ids are stable: re-ingesting either folder (both in one call) finds its own record unchanged
    again = ingest_paths([b, a], graph)
    assert [(r.record_id, r.unchanged, r.replaced) for r in again.per_record] == [(other, True, False),
                                                                                  (FIRST, True, False)]
    assert again.records_unchanged == 2 and again.graph["nodes_created"] == 0
    assert len(rows(graph, "MATCH (r:Record) RETURN r.id")) == 2


def test_a_reingest_says_whether_it_replaced_the_record(graph: Graph, tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "one.csv").write_text("x,y\n1,2\n")
    said: list[str] = []
    new = ingest_paths([folder], graph, progress=said.append).per_record[0]
    assert (new.replaced, new.unchanged, new.previous_stamp, new.source_root) == (False, False, None,
                                                                                  str(folder.resolve()))
    before = graph.counts()
    same = ingest_paths([folder], graph, progress=said.append)
    rec = same.per_record[0]
    assert (rec.unchanged, rec.replaced, rec.previous_stamp, rec.stamp) == (True, False, new.stamp, new.stamp)
    assert same.records_unchanged == 1 and same.graph["nodes_created"] == 0 and graph.counts() == before
    assert said[-1] == f"folder:data v-: unchanged since the previous ingest (stamp {new.stamp})"
    (folder / "one.csv").write_text("x,y\n1,5\n")
    changed = ingest_paths([folder], graph, progress=said.append)
    rec = changed.per_record[0]
    assert rec.record_id == FIRST and rec.replaced and not rec.unchanged and changed.records_replaced == 1
    assert rec.previous_stamp == new.stamp != rec.stamp
    assert said[-1] == f"folder:data v-: replaced the previous ingest (stamp {new.stamp} -> {rec.stamp})"
    dumped = changed.model_dump()["per_record"][0]  # what `voe ingest --json` prints
    assert {k: dumped[k] for k in ("replaced", "unchanged", "previous_stamp", "stamp")} == {
        "replaced": True, "unchanged": False, "previous_stamp": new.stamp, "stamp": rec.stamp}
    values = rows(graph, "MATCH (l:SourceLocation {kind: 'csv_cell'}) RETURN l.text AS t ORDER BY l.locator")
    assert [v["t"] for v in values] == ["x", "y", "1", "5"]  # the old bytes' facts went with the old stamp
    assert [r["s"] for r in rows(graph, "MATCH (r:Record) RETURN r.ingest_stamp AS s")] == [rec.stamp]


def test_the_walk_lists_in_os_walk_order_skips_tool_folders_and_reports_parsing(tmp_path: Path) -> None:
    """No database: the folder builder's one walk (ingest.payloads.files.list_entries) and its progress callback."""
    folder = tmp_path / "data"
    for rel in ("b.txt", "a/z.txt", "a/b/c.txt", "a.txt", ".git/config", "sub/__pycache__/x.pyc"):
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(f"line of {rel}\n")
    entries = list_entries(folder, SKIP)
    files = sorted((r for r, k in entries.items() if k != "dir"), key=walk_order)
    walked = [str(Path(d, f).relative_to(folder)).replace("\\", "/")
              for d, dirs, fs in sorted_walk(folder) for f in fs]
    assert files == walked == ["a.txt", "b.txt", "a/z.txt", "a/b/c.txt"]
    builder = FolderBuilder(folder)
    seen: list[str] = []
    builder.on_document = seen.append
    builder.build()
    assert seen == files
    said: list[str] = []
    tick = _files_progress(folder, said.append, every=0)
    for f in files:
        tick(f)
    assert said[-1] == f"{folder}: 4 files parsed, now a/b/c.txt"


def sorted_walk(root: Path) -> list[tuple[str, list[str], list[str]]]:
    out = []
    for d, dirs, fs in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP)
        out.append((d, dirs, sorted(f for f in fs if f not in SKIP)))
    return out
