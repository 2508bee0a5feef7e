"""missing_evidence: the archive names an item it cannot supply (the gap is a graph fact): a file a release
removed, as that release's changelog states, and no statement names what replaced it
(cypher/compiler/family_missing_evidence.cypher); a file a checksum file of the record describes and the record
does not list; a calibration a measurement's metadata names that the archive holds nowhere (a row's calibration
cell: "RR 25 beam profile and power meter measurements"). Localize it (only it: the menu holds other named
calibrations the archive lacks, of other measurements), after pulling it and the support."""

from __future__ import annotations

from voe.artifacts.package import Action, Family
from voe.compiler.catalog import missing_calibrations
from voe.compiler.families.base import FamilySpec, Moment, Skip, Subject, family, rule


@rule(Family.MISSING_EVIDENCE, "removed",
      gold="localize_missing_evidence [subject]",
      why=("The archive says the file existed and is gone (a changelog item removes it and names nothing in its "
           "place, or a checksum file attests a file the record does not list): a packet that needs it cannot be"
           " had, and the curator asks for it by name."))
def removed(s: Subject) -> Moment | Skip | None:
    """The subject is a gap of the archive (a stated removal nothing replaces, an attested file): localize it."""
    if s.evidence_id not in s.found[Family.MISSING_EVIDENCE] or s.row.get("replaced_by"):
        return None
    binding = [s.evidence_id, *s.support]
    return Moment(Family.MISSING_EVIDENCE, s.workflow, s.evidence_id, s.support, binding, binding, binding,
                  Action.LOCALIZE_MISSING_EVIDENCE, [s.evidence_id], binding, [s.evidence_id],
                  s.cat.gap_facts(s.evidence_id), shape=s.shape)


@rule(Family.MISSING_EVIDENCE, "calibration_named",
      gold="localize_missing_evidence [the named calibration]",
      why=("The measurement's own metadata says which calibration it rests on, and no file, row or record of the"
           " archive holds it: the measurement cannot be checked against its calibration until someone supplies "
           "that record, so the curator asks for exactly it (not for other calibrations the archive also lacks)."))
def calibration_named(s: Subject) -> Moment | Skip | None:
    """The measurement's metadata names a calibration the archive holds nowhere: localize what it names."""
    if s.shape != "calibration" or s.row.get("provenance") != "measurement":
        return None
    gone = missing_calibrations(s.cat, s.evidence_id)
    if not gone:
        return None
    binding = [s.evidence_id, *s.support, *gone]
    facts = s.cat.calibration_facts(s.evidence_id, gone)
    return Moment(Family.MISSING_EVIDENCE, s.workflow, s.evidence_id, s.support, binding, binding, binding,
                  Action.LOCALIZE_MISSING_EVIDENCE, gone, binding, facts, facts, shape=s.shape)


def _missing(m: Moment) -> list[str]:
    return list(m.reference_payload)  # what the archive names and cannot supply


family(FamilySpec(Family.MISSING_EVIDENCE, priority=1, doc=__doc__ or "", missing=_missing,
                  query="compiler/family_missing_evidence"))
