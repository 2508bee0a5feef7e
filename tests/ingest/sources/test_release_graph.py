"""The real AM Bench 2022 release notes (`ambench-releases/`, read in place) become located, dated archive
facts: an Evidence per file a release removed, renamed or changed, located at its summary rows and at the
changelog lines that name it; re-ingesting changes nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from tests.ingest.helpers import rows
from tests.ingest.payloads.parsers.test_release import bottom_lists
from voe.graph import Graph
from voe.ingest import ingest_paths
from voe.ingest.payloads.parsers.encoding import decode_text

SUMMARIES = {"1.0.0-to-2.0.0": "data-releases/release-file-change-summary-1.0.0-to-2.0.0.html",
             "2.0.0-to-2.1.0": "data-releases/release-file-change-summary-2.0.0-to-2.1.0.html"}
CHANGELOG_2_0 = "data-releases/changelog_2.0.0.txt"
CHANGELOG_2_1 = "data-releases/changelog_2.1.0.txt"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _release_evidence(graph: Graph) -> dict[tuple[str, str], dict[str, Any]]:
    """(summary relpath, basename) -> the Evidence's properties and where it is located."""
    out = {}
    for r in rows(graph, "MATCH (e:Evidence {provenance: 'release_notes'}) "
                         "OPTIONAL MATCH (e)-[:LOCATED_AT]->(l:SourceLocation)-[:IN_FILE]->(f:File) "
                         "OPTIONAL MATCH (e)-[:EVIDENCED_BY]->(c) "
                         "RETURN properties(e) AS e, count(c) AS components, "
                         "collect({kind: l.kind, locator: l.locator, sha: f.sha256, text: l.text, line: l.line}) AS locs"):
        out[(r["e"]["listed_in"], r["e"]["title"])] = {**r["e"], "components": r["components"], "locs": r["locs"]}
    return out


def _changelog_lines(locs: list[dict[str, Any]], path: Path) -> set[str]:
    sha = _sha(path)
    return {loc["locator"] for loc in locs if loc["kind"] == "line" and loc["sha"] == sha}


