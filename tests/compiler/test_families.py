"""One module per task family (compiler/families/): every Family has its spec and its rules, in one chain."""

from __future__ import annotations

from voe import queries
from voe.artifacts.package import Family
from voe.compiler import families


def test_every_family_has_one_spec_and_a_rule_and_every_rule_is_in_the_chain_once() -> None:
    specs = {f: families.spec(f) for f in Family}
    assert set(specs) == set(Family)
    assert {r.family for r in families.rules()} == set(Family)
    assert sorted(families.rules(), key=id) == sorted(families.registered(), key=id)
    assert len({id(r) for r in families.rules()}) == len(families.rules())
    assert sorted(s.priority for s in specs.values()) == list(range(len(Family)))
    assert all(s.doc.strip() and r.gold for s in specs.values() for r in families.rules())


def test_the_chain_is_the_documented_order() -> None:
    assert [(r.family.value, r.name) for r in families.rules()] == [
        ("missing_evidence", "removed"), ("missing_evidence", "calibration_named"), ("packet_submission", "renamed"),
        ("packet_submission", "replaced"), ("source_integrity", "defective"), ("packet_escalation", "defective_support"),
        ("packet_escalation", "calibration_claimed"), ("packet_escalation", "unstated_change"),
        ("packet_escalation", "version_unstated"), ("packet_escalation", "dates_backwards"),
        ("packet_escalation", "material_conflict"), ("calibration_sufficiency", "calibrated"),
        ("packet_submission", "resolved"), ("packet_submission", "corrected"), ("packet_submission", "version_stated"),
        ("packet_submission", "clean")]
    assert families.priority_order()[0] == Family.SOURCE_INTEGRITY


def test_a_family_names_the_query_it_needs_in_its_spec() -> None:
    named = {s.family: s.query for s in families.specs() if s.query}
    assert named == {Family.MISSING_EVIDENCE: "compiler/family_missing_evidence"}
    for q in named.values():
        assert queries.load(q).strip()


def test_a_rule_registered_twice_is_refused() -> None:
    from voe.compiler.families.base import rule

    try:
        rule(Family.PACKET_SUBMISSION, "clean", gold="x", why="y")(lambda s: None)
    except ValueError as exc:
        assert "registered twice" in str(exc)
    else:
        raise AssertionError("a second rule of the same family and name was accepted")
