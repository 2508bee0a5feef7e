"""The AM Bench 2022 release file summaries, read in place: one located fact per (file, release) row, and
what each release removed, renamed, added and changed, checked against the HTML's own bottom lists and
the changelogs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from voe.ingest.payloads.documents import parse_file
from voe.ingest.payloads.parsers.encoding import decode_text
from voe.ingest.payloads.parsers.release import parse_release_summary
from voe.ingest.payloads.parsers.sniff import sniff

SUMMARY = "ambench-releases/data-releases/release-file-change-summary-{}.html"
FIRST, SECOND = "1.0.0-to-2.0.0", "2.0.0-to-2.1.0"
LIST_HEADINGS = {"changed": "Files that changed between release versions:",
                 "new": "Files that are new in the latest release version:", "unchanged": "Files that remained unchanged:"}


def bottom_lists(text: str) -> dict[str, set[str]]:
    """The generator's lists, read with a regex (independently of the parser): heading -> the <li> names up
    to the next <h3>."""
    out = {}
    for key, heading in LIST_HEADINGS.items():
        section = text.split(f"<h3>{heading}</h3>", 1)[1].split("<h3>", 1)[0]
        out[key] = set(re.findall(r"<li>([^<]+)</li>", section))
    return out


@pytest.fixture(scope="module")
def summaries(archives: Path) -> dict[str, tuple[bytes, dict]]:
    out = {}
    for which in (FIRST, SECOND):
        data = (archives / SUMMARY.format(which)).read_bytes()
        out[which] = (data, bottom_lists(decode_text(data)))
    return out


def test_sniffed_and_dispatched_by_content(archives: Path, tmp_path: Path) -> None:
    path = archives / SUMMARY.format(SECOND)
    assert sniff(path, path.read_bytes()[:8192]) == "release_summary"
    parsed = parse_file(path, "data-releases/" + path.name)
    assert parsed is not None and parsed.format == "release_summary" and parsed.defects == []
    # ordinary HTML keeps the format it had: not a release summary
    page = tmp_path / "page.html"
    page.write_text("<html>\n<body>\n<h1>File Summary</h1>\n<table><tr><td>a.xml</td></tr></table>\n</body>\n</html>\n")
    assert sniff(page, page.read_bytes()) == "xml"
    doctype = tmp_path / "doc.html"
    doctype.write_text("<!DOCTYPE html>\n<html><body><h1>Release notes: 1.0 to 2.0</h1></body></html>\n")
    assert sniff(doctype, doctype.read_bytes()) == "text"
    not_html = tmp_path / "notes.txt"
    not_html.write_text("Release File Summary: 1.0.0 to 2.0.0\n")
    assert sniff(not_html, not_html.read_bytes()) == "text"


def test_rows_on_one_line_get_distinct_locators() -> None:
    html = (b"<html><body>\n<h1>Release File Summary: 1.0 to 2.0</h1>\n<table><tr><th>File Basename</th><th>Summary</th></tr>\n"
            b"<tr><td>a-b.xml</td><td><table><tr><th>Version</th></tr><tr><td>1.0</td><td>AA</td><td>10</td></tr>"
            b"<tr><td>2.0</td><td>BB</td><td>11</td></tr></table></td></tr>\n"
            b"<tr><td>Old-Name.xml</td><td><table><tr><td>1.0</td><td>cc</td><td>5</td></tr></table></td></tr>\n"
            b"<tr><td>old_name.xml</td><td><table><tr><td>2.0</td><td>dd</td><td>x</td></tr></table></td></tr>\n"
            b"</table></body></html>\n")
    assert sniff(Path("s.html"), html) == "release_summary"
    parsed = parse_release_summary(html)
    assert [(f.locator, f.name, f.extra["release"], f.value, f.extra["size"]) for f in parsed.facts] == [
        ("L4", "a-b.xml", "1.0", "aa", 10), ("L4.2", "a-b.xml", "2.0", "bb", 11),
        ("L5", "Old-Name.xml", "1.0", "cc", 5), ("L6", "old_name.xml", "2.0", "dd", None)]
    s = parsed.summary
    assert (s["removed"], s["renamed"], s["added"], s["changed"]) == ([], {"Old-Name.xml": "old_name.xml"}, [], ["a-b.xml"])


def test_one_located_fact_per_file_and_release_row(summaries: dict[str, tuple[bytes, dict]]) -> None:
    for data, _ in summaries.values():
        parsed = parse_release_summary(data)
        lines = decode_text(data).splitlines()
        locators = [f.locator for f in parsed.facts]
        assert len(locators) == len(set(locators))
        files = {f.name for f in parsed.facts}
        assert len(files) == parsed.summary["files"]
        for fact in parsed.facts:
            assert fact.kind == "html_row" and fact.locator == f"L{fact.extra['line']}"
            assert lines[fact.extra["line"] - 1].strip().startswith("<tr")
            # the row's three cells are the next three lines of the file
            cells = [re.sub(r"</?td>", "", ln.strip()) for ln in lines[fact.extra["line"] : fact.extra["line"] + 3]]
            assert cells == [fact.extra["release"], fact.value, str(fact.extra["size"])]
            assert fact.text == f"{fact.name} | {cells[0]} | {cells[1]} | {cells[2]}"
    data, _ = summaries[SECOND]
    rows = {(f.name, f.extra["release"]): f for f in parse_release_summary(data).facts}
    l7 = rows[("AMB2022-718-AMMT-B6-P2-L7.xml", "2.0.0")]
    assert l7.text == "AMB2022-718-AMMT-B6-P2-L7.xml | 2.0.0 | a0cbeedce532933cae84b7350fb624faf8d820e0 | 1234"
    assert l7.extra == {"line": 4860, "file": "AMB2022-718-AMMT-B6-P2-L7.xml", "release": "2.0.0",
                        "sha1": "a0cbeedce532933cae84b7350fb624faf8d820e0", "size": 1234}


def test_2_1_0_matches_its_changelog_and_its_own_lists(summaries: dict[str, tuple[bytes, dict]], archives: Path) -> None:
    data, listed = summaries[SECOND]
    s = parse_release_summary(data).summary
    assert (s["from"], s["to"], s["files"]) == ("2.0.0", "2.1.0", 870)
    # changelog_2.1.0.txt: L7, L8 and L9 removed, replaced by L7-L8-L9-O1; 718-SH1.xml corrected
    changelog = (archives / "ambench-releases/data-releases/changelog_2.1.0.txt").read_text()
    for name in ("AMB2022-718-AMMT-B6-P2-L7.xml", "AMB2022-718-AMMT-B6-P2-L8.xml", "AMB2022-718-AMMT-B6-P2-L9.xml"):
        assert name in s["removed"] and name in changelog
    assert "AMB2022-718-AMMT-B6-P2-L7-L8-L9-O1.xml" in s["added"]
    assert "718-SH1.xml" in s["changed"]
    # the table also drops AMB2022-718-AMMT-B8-P3-L10-W4.xml, which the changelog does not mention
    assert s["removed"] == ["AMB2022-718-AMMT-B6-P2-L7.xml", "AMB2022-718-AMMT-B6-P2-L8.xml",
                            "AMB2022-718-AMMT-B6-P2-L9.xml", "AMB2022-718-AMMT-B8-P3-L10-W4.xml"]
    assert "B8-P3-L10-W4" not in changelog
    assert s["renamed"] == {}
    assert (len(s["added"]), len(s["changed"]), s["unchanged"], s["later"]) == (377, 91, 398, 0)
    # against the HTML's bottom lists: its "new" list is every file it did not call changed, so the files it
    # lists for one release only are the new list minus the unchanged one
    assert set(s["changed"]) == listed["changed"]
    assert s["unchanged"] == len(listed["unchanged"])
    assert set(s["added"]) | set(s["removed"]) == listed["new"] - listed["unchanged"]
    assert s["listed"] == {k: len(v) for k, v in listed.items()} == {"changed": 91, "new": 779, "unchanged": 398}


def test_2_0_0_renamed_the_composition_files(summaries: dict[str, tuple[bytes, dict]], archives: Path) -> None:
    data, listed = summaries[FIRST]
    parsed = parse_release_summary(data)
    s = parsed.summary
    assert (s["from"], s["to"], s["files"], s["releases"]) == ("1.0.0", "2.0.0", 888, ["1.0.0", "2.0.0", "2.1.0"])
    # changelog_2.0.0.txt item 2: every composition identifier 'AMB2022-Composition-' / 'Composition-' became
    # 'AMB2022_Composition_' / 'Composition_'; its own example is ...-718-AMMT-B8-G1.xml
    changelog = (archives / "ambench-releases/data-releases/changelog_2.0.0.txt").read_text()
    assert "AMB2022-Composition-718-AMMT-B8-G1.xml in the previous" in changelog
    assert s["renamed"]["AMB2022-Composition-718-AMMT-B8-G1.xml"] == "AMB2022_Composition_718-AMMT-B8-G1.xml"
    old_compositions = {f.name for f in parsed.facts if re.match(r"(AMB2022-)?Composition-", f.name or "")}
    assert set(s["renamed"]) == old_compositions and len(old_compositions) == 11
    assert all(new.replace("_", "-") == old.replace("_", "-") for old, new in s["renamed"].items())
    assert not set(s["renamed"].values()) & set(s["added"])
    assert (len(s["removed"]), len(s["renamed"]), len(s["added"]), len(s["changed"])) == (7, 11, 12, 251)
    assert (s["unchanged"], s["later"]) == (216, 380)
    assert len(s["removed"]) + 2 * len(s["renamed"]) + len(s["added"]) + len(s["changed"]) + s["unchanged"] \
        + s["later"] == s["files"]
    # This table lists 2.1.0 too, and the generator's lists compare a file's whole history: "changed" is
    # every file with two different SHA-1s in any releases. It holds all our 1.0.0->2.0.0 changes, plus
    # the two files whose differing rows are not a 1.0.0/2.0.0 pair.
    assert s["listed"] == {k: len(v) for k, v in listed.items()} == {"changed": 253, "new": 635, "unchanged": 238}
    assert set(s["changed"]) <= listed["changed"]
    assert listed["changed"] - set(s["changed"]) == {
        "AMB2022-625-CBM-B2-60-X.05.xml",  # 1.0.0 and 2.1.0, not in 2.0.0: removed here
        "AMB2022-718-AMMT-B6-P2-L10-W2.xml",  # new in 2.0.0 (added here), changed in 2.1.0
    }
    assert "AMB2022-625-CBM-B2-60-X.05.xml" in s["removed"] and "AMB2022-718-AMMT-B6-P2-L10-W2.xml" in s["added"]
    # the files the lists name for one release only: the 1.0.0-only ones (removed or renamed here) and the
    # 2.1.0-only ones (after this release)
    one_release = listed["new"] - listed["unchanged"]
    assert one_release == (set(s["removed"]) - {"AMB2022-625-CBM-B2-60-X.05.xml"}) | set(s["renamed"]) | {
        f.name for f in parsed.facts if f.name not in listed["changed"] and f.extra["release"] == "2.1.0"
        and sum(1 for g in parsed.facts if g.name == f.name) == 1}
    assert len(one_release) == 6 + 11 + s["later"]
