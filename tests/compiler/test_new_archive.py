"""A new archive, one no other test has seen, compiles without a code change and passes the same gate.

The archive is written into tmp_path: two NERDm records built on the header of the real mds2-4103 record
(read in place) with components of their own, and a plain folder of release notes in the AM Bench
summary format. Their facts are of the kinds real archives hold: checksum files that agree and one that
does not, a readme whose checksum file the record marks invalid, a CSV labelled as Excel, files a release
removed, renamed and changed.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

from compiler.package import compile_package, gate_table, load_package
from ingest import ingest_paths
from voe.graph import Graph

DATAFILE = ["nrdp:DataFile", "nrdp:DownloadableFile", "dcat:Distribution"]
CHECKSUM = ["nrdp:ChecksumFile", "nrdp:DownloadableFile", "dcat:Distribution"]
ALG = {"tag": "sha256", "@type": "Thing"}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _record(archives: Path, root: Path, n: int, folders: dict[str, list[str]], bad_sidecar: set[str],
            readme_valid: bool, mislabelled: set[str]) -> Path:
    doc: dict[str, Any] = copy.deepcopy(json.loads((archives / "mds2-4103" / "nerdm.json").read_text()))
    ident = f"mds2-{n}"
    doc.update({"@id": f"ark:/88434/{ident}", "ediid": f"ark:/88434/{ident}", "doi": f"doi:10.18434/{ident}",
                "title": f"Generated AM measurement record {n}", "version": "1.0.0", "references": [],
                "landingPage": f"https://data.nist.gov/od/id/{ident}"})
    comps: list[dict[str, Any]] = []

    def datafile(path: str, media: str) -> None:
        digest = _digest(f"{n}/{path}")
        url = f"https://data.nist.gov/od/ds/ark:/88434/{ident}/{path}"
        comps.append({"@id": f"cmps/{path}", "@type": DATAFILE, "filepath": path, "downloadURL": url,
                      "mediaType": media, "title": path.rsplit(".", 1)[0], "size": 1000 + len(path),
                      "checksum": {"hash": digest, "algorithm": ALG}})
        sidecar = _digest(digest) if path not in bad_sidecar else _digest(f"other/{path}")
        comps.append({"@id": f"cmps/{path}.sha256", "@type": CHECKSUM, "filepath": f"{path}.sha256",
                      "downloadURL": url + ".sha256", "algorithm": ALG, "describes": f"cmps/{path}",
                      "description": f"SHA-256 checksum value for {path.rsplit('/', 1)[-1]}", "mediaType": "text/plain",
                      "size": 64, "valid": readme_valid or not path.endswith("ReadMe.txt"),
                      "checksum": {"hash": sidecar, "algorithm": ALG}})

    datafile(f"{n}_ReadMe.txt", "text/plain")
    for folder, files in folders.items():
        comps.append({"@id": f"cmps/{folder}", "@type": ["nrdp:Subcollection"], "filepath": folder})
        for f in files:
            path = f"{folder}/{f}"
            datafile(path, "application/vnd.ms-excel" if path in mislabelled else "text/csv")
    doc["components"] = comps
    out = root / ident
    out.mkdir()
    (out / "nerdm.json").write_text(json.dumps(doc, indent=2))
    return out


def _summary(rows: dict[str, list[tuple[str, str, int]]]) -> str:
    cells = []
    for name, versions in sorted(rows.items()):
        inner = "".join(f"<tr><td>{v}</td><td>{sha}</td><td>{size}</td></tr>\n" for v, sha, size in versions)
        cells.append(f'<tr>\n<td style="vertical-align: top">{name}</td>\n<td>\n<table border="1">\n'
                     f"<tr><th>Version</th><th>File Hash</th><th>File Size</th></tr>\n{inner}</table>\n</td>\n</tr>\n")
    return ("<html>\n<head></head>\n<body>\n<h1>Release File Summary: 1.0.0 to 1.1.0</h1>\n<h1>File Summary</h1>\n"
            '<table border="1">\n<tr><th>File Basename</th><th>Summary</th></tr>\n' + "".join(cells)
            + "</table><h2>Summary of Changes:</h2>\n</body>\n</html>\n")


def _releases(root: Path) -> Path:
    sha = lambda s: hashlib.sha1(s.encode()).hexdigest()  # noqa: E731
    rows: dict[str, list[tuple[str, str, int]]] = {}
    for i in range(1, 6):
        rows[f"NL-Part-U{i}.xml"] = [("1.0.0", sha(f"u{i}"), 900 + i), ("1.1.0", sha(f"u{i}"), 900 + i)]
    for i in range(1, 5):
        rows[f"NL-Part-X{i}.xml"] = [("1.0.0", sha(f"x{i}"), 800 + i)]  # removed
    for i in range(1, 3):
        rows[f"NL-Scan-Y{i}.xml"] = [("1.0.0", sha(f"y{i}"), 700 + i)]  # renamed to NL_Scan_Y{i}.xml
        rows[f"NL_Scan_Y{i}.xml"] = [("1.1.0", sha(f"y{i}-new"), 710 + i)]
        rows[f"NL-Mat-Z{i}.xml"] = [("1.0.0", sha(f"z{i}"), 600 + i), ("1.1.0", sha(f"z{i}-fixed"), 605 + i)]
    rows["NL-Part-N1.xml"] = [("1.1.0", sha("n1"), 500)]
    folder = root / "newlab-releases"
    notes = folder / "release-notes"
    notes.mkdir(parents=True)
    (notes / "release-file-change-summary-1.0.0-to-1.1.0.html").write_text(_summary(rows))
    (notes / "changelog_1.1.0.txt").write_text(
        "List of changes from version 1.0.0 to version 1.1.0\n\n"
        "1. Removed the XML documents 'NL-Part-X1.xml' and 'NL-Part-X2.xml' for the specimens 'NL-Part-X1'\n"
        "   and 'NL-Part-X2', which were withdrawn.\n"
        "2. Replaced the prefix 'NL-Scan-' by 'NL_Scan_' for every scan measurement.\n"
        "3. Corrected the shape of material 'NL-Mat-Z1' in 'NL-Mat-Z1.xml'.\n")
    return folder


def test_a_new_archive_compiles_and_passes_the_gate(graph: Graph, archives: Path, tmp_path: Path) -> None:
    clean = _record(archives, tmp_path, 9001,
                    {"Melt_Pools": ["a.csv", "b.csv"], "Porosity": ["c.csv", "d.csv"], "Hardness": ["e.csv", "f.csv"],
                     "Spectra": ["g.csv", "h.csv"]},
                    bad_sidecar={"Hardness/e.csv"}, readme_valid=True, mislabelled={"Spectra/h.csv"})
    blocked = _record(archives, tmp_path, 9002,
                      {"Layers": ["a.csv"], "Tracks": ["b.csv"], "Images": ["c.csv"], "Widths": ["d.csv"]},
                      bad_sidecar={"Widths/d.csv"}, readme_valid=False, mislabelled=set())
    releases = _releases(tmp_path)
    report = ingest_paths([clean, blocked, releases], graph)
    assert report.errors == []
    summary = compile_package(graph, tmp_path / "pkg")
    assert summary.gate_passed, gate_table(summary)
    assert set(summary.families) == {"source_integrity", "missing_evidence", "packet_escalation",
                                     "packet_submission"}
    _, evidence, answers, _ = load_package(tmp_path / "pkg")
    by_family: dict[str, set[str]] = {}
    for a in answers.values():
        by_family.setdefault(a.family.value, set()).add(str(evidence[a.binding[0]].title))
    # the defects are the ones written into the archive, and nothing else
    assert by_family["source_integrity"] == {"Hardness", "Spectra", "Widths", "9002_ReadMe"}
    assert {"Layers", "Tracks", "Images"} == by_family["packet_escalation"]
    assert all(t.startswith("NL-Part-X") for t in by_family["missing_evidence"])
    assert {t.split(" ")[0] for t in by_family["missing_evidence"]} >= {"NL-Part-X1.xml", "NL-Part-X2.xml"}
