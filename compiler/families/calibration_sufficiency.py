"""calibration_sufficiency: a clean archived subject in a workflow with k >= 2 clean calibration artifacts
(all of them in its support): submit all of them."""

from __future__ import annotations

from typing import Any

from compiler.families.base import FamilySpec, Moment, Skip, Subject, family, release_group, rule
from compiler.models import Action, Family


@rule(Family.CALIBRATION_SUFFICIENCY, "calibrated", rank=50)
def calibrated(s: Subject) -> Moment | Skip | None:
    if s.cat.objects[s.evidence_id].status != "archived":
        return None
    if sum(s.cat.rows[x]["kind"] == "calibration_artifact" for x in s.support) < 2:
        return None
    binding = [s.evidence_id, *s.support]
    return Moment(Family.CALIBRATION_SUFFICIENCY, s.workflow, s.evidence_id, s.support, binding, binding, binding,
                  Action.SUBMIT_RISK_PACKET, binding, binding, binding)


def _cap(m: Moment, row: dict[str, Any]) -> tuple[tuple[str, ...], int] | None:
    from compiler import moments

    return (release_group(m, row, moments.RELEASE_CAP)
            or (("clean", m.workflow, m.family.value), moments.CALIBRATION_PER_WORKFLOW))


family(FamilySpec(Family.CALIBRATION_SUFFICIENCY, priority=2, cap_group=_cap, doc=__doc__ or ""))
