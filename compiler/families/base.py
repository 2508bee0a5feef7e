"""What a task family is: rules that turn a subject packet into a decision moment, its place among the
families, and whether its moments are clean submissions. Each family is one module of this package that
registers itself here."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from voe.artifacts.package import Action, Family

if TYPE_CHECKING:
    from voe.compiler.catalog import Catalog

# What a packet rests on besides its subject: nothing, the workflow's readme (or a release's changelog), or
# the calibration the archive names for the subject's measurement (with the readme when there is one).
Shape = Literal["alone", "document", "calibration"]


@dataclass
class Moment:
    family: Family
    workflow: str
    subject: str  # the subject item's evidence id
    support: list[str]
    binding: list[str]  # what the menu must offer
    needed: list[str]
    useful: list[str]
    reference_class: Action
    reference_payload: list[str]
    pull: list[str]
    facts: list[str]  # verifier-only: the graph facts the gold rests on (defect ids, the subject, a statement)
    gold_facts: list[str] = field(default_factory=list)  # the independent facts the gold rests on (DESIGN §7)
    shape: Shape = "document"
    calibrators: list[str] = field(default_factory=list)  # the calibration the question leaves to the agent


@dataclass(frozen=True)
class Subject:
    """One candidate packet (a subject item with one support) and what every rule may read about it."""

    cat: Catalog
    evidence_id: str
    workflow: str
    support: list[str]
    # per family with a query (FamilySpec.query): the catalog items its rows name (missing_evidence: the gaps)
    found: Mapping[Family, frozenset[str]]
    shape: Shape = "document"
    calibrators: tuple[str, ...] = ()

    @property
    def row(self) -> dict[str, Any]:
        return self.cat.rows[self.evidence_id]


class Skip:
    """A rule's answer for a subject that must yield no moment at all (no later rule is tried)."""


SKIP = Skip()
Match = Callable[[Subject], "Moment | Skip | None"]


@dataclass(frozen=True)
class Rule:
    """One link of the chain (compiler/families/__init__.py CHAIN): the first rule that applies to a subject
    decides it. `gold` says, for the table of golds, what the verifier then accepts."""

    family: Family
    name: str
    match: Match
    gold: str
    doc: str = ""
    why: str = ""  # the curator's reason: why this decision follows from these facts

    def __call__(self, s: Subject) -> Moment | Skip | None:
        return self.match(s)


def _nothing_missing(m: Moment) -> list[str]:
    return []


@dataclass(frozen=True)
class FamilySpec:
    family: Family
    priority: int  # when two moments look the same to a policy, the family of lower priority keeps it
    doc: str
    # the items a localize_missing_evidence payload may name in its tasks (strict payloads); none by default
    missing: Callable[[Moment], list[str]] = _nothing_missing
    # a query file (cypher/compiler/...) whose rows' `evidence_id` are the items this family's rules look for,
    # run once per compile: its rules read them as Subject.found[family]
    query: str | None = None


_RULES: dict[tuple[Family, str], Rule] = {}
_FAMILIES: dict[Family, FamilySpec] = {}


def family(spec: FamilySpec) -> FamilySpec:
    if spec.family in _FAMILIES:
        raise ValueError(f"family {spec.family.value} registered twice")
    _FAMILIES[spec.family] = spec
    return spec


def rule(family: Family, name: str, gold: str, why: str) -> Callable[[Match], Rule]:
    """Register a rule with the curator's reason for it (docs/golds.md); its place in the chain is CHAIN's
    (compiler/families/__init__.py)."""
    def register(fn: Match) -> Rule:
        if (family, name) in _RULES:
            raise ValueError(f"rule {family.value}/{name} registered twice")
        _RULES[(family, name)] = Rule(family, name, fn, gold, (fn.__doc__ or "").strip(), why)
        return _RULES[(family, name)]
    return register


def submit_packet(family: Family, s: Subject, facts: list[str] | None = None, gold: list[str] | None = None,
                  also_needed: list[str] | None = None) -> Moment:
    """Submit exactly the packet (the subject, its support and the calibration it names), after pulling all
    of it: every item binds, is needed and useful. Its gold rests on the subject being clean (`gold`: the
    independent facts it rests on instead). `also_needed`: items the decision must read without submitting them
    (the copy that resolves a stale checksum file)."""
    packet = [s.evidence_id, *s.support, *s.calibrators]
    extra = [x for x in also_needed or [] if x not in packet]
    return Moment(family, s.workflow, s.evidence_id, list(s.support), packet + extra, packet + extra,
                  packet + extra, Action.SUBMIT_RISK_PACKET, packet, packet + extra,
                  facts or [f"clean:{s.evidence_id}"], gold_facts=gold or facts or [f"clean:{s.evidence_id}"],
                  shape=s.shape, calibrators=list(s.calibrators))
