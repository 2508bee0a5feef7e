"""calibration_sufficiency: a measurement whose metadata names its calibration, and the archive holds it (a
row of the metadata workbook whose `Calibration_measurement_identifier` is another measurement's identifier,
or whose calibration cell names a file of the record). The question names the measurement and leaves the
calibration to the agent: read the measurement's calibration cells, find what they name among the menu's
calibration items (others are there too), pull it, then submit the measurement with it. A calibration is only
what the archive names as one (ingest/rules/calibration.py): a keyword in a title is not a statement, so a
beam profile beside absorption data is not the calibration of those data unless a row says so."""

from __future__ import annotations

from voe.artifacts.package import Family
from voe.compiler.families.base import FamilySpec, Moment, Skip, Subject, family, rule, submit_packet


@rule(Family.CALIBRATION_SUFFICIENCY, "calibrated",
      gold="submit_risk_packet [subject, support, calibration]",
      why=("The measurement's metadata names its calibration and the archive holds it: the packet is the "
           "measurement with exactly that calibration (another calibration on the menu is not it)."))
def calibrated(s: Subject) -> Moment | Skip | None:
    """The measurement's metadata names its calibration and the archive holds it: submit the measurement, its
    support and the calibration."""
    if s.shape != "calibration" or not s.calibrators or s.cat.objects[s.evidence_id].status != "archived":
        return None
    facts = s.cat.calibration_facts(s.evidence_id, list(s.calibrators))
    return submit_packet(Family.CALIBRATION_SUFFICIENCY, s, [f"clean:{s.evidence_id}", *facts], gold=facts)


family(FamilySpec(Family.CALIBRATION_SUFFICIENCY, priority=2, doc=__doc__ or ""))
