"""The curator's defect report (`voe audit`, compiler/audit.py) on the real records, read as their owner would."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import jsonschema

from voe.compiler.audit import audit
from voe.graph import Graph
from voe.ingest import ingest_paths


def test_voe_audit_of_mds2_4103_names_every_checksum_file_for_its_contact(graph: Graph, archives: Path, tmp_path: Path,
                                                                         cli_env: dict[str, str]) -> None:
    out = tmp_path / "audit"
    done = subprocess.run([sys.executable, "-m", "voe.cli", "audit", str(archives / "mds2-4103"), "--out", str(out),
                           "--json"], capture_output=True, text=True, env=cli_env)
    assert done.returncode == 1, done.stderr  # findings that block use
    report = json.loads(done.stdout)
    jsonschema.validate(report, json.loads((out / "schema" / "audit.schema.json").read_text()))
    assert json.loads((out / "audit.json").read_text()) == report
    [rec] = report["records"]
    assert (rec["ark"], rec["contact_name"], rec["contact_email"]) == ("ark:/88434/mds2-4103", "Jordan Weaver",
                                                                      "jordan.weaver@nist.gov")
    blocks = [f for f in rec["findings"] if f["severity"] == "blocks use"]
    stale = [f for f in rec["findings"] if f["severity"] == "stale"]
    # the 36 pixel_points checksum files that disagree, each located; the root ReadMe's invalid and disagreeing
    # checksum file, resolved by its byte-identical copy whose checksum file is valid
    assert len(blocks) == 36 and all(f["kind"] == "sidecar_checksum_mismatch" and "pixel_points" in f["file"]
                                     and f["location"].startswith("nerdm.json /components/") for f in blocks)
    assert {f["kind"] for f in stale} == {"sidecar_marked_invalid", "sidecar_checksum_mismatch"}
    assert all(f["file"] == "4103_ReadMe.txt.sha256" and "Cross_Sections/Tracks_Results/4103_ReadMe.txt" in
               f["resolution"] for f in stale)
    assert [f["severity"] for f in rec["findings"]] == ["blocks use"] * 36 + ["stale"] * 2  # what blocks use first
    letter = (out / "letters.txt").read_text()
    assert letter.startswith("To: Jordan Weaver <jordan.weaver@nist.gov>\nAbout: ark:/88434/mds2-4103 version 1.0.0")
    assert "and 16 more of this kind" in letter and "resolved by a byte-identical copy" in letter
    with (out / "audit.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 38 and rows[0]["severity"] == "blocks use"
    assert "| severity | kind | file | location |" in (out / "audit.md").read_text()


def test_the_audit_reports_conflicts_and_what_the_archive_resolves(graph: Graph, archives: Path) -> None:
    assert ingest_paths([archives / "ambench-releases", archives / "mds2-2525"], graph).errors == []
    by_ark = {r.ark: r for r in audit(graph).records}
    releases = by_ark["folder:ambench-releases"]
    kinds = {f.kind for f in releases.findings}
    assert {"unstated_change", "calibration_claimed", "calibration_held_nowhere"} <= kinds
    assert sum(f.kind == "unstated_change" for f in releases.findings) == 90
    aluminium = [f for f in by_ark["ark:/88434/mds2-2525"].findings if f.kind == "material_conflict"]
    assert aluminium and all("aluminium" in f.detail and "Ti-6Al-4V" in f.detail for f in aluminium)
    assert by_ark["ark:/88434/mds2-2525"].contact_name == "Brian Simonds"


def test_voe_audit_out_follows_the_one_out_rule(graph: Graph, archives: Path, tmp_path: Path,
                                                cli_env: dict[str, str]) -> None:
    """`voe audit --out` as every command's --out (voe/artifacts/outdir.py): a folder holding something is refused
    before anything is ingested, `--force` replaces an earlier defect report whole (none of its files stay) and
    nothing else (a run's folder holds an audit.json too)."""
    def voe(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "voe.cli", "audit", *args], capture_output=True, text=True,
                              env=cli_env, timeout=600)

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me\n")
    refused = voe(str(archives / "mds2-2525"), "--out", str(mine))
    assert refused.returncode == 2 and f"{mine} exists and is not empty: --force replaces it" in refused.stderr
    assert graph.counts()["nodes"] == 0  # refused before the path was ingested
    forced = voe(str(archives / "mds2-2525"), "--out", str(mine), "--force")
    assert forced.returncode == 2 and "replaces an earlier defect report only" in forced.stderr
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]

    run = tmp_path / "run"
    run.mkdir()
    (run / "audit.json").write_text("{}\n")  # a run's own audit, not a defect report
    assert "replaces an earlier defect report only" in voe("--out", str(run), "--force").stderr

    out = tmp_path / "audit"
    assert voe("--out", str(out)).returncode == 0  # the empty graph: an empty report
    (out / "stale.txt").write_text("from before\n")
    again = voe("--out", str(out))
    assert again.returncode == 2 and "--force replaces it" in again.stderr
    assert voe("--out", str(out), "--force").returncode == 0
    assert sorted(p.name for p in out.iterdir()) == ["audit.csv", "audit.json", "audit.md", "letters.txt", "schema"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit", "mine", "run"]  # nothing staged or set aside