def test_release_notes_become_located_evidence(graph: Graph, archives: Path) -> None:
    root = archives / "ambench-releases"
    report = ingest_paths([root], graph)
    assert report.errors == [] and report.formats["release_summary"] == 2
    ev = _release_evidence(graph)
    s21, s20 = SUMMARIES["2.0.0-to-2.1.0"], SUMMARIES["1.0.0-to-2.0.0"]
    html21 = decode_text((root / s21).read_bytes()).splitlines()
    changelog21 = decode_text((root / CHANGELOG_2_1).read_bytes()).splitlines()

    # 2.1.0 removed L7, L8 and L9, as item 2 of its changelog states: unavailable, located at their one html_row
    # and at the lines of that item (L5-L10), which names each of them
    for specimen in ("L7", "L8", "L9"):
        name = f"AMB2022-718-AMMT-B6-P2-{specimen}.xml"
        e = ev[(s21, name)]
        assert (e["release_status"], e["available"], e["held"], e["release_from"], e["release_to"]) == (
            "removed", False, False, "2.0.0", "2.1.0")
        assert e["releases"] == ["2.0.0"] and e["components"] == 0 and e["release_stated"] is True
        assert e["id"] == f"ev:folder:ambench-releases@unversioned/{s21}#{name}"
        html_rows = [loc for loc in e["locs"] if loc["kind"] == "html_row"]
        assert len(html_rows) == 1 and html_rows[0]["sha"] == _sha(root / s21)
        assert html21[html_rows[0]["line"] - 1].strip() == "<tr>" and html_rows[0]["locator"] == f"L{html_rows[0]['line']}"
        assert html_rows[0]["text"].startswith(f"{name} | 2.0.0 | ")
        assert _changelog_lines(e["locs"], root / CHANGELOG_2_1) == {f"L{n}" for n in range(5, 11)}
        item = sorted((loc for loc in e["locs"] if loc["kind"] == "line" and loc["sha"] == _sha(root / CHANGELOG_2_1)),
                      key=lambda loc: loc["line"])
        assert all(changelog21[loc["line"] - 1] == loc["text"] for loc in item)
        assert item[0]["text"].lstrip().startswith("2.") and f"B6-P2-{specimen}.xml'" in " ".join(
            loc["text"] for loc in item)
    # the table drops a fourth file the changelog does not name: only its row locates it
    w4 = ev[(s21, "AMB2022-718-AMMT-B8-P3-L10-W4.xml")]
    assert w4["release_status"] == "removed" and {loc["kind"] for loc in w4["locs"]} == {"html_row"}
    assert w4["release_stated"] is False  # no gold rests on it

    # 2.1.0 corrected 718-SH1.xml: changed, in the release, rows of both releases and the changelog lines
    sh1 = ev[(s21, "718-SH1.xml")]
    assert (sh1["release_status"], sh1["available"], sh1["held"]) == ("changed", True, False)
    assert (sh1["sha1"], sh1["size"], sh1["releases"]) == ("eb4737b1db73d4aa6fc974ba389704caf3ffecda", 660,
                                                           ["2.0.0", "2.1.0"])
    assert len([loc for loc in sh1["locs"] if loc["kind"] == "html_row"]) == 2
    assert _changelog_lines(sh1["locs"], root / CHANGELOG_2_1) == {"L11", "L12"} and sh1["release_stated"] is True
    # the 2.0.0 changelog names the file too (item 1b), but for another release: not a statement of this change
    assert _changelog_lines(sh1["locs"], root / CHANGELOG_2_0) == set()

    # 2.0.0 renamed the composition files: the old name points to the new one, and back
    old, new = "AMB2022-Composition-718-AMMT-B8-G1.xml", "AMB2022_Composition_718-AMMT-B8-G1.xml"
    renamed, target = ev[(s20, old)], ev[(s20, new)]
    assert (renamed["release_status"], renamed["renamed_to"], renamed["available"]) == ("renamed", new, False)
    assert (target["release_status"], target["renamed_from"], target["available"], target["held"]) == (
        "rename_target", old, True, False)
    assert renamed["releases"] == ["1.0.0"] and target["releases"] == ["2.0.0", "2.1.0"]
    # item 2 of the 2.0.0 changelog states the prefix replacement (L18-L24): both names are located at it
    item2 = {f"L{n}" for n in range(18, 25)}
    assert _changelog_lines(renamed["locs"], root / CHANGELOG_2_0) == item2 and renamed["release_stated"] is True
    assert _changelog_lines(target["locs"], root / CHANGELOG_2_0) == item2 and target["release_stated"] is True

    # counts per summary: the graph's statuses, the parser's summary on the File, and the HTML's own lists
    files = {r["name"]: json.loads(r["s"]) for r in rows(
        graph, "MATCH (f:File {format: 'release_summary'}) RETURN f.name AS name, f.summary_json AS s")}
    counts = {}
    for key, rel in SUMMARIES.items():
        summary = files[Path(rel).name]
        listed = bottom_lists(decode_text((root / rel).read_bytes()))
        by_status: dict[str, set[str]] = {}
        for (listed_in, name), e in ev.items():
            if listed_in == rel:
                by_status.setdefault(e["release_status"], set()).add(name)
        assert by_status.get("removed", set()) == set(summary["removed"])
        assert by_status.get("renamed", set()) == set(summary["renamed"])
        assert by_status.get("rename_target", set()) == set(summary["renamed"].values())
        assert by_status["changed"] == set(summary["changed"])
        counts[key] = {"removed": len(summary["removed"]), "renamed": len(summary["renamed"]),
                       "added": len(summary["added"]), "changed": len(by_status["changed"])}
        assert summary["listed"] == {k: len(v) for k, v in listed.items()}
        if key == "2.0.0-to-2.1.0":
            assert by_status["changed"] == listed["changed"]
            assert by_status["removed"] | set(summary["added"]) == listed["new"] - listed["unchanged"]
        else:  # its lists compare the whole history 1.0.0 / 2.0.0 / 2.1.0 (tests/ingest/payloads/parsers/test_release.py)
            assert listed["changed"] - by_status["changed"] == {"AMB2022-625-CBM-B2-60-X.05.xml",
                                                                "AMB2022-718-AMMT-B6-P2-L10-W2.xml"}
    assert counts == {"1.0.0-to-2.0.0": {"removed": 7, "renamed": 11, "added": 12, "changed": 251},
                      "2.0.0-to-2.1.0": {"removed": 4, "renamed": 0, "added": 377, "changed": 91}}
    assert len(ev) == 7 + 2 * 11 + 251 + 4 + 91 + 1  # and the one replacement a changelog item names (L7-L8-L9-O1)
    # 2.0.0 removed X.05, and 2.1.0 holds it again: available; L7 changed in 2.0.0, gone in 2.1.0: not
    assert ev[(s20, "AMB2022-625-CBM-B2-60-X.05.xml")]["available"] is True
    assert ev[(s20, "AMB2022-718-AMMT-B6-P2-L7.xml")]["available"] is False
    assert all(e["current_release"] == "2.1.0" and e["components"] == 0 for e in ev.values())

    # every node the record wrote carries its ownership and stamp; re-ingesting is a no-op
    stamp = rows(graph, "MATCH (r:Record {ark: 'folder:ambench-releases'}) RETURN r.ingest_stamp AS s")[0]["s"]
    assert rows(graph, "MATCH (e:Evidence) WHERE e.record_id IS NULL OR e.ingest_stamp <> $s RETURN count(e) AS n",
                s=stamp)[0]["n"] == 0
    assert rows(graph, "MATCH (:Evidence {provenance: 'release_notes'})-[l:LOCATED_AT]->() "
                       "WHERE l.ingest_stamp <> $s RETURN count(l) AS n", s=stamp)[0]["n"] == 0
    before = graph.counts()
    props_before = rows(graph, "MATCH (n) RETURN n.id AS id, properties(n) AS p ORDER BY id")
    again = ingest_paths([root], graph)
    assert again.errors == []
    assert again.graph == {"nodes_created": 0, "relationships_created": 0, "nodes_deleted": 0, "relationships_deleted": 0}
    assert graph.counts() == before
    assert rows(graph, "MATCH (n) RETURN n.id AS id, properties(n) AS p ORDER BY id") == props_before


