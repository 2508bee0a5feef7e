"""RO-Crates (ingest/sources/rocrate.py): the real `.eln` exports of `eln-exports/` (read in place), and crates
written here with one of each pattern, zipped and as a folder; an id that climbs out of the crate is refused and
nothing outside is read."""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.ingest.helpers import rows
from voe.graph import Graph
from voe.ingest import ingest_paths

SECRET = b"TOPSECRET outside the crate root\n"


def _defects(graph: Graph) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for r in rows(graph, "MATCH (r:Record)-[:HAS_COMPONENT]->(:Component)-[:HAS_DEFECT]->(d:Defect) "
                         "RETURN r.id AS r, d.kind AS k, count(*) AS n"):
        out.setdefault(r["r"].removeprefix("record:crate:"), {})[r["k"]] = r["n"]
    return out


def test_the_eln_exports_their_breaks_and_their_fixes(graph: Graph, archives: Path) -> None:
    report = ingest_paths([archives / "eln-exports"], graph)
    assert report.errors == [] and report.records == 10
    d = _defects(graph)
    # PASTA's first export doubled its root folder in every entity's @id; the next one fixed it
    assert d["PASTA@8f93b89"]["entity_path_mismatch"] == 5 and "entity_path_mismatch" not in d.get("PASTA@a9641fd", {})
    # eLabFTW wrote `//` into member names, fixed it, and broke it again
    assert d["elabftw@8011ff8"]["entity_path_mismatch"] == 9 and "elabftw@77ae47f" not in d
    assert d["elabftw@2640767"]["entity_path_mismatch"] == 2
    # Kadi4Mat's later export names a file by an id that climbs out of the crate
    assert d["kadi4mat@c1564e8"]["id_escapes_root"] == 1
    assert d["RSpace@HEAD"]["undescribed_member"] == 5 and "media_type_mismatch" not in d["RSpace@HEAD"]  # image/x-png
    # PASTA declares text/markdown (its description's format) as every file's encodingFormat
    assert d["PASTA@cb13306"]["media_type_mismatch"] >= 3
    versions = {r["v"]: r["d"] for r in rows(graph, "MATCH (r:Record {ark: 'crate:PASTA'}) RETURN r.version AS v, "
                                                    "r.dated AS d")}
    assert sorted(versions, key=versions.__getitem__) == ["8f93b89", "a9641fd", "cb13306"]
    # versions compared in date order, with no commit message in the layout: PASTA's fix of the doubled root is
    # five renames (the same bytes under the path the entity now gives), eLabFTW's later export dropped eight files
    changes = rows(graph, "MATCH (e:Evidence) WHERE e.version_status IS NOT NULL RETURN e.record_id AS r, "
                          "e.version_status AS s, e.version_coverage AS c, e.version_statement AS said")
    by = Counter((r["r"].removeprefix("record:crate:"), r["s"]) for r in changes)
    assert by[("PASTA@a9641fd", "renamed")] == 5 and by[("elabftw@2640767", "removed")] == 8
    assert all(r["c"] == "none" and r["said"] is None for r in changes)
    [located] = rows(graph, "MATCH (c:Component {entity_id: './PASTA/PastasExampleProject/002_DataFiles/story.odt'})"
                            "-[:LOCATED_AT]->(l:SourceLocation) WHERE c.record_id = 'record:crate:PASTA@8f93b89' "
                            "RETURN l.path AS path, l.pointer AS pointer, c.found_at AS at")
    # the entity, located in the crate's metadata by JSON pointer; its bytes found under the name it means
    assert located["path"] == "PASTA.eln!PASTA/ro-crate-metadata.json" and located["pointer"].startswith("/@graph/")
    assert located["at"] == "PASTA/PastasExampleProject/002_DataFiles/story.odt"


def _crate(files: dict[str, bytes], entities: list[dict[str, Any]], root: str = "demo",
           dated: str = "2025-01-01T00:00:00") -> dict[str, bytes]:
    graph = [{"@id": "ro-crate-metadata.json", "@type": "CreativeWork", "about": {"@id": "./"}, "dateCreated": dated},
             {"@id": "./", "@type": "Dataset", "name": "Demo crate", "hasPart": [{"@id": e["@id"]} for e in entities]},
             *entities]
    members = {f"{root}/{k}" if root else k: v for k, v in files.items()}
    members[f"{root}/ro-crate-metadata.json" if root else "ro-crate-metadata.json"] = json.dumps(
        {"@context": "https://w3id.org/ro/crate/1.1/context", "@graph": graph}).encode()
    return members


