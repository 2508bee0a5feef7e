"""packet_escalation: the subject is clean but an item the packet must rest on has a defect nothing in the
archive resolves: abstain_or_escalate, after pulling both."""

from __future__ import annotations

from voe.artifacts.package import Action, Family
from voe.compiler.families.base import FamilySpec, Moment, Skip, Subject, family, rule


@rule(Family.PACKET_ESCALATION, "defective_support", gold="abstain_or_escalate")
def defective_support(s: Subject) -> Moment | Skip | None:
    """A support item has a defect: the packet cannot be completed as stated."""
    bad = [x for x in [*s.support, *s.calibrators] if s.cat.own_defects.get(x)]
    if not bad:
        return None
    binding = [s.evidence_id, *s.support, *s.calibrators]
    return Moment(Family.PACKET_ESCALATION, s.workflow, s.evidence_id, s.support, binding, [s.evidence_id, *bad],
                  binding, Action.ABSTAIN_OR_ESCALATE, [], binding, [d for x in bad for d in s.cat.own_defects[x]],
                  [s.cat.defect_fact(x) for x in bad], shape=s.shape, calibrators=list(s.calibrators))


family(FamilySpec(Family.PACKET_ESCALATION, priority=4, doc=__doc__ or ""))
