"""What a readme says that its record contradicts (ingest/rules/readmes.py), as rules and on an ingested record."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.ingest.helpers import rows
from voe.graph import Graph
from voe.ingest import ingest_paths
from voe.ingest.rules.readmes import read

OWN = ["ark:/88434/mds2-8888", "mds2-8888", "doi:10.18434/mds2-8888"]
FILES = ["a_data.csv", "b.csv", "c.csv", "Results.CSV", "notes/e.txt"]


def test_another_records_identifier_a_renamed_file_and_an_absent_one() -> None:
    lines = [(1, "Please cite this dataset as doi:10.18434/mds2-9999"), (2, "Files: a_data.csv, b.csv, c.csv"),
             (3, "results.csv holds the results"), (4, "Related: https://doi.org/10.18434/mds2-1234"),
             (5, "gone.csv is the last table"), (6, "This record, ark:/88434/mds2-8888, and doi:10.18434/mds2-8888")]
    found = [(f.rule, f.line) for f in read(lines, OWN, ["https://doi.org/10.18434/mds2-1234"], FILES)]
    assert found == [("nerdm.readme.identifier", 1), ("nerdm.readme.filename", 3), ("nerdm.readme.absent", 5)]


def test_a_readme_that_lists_no_files_names_no_absent_one() -> None:
    lines = [(1, "The script plot.csv is in another record."), (2, "See b.csv for the values.")]
    assert read(lines, OWN, [], FILES) == []  # one of the record's names: it is no listing of the record's files


def test_an_ingested_readme_finding_is_on_the_readme_at_its_line(graph: Graph, tmp_path: Path) -> None:
    folder = tmp_path / "mds2-8888"
    folder.mkdir()
    readme = b"Data set mds2-8888\nCite as doi:10.18434/mds2-7777\nFiles: x.csv, y.csv, z.csv, w.csv\n"
    (folder / "README.txt").write_bytes(readme)
    comps = [{"@id": "cmps/README.txt", "@type": ["nrdp:DataFile"], "filepath": "README.txt", "mediaType": "text/plain",
              "size": len(readme), "checksum": {"hash": hashlib.sha256(readme).hexdigest(), "algorithm": {"tag": "sha256"}}}]
    comps += [{"@id": f"cmps/{n}", "@type": ["nrdp:DataFile"], "filepath": n, "mediaType": "text/csv", "size": 1,
               "checksum": {"hash": "0" * 64, "algorithm": {"tag": "sha256"}}} for n in ("x.csv", "y.csv", "z.csv")]
    (folder / "nerdm.json").write_text(json.dumps({
        "@id": "ark:/88434/mds2-8888", "_schema": "https://data.nist.gov/od/dm/nerdm-schema/v0.7#",
        "@type": ["nrdp:PublicDataResource"], "title": "Readme test", "version": "1.0.0", "components": comps}))
    assert ingest_paths([folder], graph, validate_schema=False).errors == []
    found = rows(graph, "MATCH (c:Component {filepath: 'README.txt'})-[:HAS_DEFECT]->(d:Defect)-[:LOCATED_AT]->(l) "
                        "RETURN d.kind AS k, l.locator AS at ORDER BY at")
    assert found == [{"k": "readme_cites_other_record", "at": "L2"}, {"k": "readme_names_absent_file", "at": "L3"}]
