"""packet_escalation: the subject is clean but a support item has a defect nothing in the archive resolves:
abstain_or_escalate, after pulling both. Never capped unless ESCALATIONS_PER_DEFECT is set."""

from __future__ import annotations

from typing import Any

from compiler.families.base import FamilySpec, Moment, Skip, Subject, family, rule
from compiler.models import Action, Family


@rule(Family.PACKET_ESCALATION, "defective_support", rank=40)
def defective_support(s: Subject) -> Moment | Skip | None:
    bad = [x for x in s.support if s.cat.own_defects.get(x)]
    if not bad:
        return None
    binding = [s.evidence_id, *s.support]
    return Moment(Family.PACKET_ESCALATION, s.workflow, s.evidence_id, s.support, binding, [s.evidence_id, *bad],
                  binding, Action.ABSTAIN_OR_ESCALATE, [], binding, [d for x in bad for d in s.cat.own_defects[x]])


def _cap(m: Moment, row: dict[str, Any]) -> tuple[tuple[str, ...], int] | None:
    from compiler import moments

    if moments.ESCALATIONS_PER_DEFECT is None:
        return None
    return ("escalation", m.workflow, "|".join(sorted(m.facts))), moments.ESCALATIONS_PER_DEFECT or 0


family(FamilySpec(Family.PACKET_ESCALATION, priority=4, cap_group=_cap, doc=__doc__ or ""))