def test_a_removal_names_its_replacement_and_a_change_its_coverage(graph: Graph, archives: Path) -> None:
    """Item 2 of the 2.1.0 changelog removes L7, L8 and L9 and uploads L7-L8-L9-O1: the removed files name their
    replacement, which is an Evidence of its own located at the same item; every changed file says what covers it
    (an item that names it, an item about the whole release such as 2.0.0's schema change, or nothing) and by how
    many bytes its size changed."""
    assert ingest_paths([archives / "ambench-releases"], graph).errors == []
    ev = _release_evidence(graph)
    s21, s20 = SUMMARIES["2.0.0-to-2.1.0"], SUMMARIES["1.0.0-to-2.0.0"]
    merged = "AMB2022-718-AMMT-B6-P2-L7-L8-L9-O1.xml"
    for specimen in ("L7", "L8", "L9"):
        assert ev[(s21, f"AMB2022-718-AMMT-B6-P2-{specimen}.xml")]["replaced_by"] == merged
    replacement = ev[(s21, merged)]
    assert (replacement["release_status"], replacement["available"], replacement["replaces"]) == (
        "replacement", True, "AMB2022-718-AMMT-B6-P2-L7.xml")
    assert _changelog_lines(replacement["locs"], archives / "ambench-releases" / CHANGELOG_2_1) >= {"L5", "L6"}
    assert "replaced_by" not in ev[(s21, "AMB2022-718-AMMT-B8-P3-L10-W4.xml")]  # removed, no statement at all
    changed21 = [e for (s, _), e in ev.items() if s == s21 and e["release_status"] == "changed"]
    assert {e["release_coverage"] for e in changed21} == {"named", "none"}
    assert [e["title"] for e in changed21 if e["release_coverage"] == "named"] == ["718-SH1.xml"]
    deltas = [e["release_size_delta"] for e in changed21 if e["release_coverage"] == "none"]
    assert deltas.count(-1) == 85 and len(deltas) == 90  # one batch of one-byte edits, and five other changes
    changed20 = [e for (s, _), e in ev.items() if s == s20 and e["release_status"] == "changed"]
    assert {e["release_coverage"] for e in changed20} == {"named", "blanket"}  # item 1: the schema changed
