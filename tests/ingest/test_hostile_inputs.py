"""Hostile inputs (issue 8): every bad input is a clean error or a defect, never a traceback, and ingest reads
only what the folder holds. Each case is a mutated copy of a real shared NERDm record (mds2-3842, or mds2-2525
for held payloads) or a small plain folder written into tmp_path, ingested in one call beside a good path
(the real mds2-2106, or a clean plain folder) that must still land whole. Rules: ingest/rules/defects.py."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ingest.helpers import rows
from voe.errors import GraphUnavailable
from voe.graph import MAX_KEY_BYTES, Graph
from voe.ingest import ingest_paths, pipeline
from voe.ingest.payloads.files import canonical_json
from voe.ingest.pipeline import IngestReport
from voe.ingest.sources.folder import FolderBuilder
from voe.ingest.sources.nerdm.build import MAX_JSON_DEPTH

GOOD = "ark:/88434/mds2-2106"
OUTSIDE_TEXT = "OUTSIDE-THE-FOLDER secret line that must never be located"


def _voe(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "voe.cli", *args], capture_output=True, text=True, env=env, timeout=300)


def _record(archives: Path, tmp_path: Path, name: str, mutate: Callable[[dict[str, Any]], None],
            source: str = "mds2-3842") -> Path:
    """A folder holding a mutated copy of a real record (JSON escapes for anything non-ASCII)."""
    doc = json.loads((archives / source / "nerdm.json").read_text(encoding="utf-8-sig"))
    mutate(doc)
    folder = tmp_path / name
    folder.mkdir()
    (folder / "nerdm.json").write_text(json.dumps(doc, ensure_ascii=True), encoding="ascii")
    return folder


def _ingest_with_good(graph: Graph, archives: Path, bad: Path, **kwargs: Any) -> IngestReport:
    report = ingest_paths([bad, archives / "mds2-2106"], graph, **kwargs)
    good = rows(graph, "MATCH (r:Record {ark: $ark}) RETURN r.ingest_state AS s", ark=GOOD)
    assert good == [{"s": "complete"}], "the good path of the same call was not ingested"
    assert any(r.ark == GOOD for r in report.per_record)
    return report


def _defects(graph: Graph, kind: str) -> list[dict[str, Any]]:
    return rows(graph, "MATCH (s)-[:HAS_DEFECT]->(d:Defect {kind: $kind}) OPTIONAL MATCH (d)-[:LOCATED_AT]->(l) "
                       "RETURN labels(s) AS subject, s.filepath AS filepath, d.rule AS rule, d.pointer AS pointer, "
                       "d.detail AS detail, l.pointer AS at ORDER BY pointer", kind=kind)


# -- 1. values Neo4j cannot store ---------------------------------------------------------------

def test_lone_surrogate_in_title_is_escaped_with_a_defect(graph: Graph, archives: Path, tmp_path: Path) -> None:
    bad = _record(archives, tmp_path, "surrogate", lambda d: d.update(title="Laser coupling \udcff data"))
    report = _ingest_with_good(graph, archives, bad)
    assert report.errors == [] and report.exit_code == 0
    [d] = _defects(graph, "value_not_storable")
    assert (d["subject"], d["rule"], d["pointer"], d["at"]) == (["Node", "Record"], "graph.value", "/title", "/title")
    [rec] = rows(graph, "MATCH (r:Record {ark: 'ark:/88434/mds2-3842'}) RETURN r.title AS t")
    assert rec["t"] == "Laser coupling \\udcff data"
    # the span hash is taken over the canonical JSON, which writes the surrogate as its JSON escape
    [loc] = rows(graph, "MATCH (l:SourceLocation {pointer: '/title'}) RETURN l.span_sha256 AS s")
    assert canonical_json("Laser coupling \udcff data") == b'"Laser coupling \\udcff data"'
    assert loc["s"] == hashlib.sha256(b'"Laser coupling \\udcff data"').hexdigest()
    assert [r.title for r in report.per_record if r.ark != GOOD] == ["Laser coupling \\udcff data"]
    report.model_dump_json()  # the report itself serialises


def test_maps_and_lists_where_the_record_has_a_string_are_json_text(graph: Graph, archives: Path,
                                                                    tmp_path: Path) -> None:
    def mutate(d: dict[str, Any]) -> None:
        d["title"] = {"x": 1}
        d["components"][0]["mediaType"] = [1]

    report = _ingest_with_good(graph, archives, _record(archives, tmp_path, "objects", mutate))
    assert report.errors == [] and report.exit_code == 0
    found = {d["pointer"]: d for d in _defects(graph, "value_not_storable")}
    assert set(found) == {"/title", "/components/0/mediaType"}
    assert found["/components/0/mediaType"]["subject"] == ["Node", "Component", "DataFile"]
    assert all(d["at"] == d["pointer"] for d in found.values())
    schema = {d["pointer"] for d in _defects(graph, "schema_violation")}
    assert {"/title", "/components/0/mediaType"} <= schema  # the schema check reports the type as well
    [rec] = rows(graph, "MATCH (r:Record {ark: 'ark:/88434/mds2-3842'}) RETURN r.title AS t")
    [comp] = rows(graph, "MATCH (c:Component {nerdm_id: 'cmps/3842_README.txt'}) "
                         "RETURN c.media_type AS m, c.declared_size AS size, c.declared_sha256 AS sha")
    assert rec["t"] == '{"x":1}' and comp["m"] == "[1]"
    assert comp["size"] == 7469 and comp["sha"]  # the rest of the component is still read


def test_integer_beyond_64_bits_in_a_size_is_text(graph: Graph, archives: Path, tmp_path: Path) -> None:
    bad = _record(archives, tmp_path, "big", lambda d: d["components"][0].update(size=10**30))
    report = _ingest_with_good(graph, archives, bad)
    assert report.errors == [] and report.exit_code == 0
    [d] = _defects(graph, "value_not_storable")
    assert (d["pointer"], d["at"]) == ("/components/0/size", "/components/0/size")
    assert "beyond 64 bits" in d["detail"]
    [comp] = rows(graph, "MATCH (c:Component {nerdm_id: 'cmps/3842_README.txt'}) RETURN c.declared_size AS s")
    assert comp["s"] == str(10**30)


@pytest.mark.parametrize("value,text", [(float("nan"), "NaN"), (float("inf"), "Infinity"), (float("-inf"), "-Infinity")])
def test_a_size_of_nan_or_infinity_is_text_and_the_record_is_read(graph: Graph, archives: Path, tmp_path: Path,
                                                                   value: float, text: str) -> None:
    """A record file may hold the tokens NaN and Infinity (Python's and JavaScript's parsers read them): the
    value is stored as its text with a value_not_storable defect, and the rest of the record is read."""
    bad = _record(archives, tmp_path, "nan", lambda d: d["components"][0].update(size=value))
    assert text in (bad / "nerdm.json").read_text()
    report = _ingest_with_good(graph, archives, bad)
    assert report.errors == [] and report.exit_code == 0
    [d] = _defects(graph, "value_not_storable")
    assert d["pointer"] == "/components/0/size" and "not a finite number" in d["detail"]
    [comp] = rows(graph, "MATCH (c:Component {nerdm_id: 'cmps/3842_README.txt'}) "
                         "RETURN c.declared_size AS s, c.declared_sha256 AS sha")
    assert comp["s"] == text and comp["sha"]


def _workbook_with_a_huge_integer(path: Path) -> None:
    """An .xlsx whose B1 holds the integer 10^30 (openpyxl reads a numeric cell without '.'/'E' as int)."""
    import openpyxl

    plain = path.with_suffix(".plain.xlsx")
    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    ws["A1"], ws["B1"], ws["A2"], ws["B2"] = "size", 1e30, "count", 3
    wb.save(plain)
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "xl/worksheets/sheet1.xml":
                assert b"<v>1e+30</v>" in data
                data = data.replace(b"<v>1e+30</v>", f"<v>{10**30}</v>".encode())
            out.writestr(info, data)
    plain.unlink()


def test_integer_beyond_64_bits_in_a_cell_is_text(graph: Graph, archives: Path, tmp_path: Path) -> None:
    folder = tmp_path / "cells"
    folder.mkdir()
    _workbook_with_a_huge_integer(folder / "sizes.xlsx")
    report = _ingest_with_good(graph, archives, folder)
    assert report.errors == [] and report.exit_code == 0
    [d] = _defects(graph, "value_not_storable")
    assert d["filepath"] == "sizes.xlsx" and d["pointer"] == "sizes.xlsx#Sheet!B1"
    [cell] = rows(graph, "MATCH (d:Defect {kind: 'value_not_storable'})-[:LOCATED_AT]->(l:SourceLocation) "
                         "RETURN l.cell AS cell, l.value AS v")
    assert cell == {"cell": "B1", "v": str(10**30)}


def test_malformed_ipv6_landing_page(graph: Graph, archives: Path, tmp_path: Path) -> None:
    bad = _record(archives, tmp_path, "ipv6", lambda d: d.update(landingPage="http://[::1/not-closed"))
    report = _ingest_with_good(graph, archives, bad)
    assert report.errors == [] and report.exit_code == 0
    [rec] = rows(graph, "MATCH (a:Archive)-[:CONTAINS]->(r:Record {ark: 'ark:/88434/mds2-3842'}) "
                        "RETURN r.landing_page AS lp, a.host AS host")
    assert rec == {"lp": "http://[::1/not-closed", "host": "data.nist.gov"}  # named by the download URLs


def test_over_long_filepath_is_a_hashed_key(graph: Graph, archives: Path, tmp_path: Path) -> None:
    long_path = "deep/" * 1800  # 9,000 characters
    bad = _record(archives, tmp_path, "long", lambda d: d["components"][0].update(
        {"filepath": long_path + "README.txt", "@id": "cmps/" + long_path + "README.txt"}))
    report = _ingest_with_good(graph, archives, bad)
    assert report.errors == [] and report.exit_code == 0
    pointers = {d["pointer"]: d["at"] for d in _defects(graph, "value_not_storable")}
    assert pointers == {"/components/0/@id": "/components/0/@id", "/components/0/filepath": "/components/0/filepath"}
    [comp] = rows(graph, "MATCH (c:Component) WHERE c.nerdm_id STARTS WITH 'cmps/deep/' "
                         "RETURN c.id AS id, c.filepath AS f, c.filepath_full AS full, c.nerdm_id AS nid")
    assert len(comp["id"].encode()) <= MAX_KEY_BYTES and len(comp["f"].encode()) <= MAX_KEY_BYTES
    digest = hashlib.sha256((long_path + "README.txt").encode()).hexdigest()
    assert comp["f"].endswith(f"…sha256:{digest}") and comp["f"].startswith("deep/deep/")
    assert comp["full"] == long_path + "README.txt" and comp["nid"] == "cmps/" + long_path + "README.txt"


# -- 2. JSON depth -----------------------------------------------------------------------------

def _nested(archives: Path, tmp_path: Path, name: str, levels: int) -> Path:
    """mds2-3842 with a key holding `levels` nested arrays (the record itself is one more level)."""
    text = (archives / "mds2-3842" / "nerdm.json").read_text(encoding="utf-8-sig").rstrip()
    assert text.endswith("}")
    folder = tmp_path / name
    folder.mkdir()
    (folder / "nerdm.json").write_text(text[:-1] + ', "nested": ' + "[" * levels + "]" * levels + "}")
    return folder


def test_nesting_beyond_the_documented_depth_is_an_input_error(graph: Graph, archives: Path,
                                                                tmp_path: Path) -> None:
    bad = _nested(archives, tmp_path, "bomb", 100_000)
    report = _ingest_with_good(graph, archives, bad)
    assert report.exit_code == 2
    [err] = report.errors
    assert err.path == str(bad / "nerdm.json") and f"deeper than {MAX_JSON_DEPTH} levels" in err.message


def test_nesting_at_the_limit_is_read_and_one_more_level_is_not(graph: Graph, archives: Path,
                                                                tmp_path: Path) -> None:
    at_limit = _nested(archives, tmp_path, "at", MAX_JSON_DEPTH - 1)
    beyond = _nested(archives, tmp_path, "beyond", MAX_JSON_DEPTH)
    report = ingest_paths([beyond, at_limit, archives / "mds2-2106"], graph)
    assert [e.path for e in report.errors] == [str(beyond / "nerdm.json")]
    assert sorted(r.ark for r in report.per_record) == ["ark:/88434/mds2-2106", "ark:/88434/mds2-3842"]


# -- 3. schema validation that cannot run ------------------------------------------------------

def test_unknown_extension_schema_fragment_is_a_schema_violation(graph: Graph, archives: Path,
                                                                 tmp_path: Path) -> None:
    uri = "https://data.nist.gov/od/dm/nerdm-schema/pub/v0.7#/definitions/NoSuchThing"
    bad = _record(archives, tmp_path, "ext", lambda d: d["components"][0].update(_extensionSchemas=[uri]))
    report = _ingest_with_good(graph, archives, bad)
    assert report.errors == [] and report.exit_code == 0
    [d] = _defects(graph, "schema_violation")
    assert d["subject"] == ["Node", "Component", "DataFile"] and d["rule"] == "nerdm.schema"
    assert d["pointer"] == d["at"] == "/components/0/_extensionSchemas/0"
    assert "NoSuchThing" in d["detail"]


def test_a_ref_that_resolves_nowhere_in_the_schemas_is_a_schema_violation(graph: Graph, archives: Path,
                                                                          tmp_path: Path) -> None:
    schemas = tmp_path / "schemas"
    shutil.copytree(archives / "schemas", schemas)
    pub = schemas / "nerdm" / "nerdm-pub-schema.json"
    doc = json.loads(pub.read_text(encoding="utf-8"))
    doc["definitions"]["DataFile"]["allOf"].append({"$ref": "#/definitions/Missing"})
    pub.chmod(0o644)
    pub.write_text(json.dumps(doc), encoding="utf-8")
    bad = _record(archives, tmp_path, "ref", lambda d: None)
    report = ingest_paths([bad], graph, schema_dir=schemas)
    assert report.errors == [] and report.exit_code == 0
    found = _defects(graph, "schema_violation")
    assert [d["pointer"] for d in found] == ["/components/0", "/components/1", "/components/2"]
    assert all("could not be applied" in d["detail"] for d in found)
    graph.clear()
    graph.apply_schema()
    _ingest_with_good(graph, archives, bad, schema_dir=schemas)


# -- 4. one failing path does not abort the others ---------------------------------------------

def test_an_unexpected_failure_is_reported_for_its_path_only(graph: Graph, archives: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    bad = tmp_path / "explodes"
    bad.mkdir()
    (bad / "a.txt").write_text("a\n")
    real_build = FolderBuilder.build

    def build(self: FolderBuilder) -> Any:
        if self.root.name == "explodes":
            raise RuntimeError("simulated bug\nsecond line")
        return real_build(self)

    monkeypatch.setattr(FolderBuilder, "build", build)
    with caplog.at_level(logging.DEBUG, logger="voe.ingest.pipeline"):
        report = _ingest_with_good(graph, archives, bad)
    assert report.exit_code == 2
    [err] = report.errors
    assert err.path == str(bad)
    assert err.message == "could not be ingested: RuntimeError while building the folder record: simulated bug"
    assert any(r.exc_info for r in caplog.records)  # the traceback is in the debug log only


def test_graph_unavailable_still_stops_the_call(graph: Graph, archives: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def down(*_a: Any, **_k: Any) -> Any:
        raise GraphUnavailable("Neo4j is not reachable at bolt://nowhere")

    monkeypatch.setattr(pipeline, "write_record", down)
    with pytest.raises(GraphUnavailable):
        ingest_paths([archives / "mds2-2106", archives / "mds2-3842"], graph)


# -- 5. symlinks and special files -------------------------------------------------------------

@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the ingested ones, holding text that must not reach the graph."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text(OUTSIDE_TEXT + "\n")
    (out / "inner.csv").write_text("a,b\n" + OUTSIDE_TEXT + ",2\n")
    return out


@pytest.fixture
def unix_socket(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "plain" / "control.sock"
    path.parent.mkdir(exist_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    yield path
    sock.close()


def _no_outside_bytes(graph: Graph, outside: Path) -> None:
    hits = rows(graph, "MATCH (l:SourceLocation) WHERE l.text CONTAINS $t OR l.value CONTAINS $t RETURN l.id AS id",
                t="OUTSIDE-THE-FOLDER")
    assert hits == []
    digests = [hashlib.sha256(p.read_bytes()).hexdigest() for p in outside.iterdir()]
    assert rows(graph, "MATCH (f:File) WHERE f.sha256 IN $d RETURN f.id AS id", d=digests) == []


def test_plain_folder_symlinks_and_special_files_are_not_followed(graph: Graph, archives: Path, tmp_path: Path,
                                                                  outside: Path, unix_socket: Path) -> None:
    folder = unix_socket.parent
    (folder / "notes.txt").write_text("what the folder really holds\n")
    (folder / "link.txt").symlink_to(outside / "secret.txt")
    (folder / "linked_dir").symlink_to(outside, target_is_directory=True)
    (folder / "inside_link.txt").symlink_to(folder / "notes.txt")  # inside the folder: not followed either
    os.mkfifo(folder / "pipe.fifo")
    good = tmp_path / "good"
    good.mkdir()
    (good / "readme.txt").write_text("a clean folder\n")
    report = ingest_paths([folder, good], graph)  # returns: nothing was opened, so nothing hung
    assert report.errors == [] and report.exit_code == 0
    assert report.defects == {"not_a_regular_file": 5}
    found = {d["filepath"]: d for d in _defects(graph, "not_a_regular_file")}
    assert set(found) == {"link.txt", "linked_dir", "inside_link.txt", "pipe.fifo", "control.sock"}
    assert all(d["rule"] == "file.special" and d["subject"] == ["Node", "Component", "DataFile"]
               and d["pointer"] == f"{f}#entry" for f, d in found.items())
    assert "FIFO" in found["pipe.fifo"]["detail"] and "socket" in found["control.sock"]["detail"]
    entries = {r["f"]: (r["s"], r["e"], r["held"]) for r in rows(
        graph, "MATCH (c:Component) WHERE c.entry_type IS NOT NULL "
               "RETURN c.filepath AS f, c.status AS s, c.entry_type AS e, c.held AS held")}
    assert entries["linked_dir"] == ("not_a_regular_file", "symlink", False)
    assert entries["pipe.fifo"] == ("not_a_regular_file", "fifo", False)
    assert rows(graph, "MATCH (c:Component) WHERE c.filepath STARTS WITH 'linked_dir/' RETURN c.id AS id") == []
    _no_outside_bytes(graph, outside)
    held = rows(graph, "MATCH (c:Component {held: true}) RETURN c.filepath AS f ORDER BY f")
    assert [r["f"] for r in held] == ["notes.txt", "readme.txt"]  # the good folder too


def test_record_folder_symlinks_and_fifos_are_not_read(graph: Graph, archives: Path, tmp_path: Path,
                                                       outside: Path) -> None:
    src = archives / "mds2-2525"
    folder = tmp_path / "mds2-2525"
    folder.mkdir()
    (folder / "nerdm.json").write_bytes((src / "nerdm.json").read_bytes())
    (folder / "Al_Spot_AA_ASR_Results.csv").write_bytes((src / "Al_Spot_AA_ASR_Results.csv").read_bytes())
    # the real payload's bytes, but outside the folder: a symlink to them is still not read
    (outside / "real.csv").write_bytes((src / "Al_Scan_AA_MWD_ASR_Results.csv").read_bytes())
    (folder / "Al_Scan_AA_MWD_ASR_Results.csv").symlink_to(outside / "real.csv")
    os.mkfifo(folder / "Al_Spot_TDW_Results.csv")
    report = _ingest_with_good(graph, archives, folder)
    assert report.errors == [] and report.exit_code == 0
    assert report.defects["not_a_regular_file"] == 2
    doc = json.loads((src / "nerdm.json").read_text(encoding="utf-8-sig"))
    index = {c.get("filepath"): i for i, c in enumerate(doc["components"])}
    found = {d["filepath"]: d for d in _defects(graph, "not_a_regular_file")}
    for name in ("Al_Scan_AA_MWD_ASR_Results.csv", "Al_Spot_TDW_Results.csv"):
        assert found[name]["pointer"] == found[name]["at"] == f"/components/{index[name]}/filepath"
    comps = {r["f"]: (r["held"], r["s"]) for r in rows(
        graph, "MATCH (c:Component) WHERE c.filepath IN $f RETURN c.filepath AS f, c.held AS held, c.status AS s",
        f=["Al_Scan_AA_MWD_ASR_Results.csv", "Al_Spot_TDW_Results.csv", "Al_Spot_AA_ASR_Results.csv"])}
    assert comps == {"Al_Scan_AA_MWD_ASR_Results.csv": (False, "not_a_regular_file"),
                     "Al_Spot_TDW_Results.csv": (False, "not_a_regular_file"),
                     "Al_Spot_AA_ASR_Results.csv": (True, "held")}
    _no_outside_bytes(graph, outside)


def test_a_payload_under_a_symlinked_folder_is_not_read(graph: Graph, archives: Path, tmp_path: Path,
                                                        outside: Path) -> None:
    def mutate(d: dict[str, Any]) -> None:
        d["components"][0].update({"filepath": "linked/inner.csv", "@id": "cmps/linked/inner.csv"})

    bad = _record(archives, tmp_path, "under", mutate)
    (bad / "linked").symlink_to(outside, target_is_directory=True)
    report = _ingest_with_good(graph, archives, bad)
    assert report.errors == [] and report.exit_code == 0
    [d] = _defects(graph, "not_a_regular_file")
    assert d["filepath"] == "linked/inner.csv" and d["pointer"] == "/components/0/filepath"
    assert "lies under linked" in d["detail"]
    _no_outside_bytes(graph, outside)


def test_a_fifo_named_as_the_path_is_an_input_error(graph: Graph, archives: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "record.json"
    os.mkfifo(fifo)
    report = _ingest_with_good(graph, archives, fifo)
    [err] = report.errors
    assert err.path == str(fifo) and "FIFO" in err.message and report.exit_code == 2


# -- 6. the CLI: exit codes and no traceback ----------------------------------------------------

def test_cli_ingests_every_hostile_case_without_a_traceback(graph: Graph, archives: Path, tmp_path: Path,
                                                            outside: Path, cli_env: dict[str, str]) -> None:
    def mutate(d: dict[str, Any]) -> None:
        d["title"] = "lone \udcff surrogate"
        d["landingPage"] = "http://[::1/x"
        d["components"][0].update(size=10**30, mediaType=[1])
        d["components"][1]["_extensionSchemas"] = ["https://data.nist.gov/od/dm/nerdm-schema/pub/v0.7#/definitions/X"]

    hostile = _record(archives, tmp_path, "hostile", mutate)
    bomb = _nested(archives, tmp_path, "bomb", 100_000)
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "link.txt").symlink_to(outside / "secret.txt")
    (plain / "ok.txt").write_text("fine\n")
    proc = _voe(["ingest", str(hostile), str(bomb), str(plain), str(archives / "mds2-2106"), "--json"], cli_env)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, proc.stderr  # the bomb is an input problem; the rest was ingested
    summary = json.loads(proc.stdout)
    assert summary["records"] == 3
    assert [e["path"] for e in summary["errors"]] == [str(bomb / "nerdm.json")]
    assert summary["defects"]["value_not_storable"] == 3  # title, size, mediaType
    assert summary["defects"]["not_a_regular_file"] == 1
    assert summary["defects"]["schema_violation"] >= 2
    text = _voe(["ingest", str(hostile), str(plain)], cli_env)
    assert text.returncode == 0 and "Traceback" not in text.stderr, text.stderr
    _no_outside_bytes(graph, outside)


def test_a_file_name_that_is_not_utf8_is_escaped(graph: Graph, archives: Path, tmp_path: Path) -> None:
    folder = tmp_path / "names"
    folder.mkdir()
    name = os.fsdecode(b"caf\xe9.txt")  # Latin-1 bytes: a lone surrogate in Python's view of the name
    (folder / name).write_text("held bytes\n")
    report = _ingest_with_good(graph, archives, folder)
    assert report.errors == [] and report.exit_code == 0
    [d] = _defects(graph, "value_not_storable")
    assert d["filepath"] == "caf\\udce9.txt" and d["pointer"] == "caf\\udce9.txt#file"
    assert "the value of filepath" in d["detail"]
    [loc] = rows(graph, "MATCH (:Defect {kind: 'value_not_storable'})-[:LOCATED_AT]->(l) RETURN l.locator AS l")
    assert loc == {"l": "file"}
    assert rows(graph, "MATCH (c:Component {filepath: 'caf\\\\udce9.txt'}) RETURN c.held AS h") == [{"h": True}]
    report.model_dump_json()


def test_a_symlinked_nerdm_json_inside_a_folder_is_not_followed(graph: Graph, archives: Path,
                                                                tmp_path: Path) -> None:
    folder = tmp_path / "linked_record"
    folder.mkdir()
    (folder / "nerdm.json").symlink_to(archives / "mds2-3842" / "nerdm.json")
    report = _ingest_with_good(graph, archives, folder)
    [err] = report.errors
    assert err.path == str(folder / "nerdm.json") and "symbolic link" in err.message and report.exit_code == 2
    assert [r.ark for r in report.per_record] == [GOOD]


# -- found by the long fuzz profile (bench/fuzz.py) ------------------------------------------------

def test_a_declared_digest_with_a_lone_surrogate_is_compared_not_crashed_on(graph: Graph, archives: Path,
                                                                             tmp_path: Path) -> None:
    """A checksum file describes a component whose declared digest is not hex text: the sidecar's declared
    digest cannot match it (a defect), and nothing crashes."""
    def mutate(d: dict[str, Any]) -> None:
        sidecar = next(c for c in d["components"] if "describes" in c)
        target = next(c for c in d["components"] if c["@id"] == sidecar["describes"])
        target["checksum"]["hash"] = "\udc80" + target["checksum"]["hash"]

    report = _ingest_with_good(graph, archives, _record(archives, tmp_path, "digest", mutate, source="mds2-4103"))
    assert report.errors == [] and report.exit_code == 0
    assert any(d["rule"] == "nerdm.sidecar.declared" for d in _defects(graph, "sidecar_checksum_mismatch"))


def test_an_integer_of_thousands_of_digits_is_a_clean_input_error(graph: Graph, archives: Path,
                                                                  tmp_path: Path) -> None:
    bad = tmp_path / "digits"
    bad.mkdir()
    text = (archives / "mds2-3842" / "nerdm.json").read_text(encoding="utf-8-sig")
    (bad / "nerdm.json").write_text(text.replace('"size": ', '"size": ' + "9" * 5000, 1))
    report = _ingest_with_good(graph, archives, bad)
    assert report.exit_code == 2
    [err] = report.errors
    assert err.path == str(bad / "nerdm.json") and "Exceeds the limit (4300 digits)" in err.message
