"""A file or folder of NERDm records in the shapes NIST saves them (ingest/sources/nerdm/collection.py): the
real RMM snapshots of `nist-rmm-snapshots/` (read in place) and small collections written here."""

from __future__ import annotations

import json
from pathlib import Path

from tests.ingest.helpers import rows
from voe.graph import Graph
from voe.ingest import ingest_paths

SNAPSHOTS = "nist-rmm-snapshots"


def test_the_rmm_snapshots_become_one_record_per_identifier_and_version(graph: Graph, archives: Path) -> None:
    report = ingest_paths([archives / SNAPSHOTS], graph)
    assert report.errors == []
    records = rows(graph, "MATCH (r:Record) RETURN r.id AS id, r.ark AS ark, r.version AS v, r.snapshot AS snap, "
                          "r.snapshot_conflict AS conflict, r.release_dates_backwards AS backwards")
    assert len(records) == report.records == 131 and len({r["ark"] for r in records}) == 76
    # a record in two search results that agree is one Record, built from the first (by path)
    [twice] = [r for r in records if r["id"] == "record:ark:/88434/mds2-2149@1.0.1"]
    assert twice["snap"] == "oar-pdr-angular/SearchResult03@39503ed.json#/4"
    # mds2-2106 1.6.0 is saved twice, and the two copies disagree: kept apart, each naming the other
    apart = sorted((r for r in records if r["ark"] == "ark:/88434/mds2-2106" and r["v"] == "1.6.0"), key=lambda r: r["id"])
    assert [r["id"].split("~")[0] for r in apart] == ["record:ark:/88434/mds2-2106@1.6.0"] * 2
    assert {r["conflict"][0] for r in apart} == {r["snap"] for r in apart}
    # a version's own @id names the identifier (`.../pdr:v/1.0.2`): the record is ark:/88434/mds00sxbvh@1.0.2
    assert {r["v"] for r in records if r["ark"] == "ark:/88434/mds00sxbvh"} >= {"1.0.1", "1.0.2", "1.0.3", "1.0.4"}
    # the version this record is, dated before one it follows: recorded, located with the history
    backwards = {r["id"]: r["backwards"] for r in records if r["backwards"]}
    assert backwards["record:ark:/88434/mds2-2418@1.0.2"].startswith("1.0.2 is dated 2021-05-28, before 1.0.1")
    assert "record:ark:/88434/mds2-2313@1.11.0" not in backwards  # an older pair out of order is not this version's
    # every fact points into the file that holds the snapshot, by its path in the collection
    located = rows(graph, "MATCH (r:Record {id: 'record:ark:/88434/mds2-2149@1.0.1'})-[:HAS_COMPONENT]->(c)"
                          "-[:LOCATED_AT]->(l:SourceLocation) RETURN l.path AS path, l.pointer AS pointer")
    assert located and all(x["path"] == "oar-pdr-angular/SearchResult03@39503ed.json"
                           and x["pointer"].startswith("/4/components/") for x in located)


def test_versions_are_compared_with_what_their_release_history_says(graph: Graph, archives: Path) -> None:
    assert ingest_paths([archives / SNAPSHOTS], graph).errors == []
    dropped = rows(graph, "MATCH (e:Evidence {provenance: 'version_notes'})-[:LOCATED_AT]->(l:SourceLocation) "
                          "WHERE e.record_id = 'record:ark:/88434/mds00sxbvh@1.0.4' "
                          "RETURN e.title AS title, e.available AS available, e.version_from AS before, "
                          "e.version_coverage AS coverage, e.version_statement AS said, l.path AS path, "
                          "l.pointer AS pointer, l.text AS text")
    # 1.0.4 lists two files fewer than 1.0.3 and its release history says "metadata update": a denied change
    assert {d["title"] for d in dropped} == {"MD5 file of Special Database 18", "NIST Special Database 18 zipped file"}
    assert all(d["available"] is False and d["before"] == "1.0.3" and d["coverage"] == "denied"
               and d["said"] == "1.0.4: metadata update" for d in dropped)
    assert {(d["path"], d["pointer"]) for d in dropped if d["text"] is None} == {
        ("oar-pdr-py/rmm-test-archive/versions/1E651A532AFD8816E0531A570681A662439-v1_0_3.json", "/components/2"),
        ("oar-pdr-py/rmm-test-archive/versions/1E651A532AFD8816E0531A570681A662439-v1_0_3.json", "/components/3")}
    assert {d["text"] for d in dropped if d["text"]} == {"metadata update"}
    stated = rows(graph, "MATCH (e:Evidence) WHERE e.version_coverage = 'stated' RETURN DISTINCT e.version_statement AS s")
    assert stated and all("data" in x["s"] for x in stated)
    # a missing checksum is a defect only where the record declares others
    kinds = {r["k"]: r["n"] for r in rows(graph, "MATCH (d:Defect) RETURN d.kind AS k, count(*) AS n")}
    assert kinds["missing_checksum"] == 18 and kinds["no_checksums_declared"] == 112


