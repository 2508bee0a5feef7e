"""What a task family is: rules that turn a subject item into a decision moment, its place among the families,
and how its moments are capped. Each family is one module of this package that registers itself here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from compiler.models import Action, Family

if TYPE_CHECKING:
    from compiler.moments import Catalog


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
    facts: list[str]  # verifier-only: the graph facts the gold rests on (defect ids, the subject)
    hard_negatives: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Subject:
    """One candidate subject item and what every rule may read about it."""

    cat: Catalog
    evidence_id: str
    workflow: str
    support: list[str]
    gaps: frozenset[str]  # items the family_missing_evidence query found unacquirable

    @property
    def row(self) -> dict[str, Any]:
        return self.cat.rows[self.evidence_id]


class Skip:
    """A rule's answer for a subject that must yield no moment at all (no later rule is tried)."""


SKIP = Skip()
Match = Callable[[Subject], "Moment | Skip | None"]
# (group key, cap): moments of one key compete for `cap` places; None: never capped
CapGroup = Callable[[Moment, dict[str, Any]], "tuple[tuple[str, ...], int] | None"]


@dataclass(frozen=True)
class Rule:
    family: Family
    name: str
    rank: int  # the rules form one chain, by rank: the first that applies to a subject decides it
    match: Match


def _nothing_missing(m: Moment) -> list[str]:
    return []


@dataclass(frozen=True)
class FamilySpec:
    family: Family
    priority: int  # when two moments look the same to a policy, the family of lower priority keeps it
    cap_group: CapGroup
    doc: str
    # its moments are what clean packets are contrasted with: a workflow's capped clean submissions keep first
    # those on the same kind of file (extension, held or not) as this family's subjects, so that the file type
    # cannot tell this family's answer from a submission
    contrasted: bool = False
    # the items a localize_missing_evidence payload may name in its tasks (strict payloads); none by default
    missing: Callable[[Moment], list[str]] = _nothing_missing


_RULES: list[Rule] = []
_FAMILIES: dict[Family, FamilySpec] = {}


def family(spec: FamilySpec) -> FamilySpec:
    if spec.family in _FAMILIES:
        raise ValueError(f"family {spec.family.value} registered twice")
    _FAMILIES[spec.family] = spec
    return spec


def rule(family: Family, name: str, rank: int) -> Callable[[Match], Match]:
    def register(fn: Match) -> Match:
        if any(r.rank == rank for r in _RULES):
            raise ValueError(f"two rules at rank {rank}")
        _RULES.append(Rule(family, name, rank, fn))
        return fn
    return register


def release_group(m: Moment, row: dict[str, Any], cap: int) -> tuple[tuple[str, ...], int] | None:
    """A release's removals, renames and changes compete per workflow and status, whatever their family."""
    if row["provenance"] == "release_notes":
        return ("release", m.workflow, str(row.get("release_status"))), cap
    return None


def clean_cap(per_workflow: str) -> CapGroup:
    """The cap of a family of clean submissions: a release's items in the release group, the others per workflow
    and family, at most `compiler.moments.<per_workflow>` of them (read when capping, so it can be changed)."""

    def cap(m: Moment, row: dict[str, Any]) -> tuple[tuple[str, ...], int] | None:
        from compiler import moments

        return (release_group(m, row, moments.RELEASE_CAP)
                or (("clean", m.workflow, m.family.value), int(getattr(moments, per_workflow))))

    return cap


def submit_packet(family: Family, s: Subject) -> Moment:
    """Submit exactly the packet (the subject and its support), after pulling all of it: every item binds, is
    needed and useful."""
    packet = [s.evidence_id, *s.support]
    return Moment(family, s.workflow, s.evidence_id, s.support, packet, packet, packet, Action.SUBMIT_RISK_PACKET,
                  packet, packet, packet)
