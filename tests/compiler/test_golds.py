"""The golds a curator signs (issue 29): one table generated from the rules, kept current, and the rules it
states as they behave on real inputs."""

from __future__ import annotations

from pathlib import Path

from voe.compiler import golds
from voe.ingest.payloads.documents import parse_file
from voe.ingest.rules.defects import GOLDS, Decision, DefectKind, decision
from voe.ingest.rules.media_types import mismatch, unusual
from voe.ingest.sources.releases import ParsedFile, _states_prefix_rename, changelog_items, changelog_release


def test_docs_golds_md_is_generated_from_the_current_rules() -> None:
    assert golds.main(["--check"]) == 0, "docs/golds.md is stale: run python -m voe.compiler.golds"
    text = golds.DOC.read_text()
    assert all(f"`{k.value}`" in text for k in DefectKind)  # a row per defect kind
    assert "`corrected`" in text and "`renamed`" in text and "`calibrated`" in text  # a row per family rule


def test_every_defect_kind_has_a_decision_and_a_reason() -> None:
    assert set(GOLDS) == set(DefectKind) and all(g.why.strip() for g in GOLDS.values())
    assert decision("sidecar_marked_invalid") is Decision.FLAG
    assert decision("sidecar_target_missing") is Decision.LOCALIZE
    assert decision("unparseable_file") is Decision.UNDECIDED and decision("no_such_kind") is Decision.UNDECIDED


def test_a_platform_alias_is_no_defect_and_a_placeholder_type_is() -> None:
    for alias in ("application/vnd.ms-excel", "text/plain", "text/csv"):
        assert mismatch("results/a.csv", alias) is None, alias
    assert unusual("results/a.csv", "application/vnd.ms-excel") and not unusual("results/a.csv", "text/csv")
    assert "reserved example type" in (mismatch("Spot on Bare Metal_Xray with Absorption.avi", "video/example") or "")
    assert mismatch("x.dat", "example/whatever") is not None  # RFC 4735 reserves the whole top-level type
    assert mismatch("image.jpg", "text/csv") is not None  # a type of another format misidentifies the file


def test_a_rename_is_stated_only_by_a_changelog_item_that_maps_the_old_name(archives: Path) -> None:
    path = archives / "ambench-releases" / "data-releases" / "changelog_2.0.0.txt"
    parsed = parse_file(path, "data-releases/changelog_2.0.0.txt")
    assert parsed is not None
    items = changelog_items(parsed.facts)
    assert changelog_release(ParsedFile("data-releases/changelog_2.0.0.txt", parsed, None)) == "2.0.0"  # type: ignore[arg-type]
    # item 2: "Replaced the prefixes 'AMB2022-Composition-' and 'Composition-' by 'AMB2022_Composition_' and
    # 'Composition_', respectively": it states this rename, and no other item does
    stating = [i for i, item in enumerate(items)
               if _states_prefix_rename(item, "Composition-AA5182-D1.xml", "Composition_AA5182-D1.xml")]
    assert len(stating) == 1 and "Changed the measurement identifiers" in items[stating[0]][0].text
    assert not any(_states_prefix_rename(item, "NIST_Bench-1.xml", "NIST_Bench_1.xml") for item in items)


def test_every_rule_of_the_chain_has_the_curators_reason_in_the_table() -> None:
    from voe.compiler import families

    text = golds.DOC.read_text()
    for r in families.rules():
        assert len(r.why) > 40 and " ".join(r.why.split()).replace("|", "\\|") in text, r.name
