"""packet_escalation: the packet cannot be completed as stated, and nothing in the archive resolves it:
abstain_or_escalate, after pulling what shows it. An item the packet must rest on has a defect nothing resolves;
a measurement's calibration is only claimed ("calibrated 2021-02-03"), with no record of it in the archive; a
document changed between releases and no changelog item says so (one batch edit is one fact); the item's own
description names another material than its record (the sources conflict: which one holds is the author's to
say)."""

from __future__ import annotations

from voe.artifacts.package import Action, Family
from voe.compiler.catalog import material_conflict, unstated_change
from voe.compiler.families.base import FamilySpec, Moment, Skip, Subject, family, rule


def _escalate(s: Subject, needed: list[str], facts: list[str], gold: list[str]) -> Moment:
    binding = [s.evidence_id, *s.support, *s.calibrators]
    return Moment(Family.PACKET_ESCALATION, s.workflow, s.evidence_id, s.support, binding,
                  list(dict.fromkeys(needed)), binding, Action.ABSTAIN_OR_ESCALATE, [], binding, facts, gold,
                  shape=s.shape, calibrators=list(s.calibrators))


@rule(Family.PACKET_ESCALATION, "defective_support", gold="abstain_or_escalate")
def defective_support(s: Subject) -> Moment | Skip | None:
    """A support item has a defect: the packet cannot be completed as stated."""
    bad = [x for x in [*s.support, *s.calibrators] if s.cat.own_defects.get(x)]
    if not bad:
        return None
    return _escalate(s, [s.evidence_id, *bad], [d for x in bad for d in s.cat.own_defects[x]],
                     [s.cat.defect_fact(x) for x in bad])


@rule(Family.PACKET_ESCALATION, "calibration_claimed", gold="abstain_or_escalate")
def calibration_claimed(s: Subject) -> Moment | Skip | None:
    """The measurement's calibration is a claim with no record (a date, "checked before testing"): escalate."""
    if s.shape != "calibration" or not s.row.get("calibration_claims"):
        return None
    facts = s.cat.claim_facts(s.evidence_id)
    return _escalate(s, [s.evidence_id], facts, facts)


@rule(Family.PACKET_ESCALATION, "unstated_change", gold="abstain_or_escalate")
def unstated_change_rule(s: Subject) -> Moment | Skip | None:
    """The document changed between releases and no changelog item states or covers it: escalate."""
    if not unstated_change(s.row):
        return None
    facts = s.cat.change_facts(s.evidence_id)
    return _escalate(s, [s.evidence_id, *s.support], facts, facts)


@rule(Family.PACKET_ESCALATION, "material_conflict", gold="abstain_or_escalate")
def conflicting_material(s: Subject) -> Moment | Skip | None:
    """The item's description names another material than its record: the sources conflict, escalate."""
    found = material_conflict(s.cat, s.evidence_id)
    if found is None:
        return None
    mine, _ = found
    fact = f"material:{s.row['record_id']}|{'|'.join(sorted(mine))}"
    return _escalate(s, [s.evidence_id, *s.support], [fact], [fact])


family(FamilySpec(Family.PACKET_ESCALATION, priority=4, doc=__doc__ or ""))
