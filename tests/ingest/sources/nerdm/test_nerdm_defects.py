"""Each defect rule provoked from a real record altered in a temporary copy."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.ingest.helpers import copy_record, defects_by_kind, nerdm, rows
from voe.graph import Graph
from voe.ingest import ingest_paths

CSV = "Al_Spot_AA_ASR_Results.csv"


def _defects_of(graph: Graph, filepath: str) -> list[dict]:
    return rows(graph, "MATCH (c:Component {filepath: $f})-[:HAS_DEFECT]->(d:Defect)-[:LOCATED_AT]->(l) "
                       "RETURN d.kind AS kind, d.detail AS detail, d.path AS path, d.rule AS rule, "
                       "l.pointer AS pointer ORDER BY kind", f=filepath)


def _edit(folder: Path, fn) -> None:  # type: ignore[no-untyped-def]
    doc = nerdm(folder)
    fn(doc)
    (folder / "nerdm.json").write_text(json.dumps(doc, indent=2))


def test_altered_byte_gives_a_checksum_defect_naming_the_file(graph: Graph, archives: Path, tmp_path: Path) -> None:
    folder = copy_record(archives / "mds2-2525", tmp_path / "mds2-2525", [CSV])
    data = bytearray((folder / CSV).read_bytes())
    data[100] ^= 0x01
    (folder / CSV).write_bytes(bytes(data))
    ingest_paths([folder], graph)
    found = _defects_of(graph, CSV)
    assert [d["kind"] for d in found] == ["checksum_mismatch"]
    assert found[0]["path"] == CSV and CSV in found[0]["detail"] and found[0]["rule"] == "file.sha256"
    assert found[0]["pointer"].endswith("/checksum/hash")


def test_restoring_the_bytes_removes_the_stale_defect(graph: Graph, archives: Path, tmp_path: Path) -> None:
    folder = copy_record(archives / "mds2-2525", tmp_path / "mds2-2525", [CSV])
    original = (folder / CSV).read_bytes()
    (folder / CSV).write_bytes(original.replace(b",", b";", 1))
    ingest_paths([folder], graph)
    assert defects_by_kind(graph).get("checksum_mismatch") == 1
    (folder / CSV).write_bytes(original)
    ingest_paths([folder], graph)
    assert "checksum_mismatch" not in defects_by_kind(graph)
    # the altered bytes' File node is gone too; only the held CSV's real bytes remain
    shas = {r["s"] for r in rows(graph, "MATCH (:Component {filepath: $f})-[:STORED_AS]->(x:File) RETURN x.sha256 AS s",
                                 f=CSV)}
    assert shas == {nerdm(folder)["components"][[c.get("filepath") for c in nerdm(folder)["components"]].index(CSV)]
                    ["checksum"]["hash"]}
    assert rows(graph, "MATCH (f:File) WHERE NOT ()-->(f) RETURN count(f) AS n")[0]["n"] == 0


def test_truncated_payload_gives_size_and_checksum_defects(graph: Graph, archives: Path, tmp_path: Path) -> None:
    folder = copy_record(archives / "mds2-2525", tmp_path / "r", [CSV])
    (folder / CSV).write_bytes((folder / CSV).read_bytes()[:50])
    ingest_paths([folder], graph)
    kinds = {d["kind"] for d in _defects_of(graph, CSV)}
    # 50 bytes leave one header line and a fragment without commas: the bytes no longer read as CSV
    assert kinds == {"checksum_mismatch", "size_mismatch", "format_mismatch"}


def test_sidecar_bytes_that_disagree_with_the_target(graph: Graph, archives: Path, tmp_path: Path) -> None:
    side = CSV + ".sha256"
    folder = copy_record(archives / "mds2-2525", tmp_path / "r", [side])
    (folder / side).write_text("0" * 64)
    ingest_paths([folder], graph)
    kinds = {d["kind"]: d for d in _defects_of(graph, side)}
    assert set(kinds) == {"sidecar_checksum_mismatch", "checksum_mismatch"}
    assert kinds["sidecar_checksum_mismatch"]["rule"] == "nerdm.sidecar.bytes"


def test_sidecar_declared_checksum_rule_when_bytes_are_not_held(graph: Graph, archives: Path, tmp_path: Path) -> None:
    folder = copy_record(archives / "mds2-2525", tmp_path / "r")
    side = CSV + ".sha256"
    _edit(folder, lambda d: next(c for c in d["components"] if c.get("filepath") == side)["checksum"]
          .update(hash="f" * 64))
    ingest_paths([folder], graph)
    found = _defects_of(graph, side)
    assert [(d["kind"], d["rule"]) for d in found] == [("sidecar_checksum_mismatch", "nerdm.sidecar.declared")]


def test_sidecar_marked_invalid(graph: Graph, archives: Path, tmp_path: Path) -> None:
    folder = copy_record(archives / "mds2-2525", tmp_path / "r")
    side = CSV + ".sha256"
    _edit(folder, lambda d: next(c for c in d["components"] if c.get("filepath") == side).update(valid=False))
    ingest_paths([folder], graph)
    assert [d["kind"] for d in _defects_of(graph, side)] == ["sidecar_marked_invalid"]


def test_sidecar_describing_a_component_the_record_lacks(graph: Graph, archives: Path, tmp_path: Path) -> None:
    folder = copy_record(archives / "mds2-2525", tmp_path / "r")
    side = CSV + ".sha256"
    _edit(folder, lambda d: next(c for c in d["components"] if c.get("filepath") == side)
          .update(describes="cmps/not-in-this-record.csv"))
    ingest_paths([folder], graph)
    found = _defects_of(graph, side)
    assert [d["kind"] for d in found] == ["sidecar_target_missing"]
    assert "not-in-this-record.csv" in found[0]["detail"]


def test_datafile_without_checksum(graph: Graph, archives: Path, tmp_path: Path) -> None:
    folder = copy_record(archives / "mds2-3842", tmp_path / "r")
    _edit(folder, lambda d: d["components"][0].pop("checksum"))
    ingest_paths([folder], graph)
    fp = nerdm(folder)["components"][0]["filepath"]
    assert [d["kind"] for d in _defects_of(graph, fp)] == ["missing_checksum"]


def test_schema_violation_names_its_json_pointer(graph: Graph, archives: Path, tmp_path: Path) -> None:
    folder = copy_record(archives / "mds2-3842", tmp_path / "r")
    _edit(folder, lambda d: d["components"][0].update(size="seven kB"))
    report = ingest_paths([folder], graph)
    assert report.errors == [] and report.records == 1  # a violation is a finding; the record still ingests
    found = rows(graph, "MATCH (d:Defect {kind: 'schema_violation'}) RETURN d.pointer AS p, d.subject AS s")
    assert "/components/0/size" in {f["p"] for f in found}
    assert any(f["s"].endswith("/cmps/3842_README.txt") for f in found)


def test_unreadable_payload_is_a_defect_and_an_error(graph: Graph, archives: Path, tmp_path: Path) -> None:
    folder = copy_record(archives / "mds2-2525", tmp_path / "r")
    (folder / CSV).mkdir()  # a folder where the payload should be
    report = ingest_paths([folder], graph)
    assert report.records == 1 and report.exit_code == 2
    assert any(CSV in e.path for e in report.errors)
    assert [d["kind"] for d in _defects_of(graph, CSV)] == ["unreadable_file"]


def test_ingest_does_not_write_into_the_shared_archive(graph: Graph, archives: Path, tmp_path: Path) -> None:
    before = sorted(p.name for p in (archives / "mds2-2525").iterdir())
    ingest_paths([archives / "mds2-2525"], graph)
    assert sorted(p.name for p in (archives / "mds2-2525").iterdir()) == before
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_schema_defects_follow_whether_validation_ran(graph: Graph, archives: Path, tmp_path: Path) -> None:
    folder = copy_record(archives / "mds2-3842", tmp_path / "r")
    _edit(folder, lambda d: d["components"][0].update(size="seven kB"))
    ingest_paths([folder], graph)
    assert defects_by_kind(graph).get("schema_violation", 0) >= 1
    ingest_paths([folder], graph, validate_schema=False)
    assert "schema_violation" not in defects_by_kind(graph)
    ingest_paths([folder], graph)
    assert defects_by_kind(graph).get("schema_violation", 0) >= 1


def test_two_versions_of_a_record_keep_their_own_evidence(graph: Graph, archives: Path, tmp_path: Path) -> None:
    v1 = copy_record(archives / "mds2-2106", tmp_path / "v1")
    v2 = copy_record(archives / "mds2-2106", tmp_path / "v2")
    _edit(v2, lambda d: d.update(version="1.7.0"))
    ingest_paths([v1, v2], graph)
    before = graph.counts()
    ingest_paths([v1, v2], graph)
    assert graph.counts() == before  # alternating versions do not take each other's nodes
    per_record = rows(graph, "MATCH (r:Record)-[:HAS_COMPONENT]->(:Component)<-[:EVIDENCED_BY]-(e:Evidence) "
                             "RETURN r.version AS v, count(DISTINCT e) AS n ORDER BY v")
    assert [r["v"] for r in per_record] == ["1.6.0", "1.7.0"] and per_record[0]["n"] == per_record[1]["n"] > 0