def _record(n: int, version: str, files: dict[str, str], history: list[tuple[str, str, str]] | None = None) -> dict:
    doc = {"@id": f"ark:/88434/mds9-{n}", "_schema": "https://data.nist.gov/od/dm/nerdm-schema/v0.7#",
           "@type": ["nrdp:PublicDataResource"], "title": f"Record {n}", "version": version, "components": [
               {"@id": f"cmps/{p}", "@type": ["nrdp:DataFile", "nrdp:DownloadableFile"], "filepath": p,
                "mediaType": "text/csv", "size": 10, "checksum": {"hash": h, "algorithm": {"tag": "sha256"}}}
               for p, h in files.items()]}
    if history:
        doc["releaseHistory"] = {"@id": f"ark:/88434/mds9-{n}/pdr:v", "hasRelease": [
            {"version": v, "issued": d, "description": t} for v, d, t in history]}
    return doc


def test_a_collection_in_every_shape_with_a_file_that_is_no_record(graph: Graph, tmp_path: Path) -> None:
    """An array, RMM search results and a single record in one folder; an entry that is no NERDm record is named
    (exit 2) and the rest of the call lands."""
    a, b = "a" * 64, "b" * 64
    folder = tmp_path / "snapshots"
    folder.mkdir()
    (folder / "array.json").write_text(json.dumps([_record(1, "1.0.0", {"x.csv": a}), {"not": "a record"}]))
    (folder / "search.json").write_text(json.dumps({"ResultCount": 1, "ResultData": [
        _record(1, "1.0.1", {"y.csv": a}, [("1.0.0", "2020-01-01", "initial release"),
                                          ("1.0.1", "2019-06-01", "metadata update")])]}))
    (folder / "single.json").write_text(json.dumps(_record(2, "2.0.0", {"z.csv": b})))
    report = ingest_paths([folder], graph)
    assert [(e.path.rsplit("/", 1)[-1], e.pointer) for e in report.errors] == [("array.json", "/1")]
    assert report.exit_code == 2 and report.records == 3
    ids = {r["id"] for r in rows(graph, "MATCH (r:Record) RETURN r.id AS id")}
    assert ids == {"record:ark:/88434/mds9-1@1.0.0", "record:ark:/88434/mds9-1@1.0.1", "record:ark:/88434/mds9-2@2.0.0"}
    # 1.0.1 lists x.csv's bytes as y.csv under "metadata update" (a rename, not a removal and an addition), and is
    # dated before the version it follows
    assert not rows(graph, "MATCH (e:Evidence {provenance: 'version_notes'}) RETURN e")
    [moved] = rows(graph, "MATCH (e:Evidence) WHERE e.version_status IS NOT NULL RETURN e.title AS t, "
                          "e.version_status AS s, e.version_coverage AS c")
    assert moved == {"t": "y.csv", "s": "renamed", "c": "denied"}
    [rec] = rows(graph, "MATCH (r:Record {id: 'record:ark:/88434/mds9-1@1.0.1'}) RETURN r.release_dates_backwards AS b")
    assert rec["b"] == "1.0.1 is dated 2019-06-01, before 1.0.0 (2020-01-01), a version it follows"


def _file(path: str, digest: str, size: int = 10) -> dict:
    return {"@id": f"cmps/{path}", "@type": ["nrdp:DataFile", "nrdp:DownloadableFile"], "filepath": path,
            "mediaType": "text/csv", "size": size, "checksum": {"hash": digest, "algorithm": {"tag": "sha256"}}}


