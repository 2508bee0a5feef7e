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
