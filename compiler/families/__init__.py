"""Task families, one module each (sqlglot-dialect style: a module registers its rules and its spec on import).

A family module defines its rules (`@rule(family, name, gold=...)`: subject -> Moment, SKIP or None) and one
FamilySpec (its priority when two moments look alike, the items a localize may name, the query whose rows its
rules read). CHAIN below is the one place the rules are ordered: every packet goes down it and the first rule
that applies decides the packet. Adding a family: a value in voe.artifacts.package.Family, a module here, its
rules in CHAIN, and a query file under cypher/compiler/ when its moments rest on a graph fact the evidence
catalog does not carry (named as its spec's `query`). tests/compiler/test_families.py checks that every Family
has exactly one spec and every registered rule is in CHAIN once; docs/golds.md's tables of families and rules
are generated from the specs and CHAIN (python -m voe.compiler.golds).
"""

from __future__ import annotations

from voe.artifacts.package import Family
from voe.compiler.families import (
    calibration_sufficiency,
    missing_evidence,
    packet_escalation,
    packet_submission,
    source_integrity,
)
from voe.compiler.families.base import _FAMILIES, _RULES, SKIP, FamilySpec, Moment, Rule, Skip, Subject

CHAIN: tuple[Rule, ...] = (
    missing_evidence.removed,  # a gap decides before anything else: the item cannot be had
    missing_evidence.calibration_named,  # ... and so does a calibration the archive names and lacks
    packet_submission.renamed,  # a stated rename: the name is gone, the content is not
    packet_submission.replaced,  # a stated replacement: the file is gone, its successor is named
    source_integrity.defective,
    packet_escalation.defective_support,
    packet_escalation.calibration_claimed,
    packet_escalation.unstated_change_rule,
    packet_escalation.version_unstated,
    packet_escalation.dates_backwards,
    packet_escalation.conflicting_material,
    calibration_sufficiency.calibrated,
    packet_submission.resolved,  # a stale checksum file a valid copy resolves: no defect of the item
    packet_submission.corrected,
    packet_submission.version_stated,
    packet_submission.clean,
)


def rules() -> list[Rule]:
    """The chain, in order."""
    return list(CHAIN)


def registered() -> list[Rule]:
    """Every rule a family module registered (CHAIN must hold each once)."""
    return list(_RULES.values())


def spec(family: Family) -> FamilySpec:
    return _FAMILIES[family]


def specs() -> list[FamilySpec]:
    """Every family's spec, in priority order."""
    return sorted(_FAMILIES.values(), key=lambda s: s.priority)


def priority_order() -> list[Family]:
    """Families in priority order: when two moments look the same to a policy, the earlier family keeps it."""
    return [s.family for s in specs()]


__all__ = ["CHAIN", "SKIP", "FamilySpec", "Moment", "Rule", "Skip", "Subject", "priority_order", "registered",
           "rules", "spec", "specs"]
