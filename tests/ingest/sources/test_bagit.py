"""BagIt bags (ingest/sources/bagit.py): the real NIST preservation multibag of `nist-preservation-bags/` (read in
place) and bags written here with one of each pattern; a zip member outside the bag's folder is never read."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

from tests.ingest.helpers import rows
from voe.graph import Graph
from voe.ingest import ingest_paths

SECRET = b"TOPSECRET beside the bag, inside the zip\n"


def test_the_nist_multibag_is_one_record_its_members_checked(graph: Graph, archives: Path) -> None:
    report = ingest_paths([archives / "nist-preservation-bags"], graph)
    assert report.errors == [] and report.records == 1
    [rec] = rows(graph, "MATCH (r:Record) RETURN r.id AS id, r.external_identifiers AS ext")
    assert rec["id"] == "record:bag:67C783D4BA814C8EE05324570681708A1899@1"
    assert "ark:/88434/mds107pcw08s" in rec["ext"]
    members = {r["m"] for r in rows(graph, "MATCH (c:Subcollection) RETURN c.filepath AS m")}
    assert members == {"67C783D4BA814C8EE05324570681708A1899.mbag0_3-0", "67C783D4BA814C8EE05324570681708A1899.mbag0_3-1"}
    # every payload file has the digest its manifest lists; member -1 copied -0's bag-info and its Payload-Oxum
    [d] = rows(graph, "MATCH (c)-[:HAS_DEFECT]->(d:Defect) OPTIONAL MATCH (d)-[:LOCATED_AT]->(l:SourceLocation) "
                      "RETURN c.filepath AS c, d.kind AS k, l.locator AS at, l.text AS text")
    assert d == {"c": "67C783D4BA814C8EE05324570681708A1899.mbag0_3-1", "k": "payload_oxum_mismatch", "at": "L1",
                 "text": "Payload-Oxum: 456560.4"}
    held = rows(graph, "MATCH (c:DataFile {bag_role: 'payload'})-[:STORED_AS]->(f:File) RETURN c.filepath AS p, "
                       "f.sha256 AS s")
    assert {h["p"].rsplit("/", 1)[-1]: h["s"][:12] for h in held}["NMRRVocab20171102.rdf"] == "dc46c2355a6c"


def _bag(members: dict[str, bytes], oxum: str | None = None) -> dict[str, bytes]:
    payload = {k: v for k, v in members.items() if k.startswith("data/")}
    oxum = oxum or f"{sum(len(v) for v in payload.values())}.{len(payload)}"
    out = {"bagit.txt": b"BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n",
           "bag-info.txt": f"Payload-Oxum: {oxum}\nBagging-Date: 2025-01-01\n".encode(), **members}
    return out


def test_a_bag_with_every_pattern(graph: Graph, tmp_path: Path) -> None:
    good, bad = b"a,b\n1,2\n", b"x,y\n3,4\n"
    manifest = "".join(f"{hashlib.sha256(v).hexdigest()}  {k}\n" for k, v in
                       {"data/good.csv": good, "data/fetched.csv": b"elsewhere"}.items())
    manifest += f"{'0' * 64}  data/bad.csv\n{'1' * 64}  data/gone.csv\n"
    files = _bag({"data/good.csv": good, "data/bad.csv": bad, "data/extra.csv": good,
                  "manifest-sha256.txt": manifest.encode(),
                  "fetch.txt": b"https://example.org/fetched.csv 9 data/fetched.csv\n"}, oxum="999.9")
    path = tmp_path / "demo-bag.zip"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(f"demo-bag/{name}", data)
        z.writestr("outside.txt", SECRET)  # in the zip, outside the bag's folder
    (tmp_path / "demo-bag.zip.sha256").write_text("f" * 64)  # a sidecar that does not hold the zip's digest
    report = ingest_paths([tmp_path], graph)
    assert report.errors == [] and report.records == 1
    found = sorted((r["c"].split("/", 1)[-1] if "/" in r["c"] else "(bag)", r["k"]) for r in rows(
        graph, "MATCH (c)-[:HAS_DEFECT]->(d:Defect) RETURN c.filepath AS c, d.kind AS k"))
    assert found == [("(bag)", "checksum_mismatch"), ("(bag)", "id_escapes_root"), ("(bag)", "payload_oxum_mismatch"),
                     ("data/bad.csv", "checksum_mismatch"), ("data/extra.csv", "undescribed_member"),
                     ("data/gone.csv", "described_not_held")]  # fetched.csv is listed in fetch.txt: fine
    assert not rows(graph, "MATCH (f:File {sha256: $s}) RETURN f", s=hashlib.sha256(SECRET).hexdigest())
    [gone] = rows(graph, "MATCH (e:Evidence) WHERE e.title = 'gone.csv' RETURN e.available AS a, e.provenance AS p")
    assert gone == {"a": False, "p": "attested"}


def test_the_bags_nerdm_is_a_second_statement_its_manifest_resolves(graph: Graph, tmp_path: Path) -> None:
    """NIST's NERDm metadata inside the bag declares a stale digest for a file whose payload manifest line agrees
    with the bytes: a finding on the file that the archive itself resolves (the curator's report says stale)."""
    import json

    from voe.compiler.audit import audit

    data = b"a,b\n1,2\n"
    digest = hashlib.sha256(data).hexdigest()
    stale = {"filepath": "table.csv", "size": len(data), "checksum": {"hash": "9" * 64, "algorithm": {"tag": "sha256"}}}
    files = _bag({"data/table.csv": data, "manifest-sha256.txt": f"{digest}  data/table.csv\n".encode(),
                  "metadata/table.csv/nerdm.json": json.dumps(stale).encode()})
    root = tmp_path / "nerdm-bag"
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(content)
    assert ingest_paths([root], graph).errors == []
    [found] = rows(graph, "MATCH (c)-[:HAS_DEFECT]->(d:Defect) RETURN c.filepath AS c, d.rule AS rule")
    assert found == {"c": "nerdm-bag/data/table.csv", "rule": "bag.nerdm.sha256"}
    resolved = graph.query("compiler/resolved_defects")
    assert {r["how"] for r in resolved} == {"manifest"}  # one row per evidence item on its folder chain
    [rec] = audit(graph).records
    assert [f.severity for f in rec.findings] == ["stale"] and "payload manifest" in (rec.findings[0].resolution or "")
