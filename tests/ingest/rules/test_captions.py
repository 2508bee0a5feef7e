"""The Browser captions computed at ingest (issue 34, item 2): short, a location named by its place in the file,
a file by its base name, and wrapped only at spaces so the Browser draws them whole."""

from __future__ import annotations

import pytest

from voe.ingest.rules.captions import CAPTION_MAX, LINE_MAX, breakable, caption, middle, short_name, words


@pytest.mark.parametrize(("props", "expected"), [
    ({"kind": "pdf_line", "page": 3, "bbox": [72.4, 540.6, 310.0, 552.1], "locator": "p3:l7"}, "p3 (72,541)"),
    ({"kind": "pdf_table_cell", "page": 12, "bbox": [0, 10.2, 5, 20], "locator": "p12:t0:r1c2"}, "p12 (0,10)"),
    ({"kind": "cell", "sheet": "Sheet1", "cell": "B7", "locator": "Sheet1!B7"}, "Sheet1!B7"),
    ({"kind": "step_header", "line": 120, "end_line": 130, "locator": "L120-L130"}, "L120-130"),
    ({"kind": "line", "line": 9, "locator": "L9"}, "L9"),
    ({"kind": "csv_cell", "line": 12, "column": 3, "locator": "L12:C3"}, "L12:C3"),
    ({"kind": "json_pointer", "pointer": "/components/12/checksum/hash"}, "…/12/checksum/hash"),
    ({"kind": "json_pointer", "pointer": "/components/0/valid"}, "/components/0/valid"),
    ({"kind": "json_pointer", "pointer": ""}, "/"),
    ({"kind": "xml_element", "locator": "/AMBench/Sample[2]/Build/Name"}, "…/Sample[2]/Build/Name"),
    ({"kind": "file_region", "locator": "file"}, "whole file"),
])
def test_a_location_is_named_by_its_place_in_the_file(props: dict[str, object], expected: str) -> None:
    assert short_name(["SourceLocation"], props) == expected
    assert len(expected) <= CAPTION_MAX


def test_locations_of_one_file_read_apart() -> None:
    """All 37 disagreeing sidecars of mds2-4103 sit at /components/N/checksum/hash: the index stays in view."""
    shown = {short_name(["SourceLocation"], {"kind": "json_pointer", "pointer": f"/components/{i}/checksum/hash"})
             for i in range(40)}
    assert len(shown) == 40


def test_a_sheet_name_too_long_keeps_the_cell() -> None:
    name = short_name(["SourceLocation"], {"kind": "cell", "sheet": "Thermocouple readings of build 2", "cell": "AB123"})
    assert name is not None and name.endswith("!AB123") and len(name) <= CAPTION_MAX and "…" in name


def test_a_file_is_named_by_its_base_name_cut_in_the_middle() -> None:
    assert short_name(["DataFile"], {"filepath": "Cross_Sections/Tracks_Results/depths.csv"}) == "depths.csv"
    assert short_name(["Subcollection"], {"filepath": "Cross_Sections/Tracks_Results"}) == "Tracks_Results/"
    long = short_name(["ChecksumFile"], {"filepath": "a/20241015_AMB2025-06_overlap_widths_avg.csv.sha256"})
    assert long is not None and len(long) == CAPTION_MAX and long.startswith("20241015_AMB")
    assert long.endswith(".csv.sha256") and "…" in long
    # a key too long to index is kept whole in `<prop>_full`: the name comes from that
    assert short_name(["DataFile"], {"filepath": "sha256:ab", "filepath_full": "x/y/report.pdf"}) == "report.pdf"
    assert short_name(["File"], {"name": "nerdm.json", "sha256": "0" * 64}) == "nerdm.json"
    assert short_name(["HiddenComponent"], {"name": "#doi:10.18434/M32106"}) == "#doi:10.18434/M32106"


def test_a_defect_a_record_and_an_evidence_item_read_as_words() -> None:
    assert short_name(["Defect"], {"kind": "sidecar_checksum_mismatch"}) == "sidecar checksum mismatch"
    title = "AM Bench 2025 Measurement Results Data: Optical Microscopy of arrays of adjacent laser tracks"
    record = short_name(["Record"], {"title": title})
    assert record == "AM Bench 2025 Measurement…" and title.startswith(record.rstrip("…"))
    assert short_name(["Evidence"], {"title": "Cross_Sections/Tracks_Results"}) == "Tracks_Results"
    assert short_name(["Evidence"], {"title": "ReadMe"}) == "ReadMe"
    # siblings that differ at the end stay apart; a document's URL reads as its file name
    siblings = {short_name(["Evidence"], {"title": f"Scan on Bare Metal_XrayImages_{end}"})
                for end in ("Raw", "processed_captioned", "processed_wAbsorption")}
    assert len(siblings) == 3 and all(s is not None and len(s) <= 32 for s in siblings)
    url = "https://www.nist.gov/system/files/documents/2025/12/18/AMB2025-06_and-07_Challenge_Results_v2.pdf"
    assert short_name(["Evidence"], {"title": url}) == "AMB2025-06_a…ults_v2.pdf"


def test_labels_drawn_by_a_property_of_their_own_get_none() -> None:
    """The task is drawn by its question and never by anything of the verifier's side; no caption is made."""
    assert caption(["Task"], {"question": "Is it enough?", "family": "source_integrity"}) is None
    assert caption(["DecisionMoment"], {"family": "source_integrity"}) is None
    assert caption(["Workflow"], {"title": "AMB2025-06"}) is None
    assert caption(["DataFile"], {}) is None


def test_captions_wrap_only_at_spaces_and_no_line_is_longer_than_a_circle_holds() -> None:
    assert breakable("AMB2025-04-LHWDED-02-PrintTracker.xlsx") == "AMB2025-04- LHWDED-02- PrintTracker. xlsx"
    assert breakable("p3 (72,541)") == "p3 (72,541)"
    assert breakable("x" * 30) == "x" * 13 + " " + "x" * 13 + " " + "x" * 4
    for text in ("20241015_AMB….csv.sha256", "…/12/checksum/hash", "sidecar checksum mismatch"):
        shown = breakable(text)
        assert shown.replace(" ", "") == text.replace(" ", "")
        assert max(len(w) for w in shown.split(" ")) <= LINE_MAX


def test_middle_and_words_respect_the_limit() -> None:
    assert middle("short.txt") == "short.txt"
    assert len(middle("a" * 100)) == CAPTION_MAX
    assert words("one two three", 9) == "one two…"
    assert words("  spaced   out  ") == "spaced out"
