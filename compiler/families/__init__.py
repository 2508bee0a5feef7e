"""Task families, one module each (sqlglot-dialect style: a module registers its rules and its spec on import).

A family module defines one or more rules (`@rule(family, name, rank)`: subject -> Moment, SKIP or None; the
rules of every family form one chain by rank, the first that applies decides a subject), and one FamilySpec
(its priority when two moments look alike, its cap group). Adding a family: a value in voe.artifacts.package.Family,
a module here listed in MODULES, and a query file under cypher/compiler/ when its moments rest on a graph fact
the evidence catalog does not carry (the module names it as QUERY). tests/compiler/test_families.py checks that
every Family has exactly one spec and at least one rule.
"""

from __future__ import annotations

import importlib

from voe.artifacts.package import Family
from voe.compiler.families.base import _FAMILIES, _RULES, SKIP, FamilySpec, Moment, Rule, Skip, Subject

MODULES = ("missing_evidence", "packet_submission", "source_integrity", "packet_escalation",
           "calibration_sufficiency")

for _name in MODULES:
    importlib.import_module(f"voe.compiler.families.{_name}")


def rules() -> list[Rule]:
    """The chain, by rank."""
    return sorted(_RULES, key=lambda r: r.rank)


def spec(family: Family) -> FamilySpec:
    return _FAMILIES[family]


def priority_order() -> list[Family]:
    """Families in priority order: when two moments look the same to a policy, the earlier family keeps it."""
    return [s.family for s in sorted(_FAMILIES.values(), key=lambda s: s.priority)]


__all__ = ["SKIP", "FamilySpec", "Moment", "Rule", "Skip", "Subject", "priority_order", "rules", "spec"]
