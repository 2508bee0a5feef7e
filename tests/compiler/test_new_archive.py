"""A new archive, one no other test has seen, compiles without a code change, passes the same gate, and yields
every decision it supports (issue 29, "reach"; issue 41, decisions that need reading).

The archive is written into tmp_path: NERDm records built on the header of the real mds2-4103 record (read in
place) with components of their own, a plain folder of release notes in the AM Bench summary format, and a
metadata workbook. One of each pattern a real archive holds: checksum files that agree and one that does not; a
readme whose checksum file the record marks invalid (a flag, and packets resting on it escalate) and, in another
record, one whose stale checksum file a byte-identical copy with a valid one resolves (a submission); a
placeholder media type (a flag) beside a CSV labelled as Excel (the type Windows gives .csv: not a defect); a
checksum file that describes a file the record does not list (missing evidence); results whose description
names another material than the record (an escalation); files a release removed, renamed and corrected, as its
changelog states, a removal whose statement names its replacement, changes no changelog states (one batch of
one-byte edits, and a single change: escalations), and the same kinds of removal and rename that no changelog
states (no task); measurement rows whose calibration cells name another row (calibration), a calibration the
archive holds nowhere (missing evidence) and a dated claim (an escalation).
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

from voe.artifacts.package import load_package
from voe.compiler.package import gate_table, since
from voe.graph import Graph
from voe.ingest import ingest_paths
from voe.replay.admission import compile_package

DATAFILE = ["nrdp:DataFile", "nrdp:DownloadableFile", "dcat:Distribution"]
CHECKSUM = ["nrdp:ChecksumFile", "nrdp:DownloadableFile", "dcat:Distribution"]
ALG = {"tag": "sha256", "@type": "Thing"}
SHARED = ["mds2-4103", "mds2-3842", "mds2-2525", "mds2-2106", "amb2025-template", "FACTS.md", "ambench-releases"]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class _Record:
    def __init__(self, archives: Path, n: int, title: str, readme_valid: bool = True) -> None:
        self.doc: dict[str, Any] = copy.deepcopy(json.loads((archives / "mds2-4103" / "nerdm.json").read_text()))
        self.n, self.ident = n, f"mds2-{n}"
        self.doc.update({"@id": f"ark:/88434/{self.ident}", "ediid": f"ark:/88434/{self.ident}",
                         "doi": f"doi:10.18434/{self.ident}", "title": title, "version": "1.0.0", "references": [],
                         "landingPage": f"https://data.nist.gov/od/id/{self.ident}"})
        self.comps: list[dict[str, Any]] = []
        self.file(f"{n}_ReadMe.txt", "text/plain", valid=readme_valid)

    def file(self, path: str, media: str, description: str | None = None, bad_sidecar: bool = False,
             valid: bool = True) -> None:
        digest = _digest(f"{self.n}/{path}")
        url = f"https://data.nist.gov/od/ds/ark:/88434/{self.ident}/{path}"
        comp = {"@id": f"cmps/{path}", "@type": DATAFILE, "filepath": path, "downloadURL": url, "mediaType": media,
                "title": path.rsplit("/", 1)[-1].rsplit(".", 1)[0], "size": 1000 + len(path),
                "checksum": {"hash": digest, "algorithm": ALG}}
        if description:
            comp["description"] = description
        self.comps.append(comp)
        self.sidecar(path, _digest(f"other/{path}") if bad_sidecar else _digest(digest), valid)

    def sidecar(self, target: str, declared: str, valid: bool = True) -> None:
        url = f"https://data.nist.gov/od/ds/ark:/88434/{self.ident}/{target}.sha256"
        self.comps.append({"@id": f"cmps/{target}.sha256", "@type": CHECKSUM, "filepath": f"{target}.sha256",
                           "downloadURL": url, "algorithm": ALG, "describes": f"cmps/{target}",
                           "description": f"SHA-256 checksum value for {target.rsplit('/', 1)[-1]}",
                           "mediaType": "text/plain", "size": 64, "valid": valid,
                           "checksum": {"hash": declared, "algorithm": ALG}})

    def folder(self, name: str, files: list[str], bad: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.comps.append({"@id": f"cmps/{name}", "@type": ["nrdp:Subcollection"], "filepath": name})
        for f in files:
            self.file(f"{name}/{f}", "text/csv", bad_sidecar=f in bad)

    def write(self, root: Path) -> Path:
        self.doc["components"] = self.comps
        out = root / self.ident
        out.mkdir()
        (out / "nerdm.json").write_text(json.dumps(self.doc, indent=2))
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


def _workbook(path: Path) -> None:
    """A metadata workbook of measurements (the AM Bench shape): rows that name another row as their calibration,
    rows that name calibrations nothing holds, a row whose calibration is a dated claim, and the template's
    guidance row."""
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Hardness_testing"
    sheet.append(["Human_readonly", "Measurement_identifier", "Calibration_Y_or_N", "Calibration_type",
                  "Calibration_measurement_identifier", "Calibration_data_description"])
    sheet.append(["Y", None, "is this measurement for calibration or not. Enter Y or N", None,
                  "Provide calibration measurement identifier", "text"])
    sheet.append(["N", "NL_HV_CAL_01", "Y", None, None, "NA"])
    sheet.append(["N", "NL_HV_CAL_02", "Y", None, None, "NA"])
    for i in range(1, 4):
        sheet.append(["N", f"NL_HV_A{i}", "N", "Force", "NL_HV_CAL_01", "NA"])
    for i in range(1, 4):
        sheet.append(["N", f"NL_HV_B{i}", "N", "Force", "NA", "Indenter block certificate 7731 and load check"])
    for i in range(1, 4):
        sheet.append(["N", f"NL_HV_C{i}", "N", "Force", "NA", "Reference hardness block series QZ-4"])
    for i in range(1, 3):
        sheet.append(["N", f"NL_HV_D{i}", "N", "Force", "NA", "load cell calibrated 2023-04-11, rechecked 2024-01"])
    for i in range(1, 3):
        sheet.append(["N", f"NL_HV_E{i}", "N", "Displacement", "NL_HV_CAL_02", "NA"])
    path.parent.mkdir(parents=True, exist_ok=True)
    book.save(path)


def _releases(root: Path) -> Path:
    sha = lambda s: hashlib.sha1(s.encode()).hexdigest()  # noqa: E731
    rows: dict[str, list[tuple[str, str, int]]] = {}
    for i in range(1, 6):
        rows[f"NL-Part-U{i}.xml"] = [("1.0.0", sha(f"u{i}"), 900 + i), ("1.1.0", sha(f"u{i}"), 900 + i)]
    for i in range(1, 5):
        rows[f"NL-Part-X{i}.xml"] = [("1.0.0", sha(f"x{i}"), 800 + i)]  # removed (X1, X2 stated; X3, X4 not)
    for i in range(1, 3):
        rows[f"NL-Scan-Y{i}.xml"] = [("1.0.0", sha(f"y{i}"), 700 + i)]  # renamed to NL_Scan_Y{i}.xml (stated rule)
        rows[f"NL_Scan_Y{i}.xml"] = [("1.1.0", sha(f"y{i}-new"), 710 + i)]
        rows[f"NL-Mat-Z{i}.xml"] = [("1.0.0", sha(f"z{i}"), 600 + i), ("1.1.0", sha(f"z{i}-fixed"), 605 + i)]
    rows["NL-Log-W1.xml"] = [("1.0.0", sha("w1"), 400)]  # "renamed" by name to NL_Log_W1.xml: no statement
    rows["NL_Log_W1.xml"] = [("1.1.0", sha("w1-new"), 410)]
    rows["NL-Part-N1.xml"] = [("1.1.0", sha("n1"), 500)]
    for i in range(1, 4):  # removed; the statement names the document that replaces them
        rows[f"NL-Weld-R{i}.xml"] = [("1.0.0", sha(f"r{i}"), 300 + i)]
    rows["NL-Weld-R1-R2-R3-M1.xml"] = [("1.1.0", sha("r-merged"), 350)]
    for i in range(1, 6):  # changed by one byte each, in one batch, and no changelog item says so
        rows[f"NL-Bead-B{i}.xml"] = [("1.0.0", sha(f"b{i}"), 1000 + i), ("1.1.0", sha(f"b{i}-edited"), 999 + i)]
    rows["NL-Bead-Q1.xml"] = [("1.0.0", sha("q1"), 1200), ("1.1.0", sha("q1-edited"), 1250)]  # a single such change
    folder = root / "newlab-releases"
    notes = folder / "release-notes"
    notes.mkdir(parents=True)
    (notes / "release-file-change-summary-1.0.0-to-1.1.0.html").write_text(_summary(rows))
    (notes / "changelog_1.1.0.txt").write_text(
        "List of changes from version 1.0.0 to version 1.1.0\n\n"
        "1. Removed the XML documents 'NL-Part-X1.xml' and 'NL-Part-X2.xml' for the specimens 'NL-Part-X1'\n"
        "   and 'NL-Part-X2', which were withdrawn.\n"
        "2. Replaced the prefix 'NL-Scan-' by 'NL_Scan_' for every scan measurement.\n"
        "3. Corrected the shape of material 'NL-Mat-Z1' in 'NL-Mat-Z1.xml'.\n"
        "4. Uploaded the XML document 'NL-Weld-R1-R2-R3-M1.xml' for the merged weld specimen. Removed the XML\n"
        "   documents 'NL-Weld-R1.xml', 'NL-Weld-R2.xml' and 'NL-Weld-R3.xml'.\n")
    _workbook(folder / "metadata" / "NewLab Measurements.xlsx")
    return folder


def _new_archive(archives: Path, root: Path) -> list[Path]:
    lab = _Record(archives, 9001, "Generated laser absorption record 9001")
    lab.folder("Melt_Pools", ["a.csv", "b.csv"])
    lab.folder("Porosity", ["c.csv", "d.csv"])
    lab.folder("Hardness", ["e.csv", "f.csv"], bad={"e.csv"})
    lab.file("Spectra_Summary.csv", "application/vnd.ms-excel")  # the type Windows gives .csv: fine
    lab.file("Spot_Xray_Movie.avi", "video/example")  # a reserved placeholder type: misidentifies the file
    lab.sidecar("Porosity/withdrawn_scan.csv", _digest("a digest of a file the record does not list"))
    lab.file("Spot_Calibrated_Absorption.csv", "text/csv", "Time-dependent absolute absorption of the spot test.")
    lab.file("Scan_Calibrated_Absorption.csv", "text/csv", "Time-dependent absolute absorption of the scan test.")
    # a beam profile beside the absorption data: no statement names it their calibration, so it is none
    lab.file("Beam_Profile_Normalized.csv", "text/csv", "Beam profile data whose integral is normalized to 1.")
    lab.file("Absorption_Uncertainty_Analysis.pdf", "application/pdf",
             "Uncertainty analysis of the absorptivity data given in this dataset.")
    blocked = _Record(archives, 9002, "Generated track record 9002", readme_valid=False)
    blocked.folder("Layers", ["a.csv"])
    blocked.folder("Tracks", ["b.csv"])
    blocked.folder("Images", ["c.csv"])
    blocked.folder("Widths", ["d.csv"], bad={"d.csv"})
    steel = _Record(archives, 9003, "Generated melt pool record 9003: laser melting of 316L stainless steel plate",
                    readme_valid=False)
    steel.doc["description"] = ["Melt pool widths of single tracks on 316L stainless steel plate."]
    steel.folder("Tracks", ["g.csv", "h.csv"])
    readme = steel.comps[0]  # the readme's copy in Tracks/, byte-identical, with a valid checksum file that agrees
    steel.comps.append({**copy.deepcopy(readme), "@id": "cmps/Tracks/9003_ReadMe.txt", "filepath": "Tracks/9003_ReadMe.txt"})
    steel.sidecar("Tracks/9003_ReadMe.txt", _digest(readme["checksum"]["hash"]))
    steel.file("Cu_Track_Widths.csv", "text/csv", "Melt pool widths of single tracks on copper plate.")
    steel.file("Cu_Track_Depths.csv", "text/csv", "Melt pool depths of single tracks on copper plate.")
    steel.file("Track_Heights.csv", "text/csv", "Track heights on the plate.")
    return [lab.write(root), blocked.write(root), steel.write(root), _releases(root)]


def _by_family(pkg: Path) -> tuple[dict[str, set[str]], Any, Any]:
    """Each family's subjects by their menu title (an unavailable item's observation carries no title)."""
    views, _, answers, manifest = load_package(pkg)
    titles = {e.evidence_id: e.title for v in views for e in v.menu}
    found: dict[str, set[str]] = {}
    for a in answers.values():
        found.setdefault(a.family.value, set()).add(titles[a.binding[0]])
    return found, answers, manifest


def test_a_new_archive_yields_each_decision_it_supports_and_passes_the_gate(graph: Graph, archives: Path,
                                                                             tmp_path: Path) -> None:
    report = ingest_paths(_new_archive(archives, tmp_path), graph)
    assert report.errors == []
    summary = compile_package(graph, tmp_path / "pkg")
    assert summary.gate_passed, gate_table(summary)
    found, answers, manifest = _by_family(tmp_path / "pkg")
    views, evidence, _, _ = load_package(tmp_path / "pkg")
    assert set(found) == {"source_integrity", "missing_evidence", "packet_escalation", "packet_submission",
                          "calibration_sufficiency"}, found
    # the defects are the ones written into the archive, and nothing else: not the CSV labelled as Excel, not the
    # readme whose stale checksum file a valid copy resolves
    assert found["source_integrity"] <= {"Hardness", "Widths", "9002_ReadMe", "Spot_Xray_Movie"}
    assert found["source_integrity"] & {"Spot_Xray_Movie", "9002_ReadMe"}
    # gaps: a checksum file of a file the record does not list, the removals its changelog states (not the others,
    # not the ones whose statement names a replacement), calibrations measurement rows name and nothing holds
    gaps = found["missing_evidence"]
    assert gaps <= {"withdrawn_scan.csv", "NL-Part-X1.xml (release-file-change-summary-1.0.0-to-1.1.0.html)",
                    "NL-Part-X2.xml (release-file-change-summary-1.0.0-to-1.1.0.html)",
                    *(f"NL_HV_{x}{i} (Hardness_testing)" for x in "BC" for i in range(1, 4))}
    assert any(t.startswith("NL_HV_") for t in gaps)
    for a in answers.values():
        if a.family.value == "missing_evidence" and evidence[a.binding[0]].provenance == "measurement":
            assert [evidence[x].title for x in a.reference_payload] in (
                ["Indenter block certificate 7731 and load check"], ["Reference hardness block series QZ-4"])
    # calibration: only what a row names, and only held
    assert found["calibration_sufficiency"] <= {f"NL_HV_{x}{i} (Hardness_testing)" for x in "AE" for i in range(1, 4)}
    for a in answers.values():
        if a.family.value == "calibration_sufficiency":
            cal = [evidence[x].title for x in a.reference_payload if x != a.binding[0]]
            assert cal in (["NL_HV_CAL_01 (Hardness_testing)"], ["NL_HV_CAL_02 (Hardness_testing)"]), cal
    escalated = found["packet_escalation"]
    assert escalated & {"NL_HV_D1 (Hardness_testing)", "NL_HV_D2 (Hardness_testing)"}  # a dated claim, no record
    assert escalated & {"Cu_Track_Widths", "Cu_Track_Depths"}  # copper results in a stainless steel record
    assert escalated & {f"NL-{x}.xml (release-file-change-summary-1.0.0-to-1.1.0.html)"
                        for x in ("Bead-B1", "Bead-B2", "Bead-B3", "Bead-B4", "Bead-B5", "Bead-Q1", "Mat-Z2")}
    assert "Track_Heights" not in escalated  # names no material: nothing conflicts
    batch = {f for a in answers.values() for f in a.gold_facts if f.startswith("batch:")}
    assert len(batch) <= 1 and all(f.endswith("|-1") for f in batch)  # five one-byte edits: one fact
    titles = " ".join(t for ts in found.values() for t in ts)
    for unstated in ("NL-Part-X3", "NL-Part-X4", "NL-Log-W1", "Beam_Profile", "Uncertainty"):
        # a removal or rename no changelog states decides nothing; a keyword in a title is no calibration
        assert unstated not in titles, unstated
    submitted = found["packet_submission"]
    assert submitted & ({f"NL-Weld-R{i}.xml (release-file-change-summary-1.0.0-to-1.1.0.html)" for i in range(1, 4)}
                        | {"9003_ReadMe", "Tracks"} | {f"NL-Scan-Y{i}.xml (release-file-change-summary-1.0.0-to-"
                                                       f"1.1.0.html)" for i in (1, 2)})
    for a in answers.values():
        subject = evidence[a.binding[0]].title or ""
        if subject.startswith("NL-Weld-R"):
            assert [evidence[x].title.split(" ")[0] for x in a.reference_payload if evidence[x].title] [:1] == \
                ["NL-Weld-R1-R2-R3-M1.xml"]
        if subject == "9003_ReadMe":
            assert a.reference_class.value == "submit_risk_packet" and a.gold_facts[0].startswith("resolved:")
    # independent decisions, and the manifest says where they come from
    per_fact = Counter(f for a in answers.values() for f in set(a.gold_facts))
    assert max(per_fact.values()) <= 2 and len(per_fact) >= 0.5 * len(answers)
    assert set(manifest.counts["by_archive"]) <= {"ark:/88434/mds2-9001@1.0.0", "ark:/88434/mds2-9002@1.0.0",
                                                  "ark:/88434/mds2-9003@1.0.0", "folder:newlab-releases@unversioned"}
    assert manifest.counts["detectable_difference"]["clusters"] >= 2 and views


def test_the_shared_archives_with_a_new_one_keep_the_gate_the_fact_limits_and_every_shared_task(
        graph: Graph, archives: Path, tmp_path: Path) -> None:
    """Growth without loss (issue 41): adding an archive keeps every task of the others, or the manifest names
    the limit that held it back; `voe compile --since` lists what was added, kept and removed."""
    assert ingest_paths([archives / s for s in SHARED], graph).errors == []
    shared = compile_package(graph, tmp_path / "shared")
    assert shared.gate_passed, gate_table(shared)
    paths = _new_archive(archives, tmp_path)
    assert ingest_paths(paths, graph).errors == []
    summary = compile_package(graph, tmp_path / "pkg")
    assert summary.gate_passed, gate_table(summary)
    _, answers, manifest = _by_family(tmp_path / "pkg")
    per_fact = Counter(f for a in answers.values() for f in set(a.gold_facts))
    assert max(per_fact.values()) <= 2 and len(per_fact) >= 0.5 * len(answers)
    assert manifest.counts["gold_facts"] == len(per_fact) and summary.families_absent == {}
    changes = since(tmp_path / "shared", tmp_path / "pkg")
    assert changes["added"] and changes["kept"]
    held = manifest.counts["held_back"]
    for task, why in changes["removed"].items():  # a shared task is gone only where a limit says why
        assert task in held and why == held[task], (task, why)
        # a gate limit: a probe's (selection holds it 5 points under) or a classifier's (trimming), never the
        # fact cap or a subject's other packet, which a new archive's facts and subjects cannot touch
        assert why.endswith("under its limit") or why.startswith("trimmed:"), (task, why)
    assert changes["gold_changed"] == []
    new = {v.task_id for v in load_package(tmp_path / "pkg")[0]} - {v.task_id for v in load_package(
        tmp_path / "shared")[0]}
    assert set(changes["added"]) == new


def _new_formats(root: Path) -> list[Path]:
    """An archive of each new format with one instance of every pattern: a NERDm collection (RMM search results:
    a record in two versions, the later dropping a file and changing another under "metadata update", another whose
    later version only renames a file and adds one under "metadata update", one whose release dates go backwards, a
    file with no checksum where others have one), an `.eln` crate (entities that
    double the root folder, one naming a file the export lacks, a declared type that does not fit, a member no entity
    describes, a stale sha256 its digest list resolves, a list line that contradicts the bytes, clean files) and a
    zipped multibag (a member whose Payload-Oxum is another's, a payload file its manifest lists with another digest,
    clean files)."""
    import zipfile

    def comp(path: str, digest: str | None, size: int = 100, media: str = "text/csv") -> dict[str, Any]:
        c: dict[str, Any] = {"@id": f"cmps/{path}", "@type": DATAFILE, "filepath": path, "mediaType": media,
                             "size": size}
        if digest:
            c["checksum"] = {"hash": digest, "algorithm": ALG}
        return c

    def record(n: int, version: str, comps: list[dict[str, Any]], history: list[tuple[str, str, str]]) -> dict[str, Any]:
        return {"@id": f"ark:/88434/mds2-{n}", "_schema": "https://data.nist.gov/od/dm/nerdm-schema/v0.7#",
                "@type": ["nrdp:PublicDataResource"], "title": f"Generated collection record {n}",
                "version": version, "components": comps, "releaseHistory": {
                    "@id": f"ark:/88434/mds2-{n}/pdr:v", "hasRelease": [
                        {"version": v, "issued": d, "description": t} for v, d, t in history]}}

    h = _digest
    v1 = record(9101, "1.0.0", [comp(f"run_{i}.csv", h(f"r{i}")) for i in range(1, 5)], [("1.0.0", "2021-01-01", "initial")])
    v2 = record(9101, "1.0.1", [comp("run_1.csv", h("r1")), comp("run_2.csv", h("r2-new")), comp("run_3.csv", h("r3"))],
                [("1.0.0", "2021-01-01", "initial"), ("1.0.1", "2021-06-01", "metadata update")])
    back = record(9102, "1.0.2", [comp(f"scan_{i}.csv", h(f"s{i}")) for i in range(1, 4)] + [comp("scan_4.csv", None)],
                  [("1.0.0", "2022-01-01", "initial"), ("1.0.1", "2022-03-01", "data update"),
                   ("1.0.2", "2021-12-01", "data update")])
    clean = record(9103, "1.0.0", [comp(f"cell_{i}.csv", h(f"c{i}")) for i in range(1, 5)],
                   [("1.0.0", "2023-01-01", "initial")])
    # only a rename (the same bytes under another name) and an addition, under "metadata update"
    moved = [record(9104, "1.0.0", [comp(f"gauge_{i}.csv", h(f"g{i}")) for i in range(1, 4)],
                    [("1.0.0", "2024-01-01", "initial")]),
             record(9104, "1.1.0", [comp("gauge_1.csv", h("g1")), comp("gauge_2.csv", h("g2")),
                                    comp("gauge_3_final.csv", h("g3")), comp("gauge_4.csv", h("g4"))],
                    [("1.0.0", "2024-01-01", "initial"), ("1.1.0", "2024-05-01", "metadata update")])]
    collection = root / "collection-snapshots"
    collection.mkdir()
    (collection / "search.json").write_text(json.dumps({"ResultCount": 6, "ResultData": [v1, v2, back, clean, *moved]}))

    crate = root / "eln-export@abc1234" / "lab.eln"
    crate.parent.mkdir()
    csv_bytes = b"t,v\n0,1\n"
    graph: list[dict[str, Any]] = [{"@id": "ro-crate-metadata.json", "@type": "CreativeWork", "about": {"@id": "./"},
                                    "dateCreated": "2025-03-01T00:00:00"}, {"@id": "./", "@type": "Dataset", "name": "Lab"}]
    members: dict[str, bytes] = {}
    for i in range(1, 4):  # the exporter doubled the root folder in these ids
        members[f"lab/exp{i}/trace.csv"] = csv_bytes
        graph.append({"@id": f"./lab/exp{i}/trace.csv", "@type": "File", "encodingFormat": "text/csv"})
    for i in range(1, 5):
        members[f"lab/clean/t{i}.csv"] = csv_bytes + str(i).encode()
        graph.append({"@id": f"./clean/t{i}.csv", "@type": "File", "encodingFormat": "text/csv"})
    members["lab/img/plot.png"] = b"\x89PNG\r\n\x1a\n" + b"0" * 32
    graph.append({"@id": "./img/plot.png", "@type": "File", "encodingFormat": "text/markdown"})
    graph.append({"@id": "./absent/raw.csv", "@type": "File", "encodingFormat": "text/csv"})
    members["lab/stray/notes.csv"] = csv_bytes
    for name in ("stale", "listed"):  # a declaration its digest list resolves; a list line that contradicts the bytes
        members[f"lab/checked/{name}.csv"] = f"t,v\n0,{len(name)}\n1,2\n".encode()
        graph.append({"@id": f"./checked/{name}.csv", "@type": "File", "encodingFormat": "text/csv"})
    graph[-2]["sha256"] = "d" * 64
    members["lab/SHA256SUMS"] = (f"{hashlib.sha256(members['lab/checked/stale.csv']).hexdigest()}  checked/stale.csv\n"
                                 f"{'e' * 64}  checked/listed.csv\n").encode()
    members["lab/ro-crate-metadata.json"] = json.dumps({"@graph": graph}).encode()
    with zipfile.ZipFile(crate, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)

    bags = root / "preservation-bags"
    bags.mkdir()
    payload = {f"data/part_{i}.csv": f"p,{i}\n".encode() for i in range(1, 4)}
    for n, files in ((0, dict(list(payload.items())[:2])), (1, dict(list(payload.items())[2:]))):
        name = f"NEWBAG.mbag0_3-{n}"
        manifest = "".join(f"{hashlib.sha256(v).hexdigest()}  {k}\n" for k, v in files.items())
        if n == 0:
            manifest = manifest.replace(hashlib.sha256(payload["data/part_1.csv"]).hexdigest(), "e" * 64)
        oxum = f"{sum(len(v) for v in payload.values())}.{len(payload)}"  # the whole dataset's, in every member
        with zipfile.ZipFile(bags / f"{name}.zip", "w") as z:
            z.writestr(f"{name}/bagit.txt", "BagIt-Version: 0.97\nTag-File-Character-Encoding: UTF-8\n")
            z.writestr(f"{name}/bag-info.txt", f"Payload-Oxum: {oxum}\nContact-Name: Lab Curator\n")
            z.writestr(f"{name}/manifest-sha256.txt", manifest)
            z.writestr(f"{name}/multibag/member-bags.tsv", "NEWBAG.mbag0_3-0\nNEWBAG.mbag0_3-1\n")
            for k, v in files.items():
                z.writestr(f"{name}/{k}", v)
    return [collection, crate.parent.parent / "eln-export@abc1234", bags]


def test_each_new_format_yields_decisions_alone_and_with_the_shared_archives(graph: Graph, archives: Path,
                                                                             tmp_path: Path) -> None:
    paths = _new_formats(tmp_path)
    assert ingest_paths(paths, graph).errors == []
    compile_package(graph, tmp_path / "alone")
    _, answers, manifest = _by_family(tmp_path / "alone")
    fmt = manifest.counts["by_format"]
    assert set(fmt) == {"nerdm_collection", "ro-crate", "bagit"}, fmt
    facts = {f.split(":", 1)[0] for a in answers.values() for f in a.gold_facts}
    assert {"version", "dates", "defects"} <= facts  # a denied change, dates backwards, the exporter's batch
    # the crate's digest list: it resolves a stale sha256 (submit), and its line that contradicts the bytes is a defect
    assert {"resolved:ev:crate:eln-export@abc1234/checked/stale.csv",
            "defect:ev:crate:eln-export@abc1234/checked/listed.csv"} <= {f for a in answers.values() for f in a.gold_facts}
    # a rename and an addition under "metadata update" are a conflict like a removal under it: escalate
    denied = {a.family.value for a in answers.values()
              if "version:record:ark:/88434/mds2-9104@1.1.0|1.0.0->1.1.0" in a.gold_facts}
    assert denied == {"packet_escalation"}
    families = {a.family.value for a in answers.values()}
    assert {"source_integrity", "packet_escalation", "packet_submission"} <= families
    assert ingest_paths([archives / s for s in SHARED], graph).errors == []
    summary = compile_package(graph, tmp_path / "joint")
    assert summary.gate_passed, gate_table(summary)
    assert {"nerdm_collection", "ro-crate", "bagit"} <= set(load_package(tmp_path / "joint")[3].counts["by_format"])
