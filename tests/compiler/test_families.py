"""One module per task family (compiler/families/): every Family has its spec and its rules, in one chain."""

from __future__ import annotations

import importlib

from voe import queries
from voe.artifacts.package import Family
from voe.compiler import families
from voe.compiler.families import MODULES


def test_every_family_has_one_spec_and_a_rule_and_nothing_else_registers() -> None:
    specs = {f: families.spec(f) for f in Family}
    assert set(specs) == set(Family)
    ruled = {r.family for r in families.rules()}
    assert ruled == set(Family)
    ranks = [r.rank for r in families.rules()]
    assert ranks == sorted(set(ranks))
    assert sorted(s.priority for s in specs.values()) == list(range(len(Family)))
    assert all(s.doc.strip() for s in specs.values())


def test_the_chain_is_the_documented_order() -> None:
    assert [(r.family.value, r.name) for r in families.rules()] == [
        ("missing_evidence", "removed"), ("packet_submission", "renamed"), ("source_integrity", "defective"),
        ("packet_escalation", "defective_support"), ("calibration_sufficiency", "calibrated"),
        ("packet_submission", "corrected"), ("packet_submission", "clean")]
    assert families.priority_order()[0] == Family.SOURCE_INTEGRITY


def test_a_family_module_names_the_query_file_it_needs() -> None:
    named = [getattr(importlib.import_module(f"voe.compiler.families.{m}"), "QUERY", None) for m in MODULES]
    assert {q for q in named if q} == {"compiler/family_missing_evidence", "compiler/family_source_integrity"}
    for q in filter(None, named):
        assert queries.load(q).strip()
