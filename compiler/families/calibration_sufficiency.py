"""calibration_sufficiency: a clean archived subject in a workflow with k >= 2 clean calibration artifacts
(all of them in its support): submit all of them."""

from __future__ import annotations

from compiler.families.base import FamilySpec, Moment, Skip, Subject, clean_cap, family, rule, submit_packet
from compiler.models import Family


@rule(Family.CALIBRATION_SUFFICIENCY, "calibrated", rank=50)
def calibrated(s: Subject) -> Moment | Skip | None:
    if s.cat.objects[s.evidence_id].status != "archived":
        return None
    if sum(s.cat.rows[x]["kind"] == "calibration_artifact" for x in s.support) < 2:
        return None
    return submit_packet(Family.CALIBRATION_SUFFICIENCY, s)


family(FamilySpec(Family.CALIBRATION_SUFFICIENCY, priority=2, cap_group=clean_cap("CALIBRATION_PER_WORKFLOW"),
                  doc=__doc__ or ""))
