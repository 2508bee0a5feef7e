"""Whatever `voe compile` writes, `voe export` carries (issue 34): a package compiled from a hostile plain folder
(a symlink beside the files, not followed; a file whose bytes are not what its extension says) exports and passes
the export's SHACL shapes and `voe validate` (roc-validator and mlcroissant), and every fact's source names the
sha256 of the bytes it is about."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.ingest.helpers import nerdm, rows
from voe.artifacts.package import load_package
from voe.export.jsonld import validate
from voe.graph import Graph


def _voe(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "voe.cli", *args], capture_output=True, text=True, env=env, timeout=600)


def _plain_folder(tmp_path: Path, odd: Callable[[Path, Path], None]) -> Path:
    """ok.csv (a row short: it parses as text, a parser's finding the compiler states as a fact), a checksum file
    that disagrees with data.csv (a defect, so the compiler has a decision to make) and a clean file, beside the
    hostile entries `odd` adds (pointing at a folder outside)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.csv").write_text("OUTSIDE-THE-FOLDER\n")
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "ok.csv").write_text("a,b\n1,2\n3\n")
    (folder / "data.csv").write_text("x,y\n1,2\n")
    (folder / "data.csv.sha256").write_text("0" * 64 + "  data.csv\n")
    (folder / "clean.csv").write_text("p,q\n5,6\n")
    odd(folder, outside)
    return folder


def _symlink(folder: Path, outside: Path) -> None:
    (folder / "link.csv").symlink_to(outside / "secret.csv")


def _symlinks_and_a_fifo(folder: Path, outside: Path) -> None:
    (folder / "link.csv").symlink_to(outside / "secret.csv")
    (folder / "inside_link.csv").symlink_to(folder / "clean.csv")
    (folder / "linked_dir").symlink_to(outside, target_is_directory=True)
    os.mkfifo(folder / "pipe.csv")


@pytest.mark.slow
@pytest.mark.parametrize("odd", [_symlink, _symlinks_and_a_fifo], ids=["symlink", "symlinks-and-a-fifo"])
def test_a_package_compiled_from_a_folder_with_a_symlink_exports_and_validates(
        graph: Graph, tmp_path: Path, cli_env: dict[str, str], odd: Callable[[Path, Path], None]) -> None:
    folder = _plain_folder(tmp_path, odd)
    ingested = _voe(["ingest", str(folder), "--json"], cli_env)
    assert ingested.returncode == 0, ingested.stderr
    special = sum(1 for p in folder.iterdir() if p.is_symlink() or not (p.is_file() or p.is_dir()))
    assert json.loads(ingested.stdout)["defects"]["not_a_regular_file"] == special  # ingested as designed
    pkg, crate = tmp_path / "pkg", tmp_path / "crate"
    compiled = _voe(["compile", "-q", "--out", str(pkg)], cli_env)
    # a package that fails the release gate is still written (exit 1): the compiler admitted it all the same
    assert compiled.returncode in (0, 1) and "Traceback" not in compiled.stderr, compiled.stderr
    assert compiled.returncode == 0 or "release gate" in compiled.stderr, compiled.stderr
    views, evidence, _, _ = load_package(pkg)
    assert views, "the folder gives the compiler decisions to make"

    # the parser's finding about ok.csv is in the package, as a fact located at ok.csv's bytes
    findings = rows(graph, "MATCH (:Component {filepath: 'ok.csv'})-[:HAS_DEFECT]->(d:Defect) RETURN d.detail AS d")
    ok = next(e for e in evidence.values() if e.metadata.get("path") == "ok.csv")
    digest = hashlib.sha256((folder / "ok.csv").read_bytes()).hexdigest()
    stated = [f for f in ok.facts if f.statement in {r["d"] for r in findings}]
    assert stated and all(f.source is not None and f.source["sha256"] == digest for f in stated)
    sources = [f.source for e in evidence.values() for f in e.facts if f.source is not None]
    assert sources and all(s["path"] and re.fullmatch("[0-9a-f]{64}", s["sha256"]) for s in sources)

    exported = _voe(["export", str(pkg), "--out", str(crate), "--include-answers", "--publisher",
                     "https://ror.org/05xpvk416", "--publisher-name", "a lab", "--contact", "mailto:lab@example.org",
                     "--license", "https://spdx.org/licenses/CC0-1.0.html"],  # a plain folder states neither
                    cli_env)
    assert exported.returncode == 0 and "Traceback" not in exported.stderr, exported.stderr
    report = validate(crate)
    assert report.conforms and report.files == ["tasks.jsonld", "evidence.jsonld", "answers.jsonld"]
    # and the ecosystem's tools agree: roc-validator (RO-Crate 1.2, REQUIRED and RECOMMENDED) and mlcroissant
    checked = _voe(["validate", str(crate), "--json"], cli_env)
    assert checked.returncode == 0 and json.loads(checked.stdout) == [], checked.stdout + checked.stderr
    text = (crate / "evidence.jsonld").read_text()
    assert "OUTSIDE-THE-FOLDER" not in text and hashlib.sha256(b"OUTSIDE-THE-FOLDER\n").hexdigest() not in text
    rebuilt = _voe(["import-package", str(crate), "--out", str(tmp_path / "again")], cli_env)
    assert rebuilt.returncode == 0, rebuilt.stderr
    for name in ("tasks.jsonl", "evidence.jsonl", "answers.jsonl", "manifest.json"):
        assert (tmp_path / "again" / name).read_bytes() == (pkg / name).read_bytes(), name