def _file(eid: str, data: bytes | None = None, **extra: Any) -> dict[str, Any]:
    e: dict[str, Any] = {"@id": eid, "@type": "File", "name": eid.rsplit("/", 1)[-1]}
    if data is not None:
        e.update({"contentSize": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    return {**e, **extra}


CSV = b"a,b\n1,2\n"


def _patterns() -> tuple[dict[str, bytes], list[dict[str, Any]]]:
    files = {"good.csv": CSV, "sized.csv": CSV, "hashed.csv": CSV, "typed.png": b"\x89PNG\r\n\x1a\n" + b"0" * 20,
             "data//b.csv": CSV, "extra.csv": CSV}
    entities = [_file("./good.csv", CSV, encodingFormat="text/csv"),
                _file("./sized.csv", CSV, contentSize=999),
                _file("./hashed.csv", CSV, sha256="0" * 64),
                _file("./typed.png", encodingFormat="text/plain"),
                _file("./data/b.csv", CSV),  # the member is data//b.csv: misnamed
                _file("./gone.csv", CSV),  # no member of that name: described, not held
                _file("../secret.txt")]  # climbs out of the root: refused, never read
    return files, entities


def test_a_zipped_crate_with_every_pattern(graph: Graph, tmp_path: Path) -> None:
    files, entities = _patterns()
    members = _crate(files, entities)
    members["secret.txt"] = SECRET  # beside the crate root, inside the zip: outside the crate
    path = tmp_path / "demo.eln"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    report = ingest_paths([path], graph)
    assert report.errors == [] and report.records == 1
    kinds = {r["c"]: r["k"] for r in rows(graph, "MATCH (c:Component)-[:HAS_DEFECT]->(d:Defect) "
                                                 "RETURN c.filepath AS c, d.kind AS k")}
    assert kinds == {"sized.csv": "size_mismatch", "hashed.csv": "checksum_mismatch", "typed.png": "media_type_mismatch",
                     "data/b.csv": "entity_path_mismatch", "gone.csv": "described_not_held",
                     "../secret.txt": "id_escapes_root", "extra.csv": "undescribed_member"}
    secret = hashlib.sha256(SECRET).hexdigest()
    assert not rows(graph, "MATCH (f:File {sha256: $s}) RETURN f", s=secret)
    assert not rows(graph, "MATCH (l:SourceLocation) WHERE l.text CONTAINS 'TOPSECRET' RETURN l")
    evidence = {r["t"]: r for r in rows(graph, "MATCH (e:Evidence) RETURN e.title AS t, e.available AS a, "
                                               "e.provenance AS p")}
    assert evidence["gone.csv"]["a"] is False and evidence["gone.csv"]["p"] == "attested"
    assert evidence["b.csv"]["p"] == "crate" and evidence["extra.csv"]["p"] == "crate"
    # the misnamed entity's bytes are the member of that name: held, hashed, located
    [b] = rows(graph, "MATCH (c:Component {filepath: 'data/b.csv'})-[:STORED_AS]->(f:File) RETURN f.sha256 AS s, "
                      "c.found_at AS at")
    assert b == {"s": hashlib.sha256(CSV).hexdigest(), "at": "demo/data//b.csv"}
    assert ingest_paths([path], graph).per_record[0].unchanged  # re-ingest: nothing changes


def test_a_folder_crate_never_reads_outside_its_root(graph: Graph, tmp_path: Path) -> None:
    files, entities = _patterns()
    root = tmp_path / "crate"
    for name, data in _crate(files, entities, root="").items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    (tmp_path / "secret.txt").write_bytes(SECRET)  # what ../secret.txt would name
    report = ingest_paths([root], graph)
    assert report.errors == [] and report.records == 1
    assert not rows(graph, "MATCH (f:File {sha256: $s}) RETURN f", s=hashlib.sha256(SECRET).hexdigest())
    assert rows(graph, "MATCH (d:Defect {kind: 'id_escapes_root'}) RETURN d")


def test_a_zip_voe_cannot_read_is_named_and_the_rest_lands(graph: Graph, tmp_path: Path, archives: Path) -> None:
    bad = tmp_path / "other.zip"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("notes/readme.txt", "no crate here")
    report = ingest_paths([bad, archives / "mds2-3842"], graph)
    assert [(e.path, e.message) for e in report.errors] == [(str(bad), (
        "is a format voe cannot read yet (a zip with no ro-crate-metadata.json and no bagit.txt: neither an RO-Crate "
        "or .eln nor a BagIt bag)"))]
    assert report.exit_code == 2 and report.records == 1


# -- a digest list inside the crate: its second statement --------------------------------------------------------
TABLE = b"t,v\n0,1\n1,2\n"
NOTES = b"n,m\n3,4\n"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write(members: dict[str, bytes], where: Path, zipped: bool) -> Path:
    """The members as a zip (`where` the .eln) or as a folder (`where` the folder)."""
    if zipped:
        with zipfile.ZipFile(where, "w") as z:
            for name, data in members.items():
                z.writestr(name, data)
        return where
    for name, data in members.items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_bytes(data)
    return where


def _bagged(crate: dict[str, bytes], manifest: str, bag: str) -> dict[str, bytes]:
    """The RO-Crate in a BagIt bag: the crate is the bag's data/, the bag's manifests beside it."""
    tags = {"bagit.txt": b"BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n",
            "bag-info.txt": b"Bagging-Date: 2025-01-01\n", "manifest-sha256.txt": manifest.encode()}
    tags["tagmanifest-sha256.txt"] = "".join(f"{_sha(v)}  {k}\n" for k, v in tags.items()).encode()
    return {f"{bag}{k}": v for k, v in {**tags, **{f"data/{k}": v for k, v in crate.items()}}.items()}


LAYOUTS = ["bagged-zip", "bagged-folder", "sums-folder", "tagged-sums-folder", "sidecar-zip"]


def _stale_crate(layout: str, tmp_path: Path) -> tuple[Path, str]:
    """A crate whose metadata declares a stale sha256 for table.csv, and a digest list inside it that lists the file
    with the digest its bytes have; the list's path as locations name it."""
    entities = [_file("./table.csv", TABLE, sha256="9" * 64, encodingFormat="text/csv"),
                _file("./sub/notes.csv", NOTES)]
    crate = _crate({"table.csv": TABLE, "sub/notes.csv": NOTES}, entities, root="")
    if layout.startswith("bagged"):
        meta = crate["ro-crate-metadata.json"]
        manifest = (f"{_sha(TABLE)}  data/table.csv\n{_sha(NOTES)}  data/sub/notes.csv\n"
                    f"{_sha(meta)}  data/ro-crate-metadata.json\n")
        zipped = layout.endswith("zip")
        members = _bagged(crate, manifest, "demo-bag/" if zipped else "")
        return _write(members, tmp_path / ("demo-bag.zip" if zipped else "demo-bag"), zipped), \
            "demo-bag/manifest-sha256.txt" if zipped else "manifest-sha256.txt"
    if layout == "sums-folder":
        crate["SHA256SUMS"] = f"{_sha(TABLE)} *table.csv\n{_sha(NOTES)}  sub/notes.csv\n".encode()
        return _write(crate, tmp_path / "demo-crate", zipped=False), "SHA256SUMS"
    if layout == "tagged-sums-folder":  # `shasum --tag`: the BSD form
        crate["checksums.txt"] = f"SHA256 (table.csv) = {_sha(TABLE)}\nSHA256 (sub/notes.csv) = {_sha(NOTES)}\n".encode()
        return _write(crate, tmp_path / "demo-crate", zipped=False), "checksums.txt"
    crate["table.csv.sha256"] = _sha(TABLE).encode()  # NIST's sidecar: the digest alone, of the file beside it
    members = {f"demo/{k}": v for k, v in crate.items()}
    return _write(members, tmp_path / "demo.eln", zipped=True), "table.csv.sha256"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_stale_crate_digest_is_resolved_by_the_crates_own_digest_list(graph: Graph, tmp_path: Path,
                                                                       layout: str) -> None:
    """The crate declares a sha256 its bytes do not have; a digest list inside the crate (the bag's manifest when
    the crate is its data/, SHA256SUMS, a sidecar) lists the file with the digest they have: a finding the archive
    resolves itself, the curator told which declaration is stale. The list is packaging, not an undescribed
    member; the bag's tag files beside the crate are the bag's and are left alone."""
    from voe.compiler.audit import audit

    path, listed = _stale_crate(layout, tmp_path)
    report = ingest_paths([path], graph)
    assert report.errors == [] and report.records == 1
    found = rows(graph, "MATCH (c)-[:HAS_DEFECT]->(d:Defect) RETURN c.filepath AS c, d.rule AS rule")
    assert found == [{"c": "table.csv", "rule": "crate.sha256"}]
    [line] = rows(graph, "MATCH (:Component {filepath: 'table.csv'})-[:LOCATED_AT]->(l:SourceLocation {kind: 'line'})"
                         "-[:IN_FILE]->(f:File) RETURN l.path AS path, l.line AS n, l.text AS text, f.sha256 AS f")
    assert line["path"] == listed and line["n"] == 1 and _sha(TABLE) in line["text"]
    resolved = graph.query("compiler/resolved_defects")
    assert {(r["how"], r["copy_sidecar"]) for r in resolved} == {("crate_list", listed)}
    [rec] = audit(graph).records
    [finding] = rec.findings
    assert finding.severity == "stale" and finding.rule == "crate.sha256" and finding.file == "table.csv"
    assert f"digest list {listed}" in (finding.resolution or "") and "is stale" in (finding.resolution or "")
    assert ingest_paths([path], graph).per_record[0].unchanged


@pytest.mark.parametrize("zipped", [True, False], ids=["zip", "folder"])
def test_a_digest_list_that_contradicts_the_bytes_is_a_defect_at_its_line(graph: Graph, tmp_path: Path,
                                                                         zipped: bool) -> None:
    """Three statements per file: where the list's line disagrees with the bytes it is a checksum defect located at
    the line, which the crate's own sha256 resolves when that agrees (the line is stale) and nothing resolves when
    the crate declares none; a line for a file the container does not hold names an item it cannot supply."""
    from voe.compiler.audit import audit

    entities = [_file("./table.csv", TABLE), _file("./sub/notes.csv")]  # notes.csv: no digest declared
    crate = _crate({"table.csv": TABLE, "sub/notes.csv": NOTES}, entities, root="demo" if zipped else "")
    top = "demo/" if zipped else ""
    crate[f"{top}sub/md5sums.txt"] = (f"{'0' * 32}  notes.csv\n{hashlib.md5(TABLE).hexdigest()}  ../table.csv\n"
                                      f"{'1' * 32}  gone.csv\n").encode()
    crate[f"{top}SHA256SUMS"] = f"# made by hand\n{'a' * 64}  table.csv\n".encode()
    path = _write(crate, tmp_path / ("demo.eln" if zipped else "demo"), zipped)
    assert ingest_paths([path], graph).errors == []
    found = {(r["c"], r["rule"], r["at"]) for r in rows(
        graph, "MATCH (c)-[:HAS_DEFECT]->(d:Defect)-[:LOCATED_AT]->(l:SourceLocation) "
               "RETURN c.filepath AS c, d.rule AS rule, l.path + ' ' + l.locator AS at")}
    assert found == {("sub/notes.csv", "crate.manifest", "sub/md5sums.txt L1"),
                     ("table.csv", "crate.manifest", "SHA256SUMS L2"),
                     ("sub/gone.csv", "crate.manifest.absent", "sub/md5sums.txt L3")}
    [gone] = rows(graph, "MATCH (e:Evidence {title: 'gone.csv'}) RETURN e.available AS a, e.provenance AS p")
    assert gone == {"a": False, "p": "attested"}
    resolved = graph.query("compiler/resolved_defects")
    assert {(r["how"], r["item"]) for r in resolved} == {("crate_metadata", "table.csv")}
    [rec] = audit(graph).records
    by_file = {f.file: f for f in rec.findings}
    assert [f.severity for f in rec.findings] == ["blocks use", "blocks use", "stale"]
    assert by_file["sub/notes.csv"].kind == "checksum_mismatch" and by_file["sub/notes.csv"].resolution is None
    assert by_file["sub/notes.csv"].location == "sub/md5sums.txt L1"
    assert by_file["sub/gone.csv"].kind == "described_not_held"
    assert "crate's own metadata" in (by_file["table.csv"].resolution or "")


@pytest.mark.parametrize("zipped", [True, False], ids=["zip", "folder"])
def test_a_list_line_that_climbs_out_of_the_crate_is_refused_and_nothing_outside_is_read(
        graph: Graph, tmp_path: Path, zipped: bool) -> None:
    secret = _sha(SECRET)
    crate = _crate({"table.csv": TABLE}, [_file("./table.csv", TABLE)], root="demo" if zipped else "")
    top = "demo/" if zipped else ""
    crate[f"{top}SHA256SUMS"] = (f"{secret}  ../secret.txt\n{secret}  /secret.txt\n{_sha(TABLE)}  table.csv\n"
                                 f"{secret}  sub/../../secret.txt\n").encode()
    if zipped:
        crate["secret.txt"] = SECRET  # in the zip, beside the crate root
        path = _write(crate, tmp_path / "demo.eln", zipped=True)
    else:
        path = _write(crate, tmp_path / "demo", zipped=False)
        (tmp_path / "secret.txt").write_bytes(SECRET)  # what ../secret.txt names
    report = ingest_paths([path], graph)
    assert report.errors == [] and report.records == 1
    refused = rows(graph, "MATCH (r:Record)-[:HAS_DEFECT]->(d:Defect)-[:LOCATED_AT]->(l:SourceLocation) "
                          "RETURN d.kind AS k, d.rule AS rule, l.locator AS at ORDER BY at")
    assert refused == [{"k": "id_escapes_root", "rule": "crate.manifest.escapes", "at": f"L{n}"} for n in (1, 2, 4)]
    assert len(rows(graph, "MATCH (d:Defect) RETURN d")) == 3  # table.csv's line agrees
    assert not rows(graph, "MATCH (f:File {sha256: $s}) RETURN f", s=secret)
    assert not rows(graph, "MATCH (l:SourceLocation) WHERE l.text CONTAINS 'TOPSECRET' RETURN l")
    assert not rows(graph, "MATCH (e:Evidence) WHERE e.title = 'secret.txt' RETURN e")


@pytest.mark.parametrize("zipped", [True, False], ids=["zip", "folder"])
def test_a_crate_with_no_digest_list_is_read_as_before(graph: Graph, tmp_path: Path, zipped: bool) -> None:
    """Files named like lists that hold no digest (RSpace's schemas/manifest.txt describes its export in key:value
    lines; a checksums.txt of prose) are members like any other, and nothing is read as a second statement."""
    files, entities = _patterns()
    files["schemas/manifest.txt"] = b"Database version:1.95.0\nexportDate:2023-12-08\nscope:SELECTION\n"
    files["notes/checksums.txt"] = b"checksums are published on the lab's site\n"
    members = _crate(files, entities, root="demo" if zipped else "")
    path = _write(members, tmp_path / ("demo.eln" if zipped else "demo"), zipped)
    assert ingest_paths([path], graph).errors == []
    kinds = {r["c"]: r["k"] for r in rows(graph, "MATCH (c:Component)-[:HAS_DEFECT]->(d:Defect) "
                                                 "RETURN c.filepath AS c, d.kind AS k")}
    misnamed = {"data/b.csv": "entity_path_mismatch"} if zipped else {}  # a folder cannot hold data//b.csv
    assert kinds == {"sized.csv": "size_mismatch", "hashed.csv": "checksum_mismatch", "typed.png": "media_type_mismatch",
                     "gone.csv": "described_not_held", "../secret.txt": "id_escapes_root", **misnamed,
                     "extra.csv": "undescribed_member", "schemas/manifest.txt": "undescribed_member",
                     "notes/checksums.txt": "undescribed_member"}
    assert not rows(graph, "MATCH (d:Defect) WHERE d.rule STARTS WITH 'crate.manifest' RETURN d")
    assert not rows(graph, "MATCH (:Component)-[:LOCATED_AT]->(l:SourceLocation {kind: 'line'}) RETURN l")
    assert graph.query("compiler/resolved_defects") == []


def test_a_zip_member_that_climbs_out_is_never_written_outside_the_private_folder(graph: Graph, tmp_path: Path) -> None:
    """A crate at the zip's top has every member in its root, a member named `../x` included: it is extracted
    into voe's private folder or not at all, never beside it (a zip-slip)."""
    import os
    import tempfile

    target = tmp_path / "slipped.txt"
    climbing = "../" + os.path.relpath(target, tempfile.gettempdir())
    members = _crate({"table.csv": TABLE}, [_file("./table.csv", TABLE)], root="")
    members[climbing] = SECRET
    assert ingest_paths([_write(members, tmp_path / "slip.eln", zipped=True)], graph).errors == []
    assert not target.exists()
    assert not rows(graph, "MATCH (f:File {sha256: $s}) RETURN f", s=_sha(SECRET))
def _zip(path: Path, members: dict[str, bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def test_successive_exports_record_added_removed_renamed_and_changed_files_with_the_commit_message(
        graph: Graph, tmp_path: Path) -> None:
    """Two exports of one crate (`demo@v1`, `demo@v2`), the later with a commit message that speaks only of
    metadata: a changed file, a file moved to another folder (same bytes), a removed and an added one, each on the
    later version's evidence item, located at the earlier version's entity (or its graph) and at the message."""
    one = {"keep.csv": CSV, "change.csv": b"x\n1\n", "old/move.csv": b"m\n1\n", "drop.csv": b"d\n1\n"}
    two = {"keep.csv": CSV, "change.csv": b"x\n2\n", "new/move.csv": b"m\n1\n", "add.csv": b"a\n1\n"}
    _zip(tmp_path / "exports" / "demo@v1" / "demo.eln",
         _crate(one, [_file(f"./{k}", v) for k, v in one.items()], dated="2025-01-01T00:00:00"))
    _zip(tmp_path / "exports" / "demo@v2" / "demo.eln",
         _crate(two, [_file(f"./{k}", v) for k, v in two.items()], dated="2025-02-01T00:00:00"))
    (tmp_path / "exports" / "demo@v2" / "COMMIT_MSG").write_text("Update the crate metadata (authors)\n")
    report = ingest_paths([tmp_path / "exports"], graph)
    assert report.errors == [] and report.records == 2
    found = {r["f"]: r for r in rows(graph, "MATCH (e:Evidence) WHERE e.version_status IS NOT NULL RETURN "
                                            "e.filepath AS f, e.version_status AS s, e.version_coverage AS c, "
                                            "e.version_statement AS said, e.version_from AS v, e.available AS a, "
                                            "e.record_id AS r, e.version_before_json AS before")}
    assert {f: r["s"] for f, r in found.items()} == {"change.csv": "changed", "new/move.csv": "renamed",
                                                     "drop.csv": "removed", "add.csv": "added"}
    assert all(r["r"] == "record:crate:demo@v2" and r["v"] == "v1" and r["c"] == "denied"
               and r["said"] == "Update the crate metadata (authors)" for r in found.values())
    assert found["drop.csv"]["a"] is False
    [moved] = json.loads(found["new/move.csv"]["before"])
    assert (moved["path"], moved["renamed_to"]) == ("old/move.csv", "new/move.csv")
    where = {r["f"]: {(x["path"], x["at"], x["text"]) for x in r["at"]} for r in rows(graph, (
        "MATCH (e:Evidence)-[:LOCATED_AT]->(l:SourceLocation) WHERE e.version_status IS NOT NULL RETURN "
        "e.filepath AS f, collect({path: l.path, at: coalesce(l.pointer, l.locator), text: l.text}) AS at"))}
    message = ("demo@v2/COMMIT_MSG", "L1-L1", "Update the crate metadata (authors)")
    earlier = "demo.eln!demo/ro-crate-metadata.json"
    assert {(earlier, "/@graph/4", None), message} <= where["new/move.csv"]  # old/move.csv's entity in v1
    assert {(earlier, "/@graph", None), message} <= where["add.csv"]
    assert {(earlier, "/@graph/5", None), message} <= where["drop.csv"]
