"""A NERDm record read in passes and written a chunk of components at a time (ingest/sources/nerdm/stream.py, issue 13)
writes the graph the in-memory build writes: node for node, edge for edge (as a multiset) and property for
property, stamps included, for the shared archives and for a record built to need every cross-chunk rule (a
sidecar before the file it describes, a file before its folder, a duplicate @id, held payloads, unstorable values,
schema findings); a re-ingest is unchanged, a replacement swaps, and a file the first pass cannot read is read
whole."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import voe.ingest.sources.nerdm.stream as nerdm_stream
from tests.ingest.write.test_replace import snapshot
from voe.graph import Graph
from voe.ingest import ingest_paths
from voe.ingest.sources.nerdm.stream import NotStreamable, _lone_surrogate_escape, open_streamed, scan

NERDM_RECORDS = ("mds2-4103", "mds2-3842", "mds2-2525", "mds2-2106")
DATAFILE = "https://data.nist.gov/od/dm/nerdm-schema/pub/v0.7#/definitions/DataFile"
CHECKSUMFILE = "https://data.nist.gov/od/dm/nerdm-schema/pub/v0.7#/definitions/ChecksumFile"


def _streamed(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setenv("VOE_STREAM_BYTES", "1")
    monkeypatch.setattr(nerdm_stream, "CHUNK_COMPONENTS", chunk)


def _calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    seen = {"chunks": 0, "deferred": 0}
    chunk, deferred = nerdm_stream.NerdmStream._chunk, nerdm_stream.NerdmStream.deferred

    def counting_chunk(self: Any, batch: Any) -> Any:
        seen["chunks"] += 1
        return chunk(self, batch)

    def counting_deferred(self: Any) -> Any:
        out = deferred(self)
        seen["deferred"] += len(out[1]) - 1  # less the Record's own location, which comes last
        return out

    monkeypatch.setattr(nerdm_stream.NerdmStream, "_chunk", counting_chunk)
    monkeypatch.setattr(nerdm_stream.NerdmStream, "deferred", counting_deferred)
    return seen


def test_shared_records_streamed_equal_the_in_memory_graph(graph: Graph, archives: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    paths = [archives / name for name in NERDM_RECORDS]
    in_memory = ingest_paths(paths, graph)
    assert in_memory.errors == []
    whole = snapshot(graph)
    graph.clear()
    with monkeypatch.context() as m:
        _streamed(m, 50)
        seen = _calls(m)
        report = ingest_paths(paths, graph)
        assert report.errors == []
        assert seen["chunks"] >= 12  # mds2-4103 alone has 552 components: 12 chunks
        assert snapshot(graph) == whole
        again = ingest_paths(paths, graph)
    assert again.records_unchanged == len(paths) and snapshot(graph) == whole
    # not built again: what the report counts comes from the first pass and the graph
    for field in ("components", "defects", "evidence", "facts", "formats", "files"):
        assert getattr(again, field) == getattr(in_memory, field), field
    assert [r.held for r in again.per_record] == [r.held for r in in_memory.per_record]
    # the same rows, counted as the in-memory build counts them (facts, evidence and defects too)
    assert report.elements_written == in_memory.elements_written
    for field in ("components", "defects", "evidence", "facts", "formats", "files"):
        assert getattr(report, field) == getattr(in_memory, field), field


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _hostile(root: Path, csv_text: str = "a,b\n1,2\n", same_bytes: bool = False) -> Path:
    """Every rule that reaches across components, in an order that puts the far end in a later chunk."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "late").mkdir(exist_ok=True)
    (root / "late" / "x.csv").write_text(csv_text)
    (root / "late" / "x.csv.sha256").write_text(_sha(csv_text) + "  x.csv\n")
    # with same_bytes, the bytes of late/x.csv: one File, two components (such a record is read whole)
    (root / "same.csv").write_text(csv_text if same_bytes else csv_text + "5,6\n")
    long_name = "n" * 700 + ".csv"
    comps: list[Any] = [
        # a sidecar before the file it describes, and the file before its folder
        {"@id": "cmps/late/x.csv.sha256", "@type": ["nrdp:ChecksumFile"], "filepath": "late/x.csv.sha256",
         "mediaType": "text/plain", "describes": "cmps/late/x.csv", "valid": True,
         "checksum": {"hash": _sha(_sha(csv_text)), "algorithm": {"tag": "sha256"}}, "_extensionSchemas": [CHECKSUMFILE]},
        "not a component",
        {"@id": "cmps/late/x.csv", "@type": ["nrdp:DataFile"], "filepath": "late/x.csv", "mediaType": "text/csv",
         "size": 3, "checksum": {"hash": "0" * 64, "algorithm": {"tag": "sha256"}}, "_extensionSchemas": [DATAFILE]},
        {"@id": "cmps/same.csv", "@type": ["nrdp:DataFile"], "filepath": "same.csv", "mediaType": "text/csv",
         "title": {"not": "a string"}},
        {"@id": "cmps/late/x.csv", "@type": ["nrdp:DataFile"], "filepath": "late/dup.csv"},  # a duplicate @id
        {"@id": "cmps/" + long_name, "@type": ["nrdp:DataFile"], "filepath": long_name, "size": 2**62},
        {"@id": "cmps/floats", "@type": ["nrdp:DataFile"], "filepath": "f.dat", "size": 1.5, "description": "é\u2028"},
        {"@id": "cmps/missing.sha256", "@type": ["nrdp:ChecksumFile"], "filepath": "missing.sha256",
         "describes": "cmps/nowhere", "valid": False},
        {"@id": "cmps/late", "@type": ["nrdp:Subcollection"], "filepath": "late"},
        {"@id": "cmps/late", "@type": ["nrdp:Subcollection"], "filepath": "late"},  # uniqueItems too
    ]
    comps += [{"@id": f"cmps/late/r{i}.csv", "@type": ["nrdp:DataFile"], "filepath": f"late/r{i}.csv",
               "mediaType": "application/pdf"} for i in range(12)]
    doc = {"@id": "ark:/88434/mds2-9191", "_schema": "https://data.nist.gov/od/dm/nerdm-schema/v0.7#",
           "@type": ["nrdp:PublicDataResource"], "title": "streamed", "version": "1.0.0",
           "references": [{"@id": "doi:10.1/x", "refType": "IsCitedBy", "title": ["list", "title"]}],
           "components": comps, "zzz_after": {"nested": [1, 2.5, None]}}
    (root / "nerdm.json").write_text(json.dumps(doc, ensure_ascii=False))
    return root