def test_versions_record_added_removed_renamed_and_changed_files_with_their_statement(graph: Graph,
                                                                                      tmp_path: Path) -> None:
    """Between two versions under "metadata update": a changed file, a rename (same digest and size under another
    path), a removed file, an added one, and a folder whose members came and went; each on the item that holds it in
    the later version, located at what the earlier version lists (or its list) and at the statement."""
    def record(version: str, comps: list[dict], history: list[tuple[str, str, str]]) -> dict:
        return {"@id": "ark:/88434/mds9-7", "_schema": "https://data.nist.gov/od/dm/nerdm-schema/v0.7#",
                "@type": ["nrdp:PublicDataResource"], "title": "Record 7", "version": version, "components": comps,
                "releaseHistory": {"@id": "ark:/88434/mds9-7/pdr:v", "hasRelease": [
                    {"version": v, "issued": d, "description": t} for v, d, t in history]}}

    folder = {"@id": "cmps/runs", "@type": ["nrdp:Subcollection"], "filepath": "runs"}
    v1 = record("1.0.0", [_file("kept.csv", "1" * 64), _file("changed.csv", "2" * 64), _file("old.csv", "3" * 64),
                          _file("dropped.csv", "4" * 64), folder, _file("runs/a.csv", "5" * 64),
                          _file("runs/b.csv", "6" * 64)],
                [("1.0.0", "2020-01-01", "initial release")])
    history = [("1.0.0", "2020-01-01", "initial release"), ("1.0.1", "2020-02-01", "metadata update")]
    v2 = record("1.0.1", [_file("kept.csv", "1" * 64), _file("changed.csv", "7" * 64), _file("new.csv", "3" * 64),
                          _file("added.csv", "8" * 64), folder, _file("runs/a.csv", "5" * 64),
                          _file("runs/c.csv", "9" * 64)], history)
    (tmp_path / "v1.json").write_text(json.dumps(v1))
    (tmp_path / "v2.json").write_text(json.dumps(v2))
    report = ingest_paths([tmp_path], graph)
    assert report.errors == [] and report.records == 2
    found = {r["t"]: r for r in rows(graph, "MATCH (e:Evidence) WHERE e.record_id = 'record:ark:/88434/mds9-7@1.0.1' "
                                            "AND e.version_status IS NOT NULL RETURN e.title AS t, e.version_status AS s, "
                                            "e.version_coverage AS c, e.version_statement AS said, e.available AS a, "
                                            "e.version_before_json AS before")}
    assert {t: (r["s"], r["c"]) for t, r in found.items()} == {
        "changed.csv": ("changed", "denied"), "new.csv": ("renamed", "denied"), "dropped.csv": ("removed", "denied"),
        "added.csv": ("added", "denied"), "runs": ("changed", "denied")}
    assert all(r["said"] == "1.0.1: metadata update" for r in found.values()) and found["dropped.csv"]["a"] is False
    titles = {r["t"] for r in rows(graph, "MATCH (e:Evidence) WHERE e.record_id = 'record:ark:/88434/mds9-7@1.0.1' "
                                          "RETURN e.title AS t")}
    assert "kept.csv" in titles and "old.csv" not in titles  # a renamed file is not also a removed one
    [moved] = json.loads(found["new.csv"]["before"])
    assert moved["path"] == "old.csv" and moved["renamed_to"] == "new.csv" and moved["sha256"] == "3" * 64
    assert {(b["path"], b["status"]) for b in json.loads(found["runs"]["before"])} == {
        ("runs/b.csv", "removed"), ("runs/c.csv", "added")}
    # located: the earlier version's component (its list, for a file it did not list) and the statement
    where = {r["t"]: {(x["path"], x["pointer"]) for x in r["at"]} for r in rows(graph, (
        "MATCH (e:Evidence)-[:LOCATED_AT]->(l:SourceLocation) WHERE e.record_id = 'record:ark:/88434/mds9-7@1.0.1' "
        "AND e.version_status IS NOT NULL RETURN e.title AS t, collect({path: l.path, pointer: l.pointer}) AS at"))}
    statement = ("v2.json", "/releaseHistory/hasRelease/1/description")
    assert {("v1.json", "/components/2"), statement} <= where["new.csv"]
    assert {("v1.json", "/components"), statement} <= where["added.csv"]
    assert {("v1.json", "/components/3"), statement} <= where["dropped.csv"]
    assert {("v1.json", "/components/6"), ("v1.json", "/components"), statement} <= where["runs"]