@pytest.mark.slow
def test_packages_compiled_from_the_hostile_ingest_cases_export_validate_and_rebuild(
        graph: Graph, archives: Path, tmp_path: Path, cli_env: dict[str, str]) -> None:
    """The cases tests/ingest/test_hostile_inputs.py ingests (values Neo4j cannot store, a malformed landing page,
    an unknown extension schema, a file name that is not UTF-8, a symlink beside the files) beside a real record:
    what the compiler writes from them exports, passes SHACL, roc-validator and mlcroissant, and comes back byte
    for byte."""
    doc = nerdm(archives / "mds2-3842")
    doc["title"] = "lone \udcff surrogate"
    doc["landingPage"] = "http://[::1/x"
    doc["components"][0].update(size=10**30, mediaType=[1])
    doc["components"][1]["_extensionSchemas"] = ["https://data.nist.gov/od/dm/nerdm-schema/pub/v0.7#/definitions/X"]
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    (hostile / "nerdm.json").write_text(json.dumps(doc, ensure_ascii=True), encoding="ascii")
    names = _plain_folder(tmp_path, _symlink)
    (names / os.fsdecode(b"caf\xe9.csv")).write_text("u,v\n7,8\n")  # a lone surrogate in Python's view of the name
    ingested = _voe(["ingest", str(hostile), str(names), str(archives / "mds2-2106"), "--json"], cli_env)
    assert ingested.returncode == 0 and "Traceback" not in ingested.stderr, ingested.stderr
    assert json.loads(ingested.stdout)["defects"]["value_not_storable"] >= 4  # title, size, mediaType, file name

    pkg, crate = tmp_path / "pkg", tmp_path / "crate"
    compiled = _voe(["compile", "-q", "--out", str(pkg)], cli_env)
    assert compiled.returncode in (0, 1) and "Traceback" not in compiled.stderr, compiled.stderr
    assert len(json.loads((pkg / "manifest.json").read_text())["sources"]) == 3
    exported = _voe(["export", str(pkg), "--out", str(crate), "--include-answers", "--publisher",
                     "https://ror.org/05xpvk416", "--publisher-name", "a lab", "--contact", "mailto:lab@example.org",
                     "--license", "https://spdx.org/licenses/CC0-1.0.html"], cli_env)
    assert exported.returncode == 0 and "Traceback" not in exported.stderr, exported.stderr
    assert validate(crate).conforms
    checked = _voe(["validate", str(crate), "--json"], cli_env)
    assert checked.returncode == 0 and json.loads(checked.stdout) == [], checked.stdout + checked.stderr
    rebuilt = _voe(["import-package", str(crate), "--out", str(tmp_path / "again")], cli_env)
    assert rebuilt.returncode == 0, rebuilt.stderr
    for path in sorted(p for p in pkg.rglob("*") if p.is_file()):
        name = path.relative_to(pkg)
        assert (tmp_path / "again" / name).read_bytes() == path.read_bytes(), name