@pytest.mark.parametrize("chunk", [1, 2, 3, 7])
def test_cross_chunk_rules_give_the_in_memory_graph(graph: Graph, tmp_path: Path, chunk: int,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    record = _hostile(tmp_path / "rec")
    first = ingest_paths([record], graph)
    assert first.errors == [] and first.defects  # the record has findings of several kinds
    whole = snapshot(graph)
    graph.clear()
    with monkeypatch.context() as m:
        _streamed(m, chunk)
        seen = _calls(m)
        streamed = ingest_paths([record], graph)
        assert streamed.errors == [] and streamed.defects == first.defects and streamed.components == first.components
        assert seen["chunks"] >= 22 // chunk  # read in passes, `chunk` components a chunk
        assert seen["deferred"] >= 2  # DESCRIBES and PART_OF edges to later chunks were held back
        assert snapshot(graph) == whole

        # a replacement (another payload) goes through the staged swap and equals a direct ingest of the new inputs
        _hostile(record, csv_text="a,b\n3,4\n")
        replaced = ingest_paths([record], graph)
        assert replaced.records_replaced == 1
        streamed_new = snapshot(graph)
    graph.clear()
    assert ingest_paths([record], graph).errors == []
    assert snapshot(graph) == streamed_new


def test_scan_reads_the_header_and_counts_without_holding_components(tmp_path: Path) -> None:
    doc = {"@id": "ark:/1", "a": {"b": [1, {"c": None}]}, "components": [{"@id": "x"}, 3, [1, [2]], "s"], "z": 1.5}
    path = tmp_path / "nerdm.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(doc).encode())
    found = scan(path)
    assert found.count == 4 and found.header == {k: v for k, v in doc.items() if k != "components"}
    assert found.sha256 == hashlib.sha256(path.read_bytes()).hexdigest() and found.size == path.stat().st_size


@pytest.mark.parametrize("text", [
    '{"@id": "x", "components": [1, 2',                       # truncated
    '{"@id": "x", "components": {"a": 1}}',                    # not a list
    '{"@id": "x", "components": [], "components": []}',       # twice
    '{"@id": "x", "size": 123456789012345678901234567890}',   # beyond 64 bits: json reads it, yajl does not
    '[1, 2]',
    '{"@id": "x", "t": "a\\ud800b"}',                        # a lone surrogate: yajl would read "?"
    '{"@id": "x", "components": [{"t": "\\udc00"}]}',       # yajl fails on a lone low one
    '{"@id": "x", "components": []}\f',                       # yajl's whitespace, not json's
    '{"@id": "x", "components": [\v]}',
    '{"@id": "x", "title": "no components"}',                  # its whole-file span has none
    '{"@id": "x", "components.item": 1, "components": []}',    # ijson's prefix of the items
    '{"@id": "x", "d": ' + "[" * 600 + "]" * 600 + "}",
])
def test_what_the_first_pass_cannot_read_is_left_to_the_whole_reader(tmp_path: Path, text: str) -> None:
    path = tmp_path / "nerdm.json"
    path.write_text(text)
    with pytest.raises(NotStreamable):
        scan(path)


def test_a_large_file_the_first_pass_refuses_is_read_whole(graph: Graph, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    record = _hostile(tmp_path / "rec")
    doc = json.loads((record / "nerdm.json").read_text())
    doc["components"][2]["size"] = 2**80  # json reads it (a defect: not storable), yajl refuses it
    (record / "nerdm.json").write_text(json.dumps(doc))
    monkeypatch.setenv("VOE_STREAM_BYTES", "1")
    report = ingest_paths([record], graph)
    assert report.errors == [] and report.defects.get("value_not_storable", 0) >= 1


def test_a_truncated_large_file_is_an_input_error_naming_it(graph: Graph, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    record = _hostile(tmp_path / "rec")
    text = (record / "nerdm.json").read_text()
    (record / "nerdm.json").write_text(text[: len(text) // 2])
    monkeypatch.setenv("VOE_STREAM_BYTES", "1")
    report = ingest_paths([record], graph)
    assert report.exit_code == 2 and "nerdm.json" in report.errors[0].path
    assert "truncated" in report.errors[0].message
    assert graph.counts()["nodes"] == 0


def test_a_surrogate_pair_streams_as_json_reads_it(tmp_path: Path) -> None:
    doc = {"@id": "ark:/1", "t": "smile \U0001F600", "components": [{"@id": "\U0001F600"}]}
    path = tmp_path / "nerdm.json"
    path.write_text(json.dumps(doc))  # ensure_ascii: the emoji as a surrogate pair of escapes
    assert "\\ud83d\\ude00" in path.read_text()
    assert scan(path).header == {"@id": "ark:/1", "t": "smile \U0001F600"}


@pytest.mark.parametrize(("text", "lone"), [
    (rb'"\ud83d\ude00"', False), (rb'"\ud800"', True), (rb'"\udc00"', True), (rb'"x\u00e9"', False),
    (rb'"\ud83d\ude00\udc00"', True), (rb'"\ud83d\ud83d\ude00"', True),
])
def test_lone_surrogates_are_found_across_block_boundaries(tmp_path: Path, text: bytes, lone: bool) -> None:
    path = tmp_path / "f"
    for pad in range(14):
        for block in (5, 7, 13, 64):
            path.write_bytes(b"x" * pad + text * 3 + b"y")
            assert _lone_surrogate_escape(path, block) is lone, (pad, block)


@pytest.mark.parametrize(("checksum_hash", "filepath", "back"), [
    (None, None, None), ("A" * 64, "d/x.csv", "a" * 64), ("abc", "", "abc"), ("é\udc80" * 3, "ü/\ud800", None),
    ("0" * 64, None, "0" * 64), ("g" * 64, "x", "g" * 64),
])
def test_the_index_keeps_what_a_sidecar_needs(checksum_hash: str | None, filepath: str | None,
                                              back: str | None) -> None:
    packed = nerdm_stream._pack(2**33 + 7, checksum_hash, filepath)
    i, digest, path = nerdm_stream._unpack(packed)
    assert i == 2**33 + 7 and path == filepath
    # a 64-hex digest comes back lowercased (sidecars compare it so); any other as it was
    assert digest == (back if back is not None else checksum_hash)


def test_only_a_nerdm_record_streams(tmp_path: Path) -> None:
    path = tmp_path / "nerdm.json"
    path.write_text('{"@id": "x", "components": []}')
    with pytest.raises(NotStreamable):
        open_streamed(path, None)  # read_record refuses it by name: no NERDm _schema or nrd/nrdp @type


def test_the_same_bytes_twice_are_read_whole_and_equal(graph: Graph, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    record = _hostile(tmp_path / "rec", same_bytes=True)
    assert ingest_paths([record], graph).errors == []
    whole = snapshot(graph)
    graph.clear()
    with monkeypatch.context() as m:
        _streamed(m, 1)
        seen = _calls(m)
        assert ingest_paths([record], graph).errors == []
    assert seen["chunks"] == 0 and snapshot(graph) == whole
