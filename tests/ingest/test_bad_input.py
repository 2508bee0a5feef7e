"""Input voe cannot read: a clear error naming the file (and JSON pointer), exit code 2, the other
records of the same call still ingested, nothing half-written for the one that failed."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.ingest.helpers import copy_record, rows
from voe.errors import OntologyViolation
from voe.graph import EdgeRow, Graph
from voe.ingest import ingest_paths
from voe.ingest.sources.nerdm.build import build_record
from voe.ingest.write.loader import write_record
from voe.ontology import Label, Rel


def _voe(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "voe.cli", *args], capture_output=True, text=True, env=env, timeout=300)


def _bad(tmp_path: Path, name: str, content: bytes) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "nerdm.json").write_bytes(content)
    return folder


CASES = {
    "malformed": (b'{"@id": "ark:/1/x", "components": [1, 2,,]}', "malformed JSON at line 1, column"),
    "truncated": (None, "truncated?"),
    "not_an_object": (b"[1, 2, 3]", "not a NERDm record (top level is list"),
    "no_id": (b'{"title": "hello"}', "no string @id"),
    "not_nerdm": (b'{"@id": "x", "@type": ["schema:Dataset"]}', "no NERDm _schema"),
    "empty": (b"", "is empty"),
    "components_not_list": (b'{"@id": "x", "_schema": "nerdm", "components": {}}', "components must be a list"),
    "not_utf8": (b'{"@id": "\xff\xfe"}', "not UTF-8"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_unreadable_record_is_reported_and_the_rest_ingested(
    case: str, graph: Graph, archives: Path, tmp_path: Path
) -> None:
    content, message = CASES[case]
    if content is None:  # the first half of a real record
        content = (archives / "mds2-3842" / "nerdm.json").read_bytes()[:5000]
    bad = _bad(tmp_path, case, content)
    report = ingest_paths([bad, archives / "mds2-3842"], graph)
    assert report.records == 1 and report.exit_code == 2
    [err] = report.errors
    assert err.path == str(bad / "nerdm.json") and message in err.message
    arks = [r["ark"] for r in rows(graph, "MATCH (r:Record) RETURN r.ark AS ark")]
    assert arks == ["ark:/88434/mds2-3842"]


def test_pointer_is_named_for_structural_errors(graph: Graph, tmp_path: Path) -> None:
    bad = _bad(tmp_path, "r", b'{"@id": "x", "_schema": "nerdm", "components": "oops"}')
    report = ingest_paths([bad], graph)
    assert report.errors[0].pointer == "/components"


def test_missing_path_and_folder_without_record(graph: Graph, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    report = ingest_paths([tmp_path / "nope", tmp_path / "empty"], graph)
    assert [(e.path, e.message) for e in report.errors] == [
        (str(tmp_path / "nope"), "path does not exist"),
        (str(tmp_path / "empty"), "folder is empty: no nerdm.json and no files to ingest"),
    ]


def test_record_file_that_is_a_folder(graph: Graph, tmp_path: Path) -> None:
    (tmp_path / "r" / "nerdm.json").mkdir(parents=True)
    report = ingest_paths([tmp_path / "r"], graph)
    assert "is a folder" in report.errors[0].message


def test_a_failing_write_leaves_nothing_of_the_record(graph: Graph, archives: Path, tmp_path: Path) -> None:
    rg = build_record(archives / "mds2-3842", None)
    # an edge to a node that is not in the batch fails at the end of the write, after every node was sent
    rg.edges.append(EdgeRow(Rel.HAS_COMPONENT, rg.record_id, Label.RECORD, "component:missing", Label.COMPONENT))
    with pytest.raises(OntologyViolation):
        write_record(graph, rg)
    assert graph.counts() == {"nodes": 0, "relationships": 0}


def test_cli_names_the_file_exits_2_and_keeps_going(
    graph: Graph, archives: Path, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    bad = _bad(tmp_path, "bad", b'{"@id": "x", ')
    proc = _voe(["ingest", str(bad), str(archives / "mds2-2106"), "--json"], cli_env)
    assert proc.returncode == 2, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["records"] == 1
    assert summary["errors"][0]["path"] == str(bad / "nerdm.json")
    assert "Traceback" not in proc.stderr


def test_cli_names_each_file_of_a_format_voe_cannot_read_and_ingests_the_rest(
    graph: Graph, archives: Path, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    """A tarred bag, random bytes and a zip that is neither a crate nor a bag, beside a good record: one line each
    saying what the file looks like, exit 2, no traceback, the record ingested."""
    bag = tmp_path / "bag"
    (bag / "data").mkdir(parents=True)
    (bag / "bagit.txt").write_text("BagIt-Version: 0.97\nTag-File-Character-Encoding: UTF-8\n")
    (bag / "data" / "a.csv").write_text("a,b\n1,2\n")
    tgz = tmp_path / "bag.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(bag, arcname="bag")
    noise = tmp_path / "noise.bin"
    noise.write_bytes(random.Random(42).randbytes(4096))
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("notes/readme.txt", "no crate, no bag")
    proc = _voe(["ingest", str(tgz), str(noise), str(other), str(archives / "mds2-2106")], cli_env)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [
        f"error: {tgz}: is a format voe cannot read yet (a gzip-compressed tar archive holding a BagIt bag; voe "
        "reads a bag as a folder or a zip)",
        f"error: {noise}: is a format voe cannot read yet (binary data)",
        f"error: {other}: is a format voe cannot read yet (a zip with no ro-crate-metadata.json and no bagit.txt: "
        "neither an RO-Crate or .eln nor a BagIt bag)"]
    assert [r["ark"] for r in rows(graph, "MATCH (r:Record) RETURN r.ark AS ark")] == ["ark:/88434/mds2-2106"]


def test_cli_text_output_has_no_traceback(graph: Graph, tmp_path: Path, cli_env: dict[str, str]) -> None:
    proc = _voe(["ingest", str(tmp_path / "missing")], cli_env)
    assert proc.returncode == 2
    assert f"error: {tmp_path / 'missing'}: path does not exist" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_reports_an_unreachable_neo4j_without_a_traceback(archives: Path, cli_env: dict[str, str]) -> None:
    env = {**cli_env, "NEO4J_URI": "bolt://127.0.0.1:9"}
    proc = _voe(["ingest", str(archives / "mds2-2106")], env)
    assert proc.returncode == 1
    assert "Neo4j is not reachable at bolt://127.0.0.1:9" in proc.stderr and "voe db up" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_strict_exits_1_on_defects(graph: Graph, archives: Path, tmp_path: Path, cli_env: dict[str, str]) -> None:
    folder = copy_record(archives / "mds2-2525", tmp_path / "r")
    proc = _voe(["ingest", str(folder), "--strict"], cli_env)
    assert proc.returncode == 1  # mds2-2525 declares its two AVIs video/example, a reserved placeholder type
    assert "media_type_mismatch 2" in proc.stdout
