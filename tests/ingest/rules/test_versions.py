"""Two versions compared item by item (ingest/rules/versions.py): a rename needs the same digest (and size where
both give one), pairs by file name first, and is never also a removal and an addition; what a statement covers."""

from __future__ import annotations

from voe.ingest.rules.versions import compare, coverage, span_coverage, status_of


def test_a_rename_is_the_same_bytes_under_another_path() -> None:
    before = {"a.csv": ("AA", 10), "b.csv": ("bb", 10), "c.csv": ("cc", 10), "d.csv": (None, 10), "e.csv": ("ee", 5)}
    after = {"a.csv": ("aa", 10), "x/b.csv": ("bb", 10), "d2.csv": (None, 10), "e2.csv": ("ee", 6), "f.csv": ("ff", 1)}
    found = compare(before, after)
    assert found.changed == []  # a digest compared without regard to case
    assert found.renamed == [("b.csv", "x/b.csv")]
    # no digest: two files of one size are not one file; another size: not the same bytes
    assert found.removed == ["c.csv", "d.csv", "e.csv"]
    assert found.added == ["d2.csv", "e2.csv", "f.csv"]


def test_a_changed_digest_or_size_at_one_path_is_a_change() -> None:
    found = compare({"a": ("11", 1), "b": ("22", 2), "c": (None, 3)}, {"a": ("12", 1), "b": ("22", 3), "c": ("33", 3)})
    assert found.changed == ["a", "b"] and not (found.renamed or found.removed or found.added)


def test_files_that_share_their_bytes_pair_by_name_first() -> None:
    before = {"one/data.csv": ("dd", 4), "two/other.csv": ("dd", 4)}
    after = {"new/other.csv": ("dd", 4), "new/data.csv": ("dd", 4), "new/third.csv": ("dd", 4)}
    found = compare(before, after)
    assert found.renamed == [("one/data.csv", "new/data.csv"), ("two/other.csv", "new/other.csv")]
    assert found.added == ["new/third.csv"] and found.removed == []


def test_what_a_statement_covers() -> None:
    assert [coverage(s) for s in ("data update", "added new files", "metadata update", "added keywords",
                                  "added to Forensics Science Theme", None)] == [
        "stated", "stated", "denied", "denied", "none", "none"]
    assert span_coverage(["metadata update", "data update"]) == "stated"
    assert span_coverage(["metadata update", None]) == "none"
    assert status_of(["added", "added"]) == "added" and status_of(["removed"]) == "changed"
    assert status_of(["renamed", "added"]) == "changed"
