"""packet_escalation: the packet cannot be completed as stated, and nothing in the archive resolves it:
abstain_or_escalate, after pulling what shows it. An item the packet must rest on has a defect nothing resolves;
a measurement's calibration is only claimed ("calibrated 2021-02-03"), with no record of it in the archive; a
document changed between releases and no changelog item says so (one batch edit is one fact), or was changed,
removed, renamed or added between two versions of a record under a statement that says only its metadata changed
(one version's changes are one fact); the record's release dates go backwards; the item's own description names
another material than its record (the sources conflict: which one holds is the author's to say)."""

from __future__ import annotations

from voe.artifacts.package import Action, Family
from voe.compiler.catalog import material_conflict, unstated_change, version_change, version_facts
from voe.compiler.families.base import FamilySpec, Moment, Skip, Subject, family, rule


def _escalate(s: Subject, needed: list[str], facts: list[str], gold: list[str]) -> Moment:
    binding = [s.evidence_id, *s.support, *s.calibrators]
    return Moment(Family.PACKET_ESCALATION, s.workflow, s.evidence_id, s.support, binding,
                  list(dict.fromkeys(needed)), binding, Action.ABSTAIN_OR_ESCALATE, [], binding, facts, gold,
                  shape=s.shape, calibrators=list(s.calibrators))


@rule(Family.PACKET_ESCALATION, "defective_support",
      gold="abstain_or_escalate",
      why=("The subject is fine but the packet must also rest on an item with a defect nothing in the archive "
           "resolves: the packet cannot be completed as stated; the curator escalates rather than flagging the "
           "subject or submitting."))
def defective_support(s: Subject) -> Moment | Skip | None:
    """A support item has a defect: the packet cannot be completed as stated."""
    bad = [x for x in [*s.support, *s.calibrators] if s.cat.own_defects.get(x)]
    if not bad:
        return None
    return _escalate(s, [s.evidence_id, *bad], [d for x in bad for d in s.cat.own_defects[x]],
                     [s.cat.defect_fact(x) for x in bad])


@rule(Family.PACKET_ESCALATION, "calibration_claimed",
      gold="abstain_or_escalate",
      why=("The row says a calibration happened (\"calibrated 2021-02-03\", \"checked before testing\") and names no"
           " record of it: there is nothing to fetch (not a gap) and nothing to check (not a calibration in "
           "hand); only the lab can say, so the packet is escalated."))
def calibration_claimed(s: Subject) -> Moment | Skip | None:
    """The measurement's calibration is a claim with no record (a date, "checked before testing"): escalate."""
    if s.shape != "calibration" or not s.row.get("calibration_claims"):
        return None
    facts = s.cat.claim_facts(s.evidence_id)
    return _escalate(s, [s.evidence_id], facts, facts)


@rule(Family.PACKET_ESCALATION, "unstated_change",
      gold="abstain_or_escalate",
      why=("The document's hash changed between two releases and no changelog item names or covers the change: "
           "nobody says what changed or why, so a packet resting on it waits for the publisher (one batch edit "
           "of many files is one such fact)."))
def unstated_change_rule(s: Subject) -> Moment | Skip | None:
    """The document changed between releases and no changelog item states or covers it: escalate."""
    if not unstated_change(s.row):
        return None
    facts = s.cat.change_facts(s.evidence_id)
    return _escalate(s, [s.evidence_id, *s.support], facts, facts)


@rule(Family.PACKET_ESCALATION, "material_conflict",
      gold="abstain_or_escalate",
      why=("The item's own description names a material its record does not (results \"on aluminum\" in a record "
           "of Ti-6Al-4V): the sources conflict and which one holds is the author's to say."))
def conflicting_material(s: Subject) -> Moment | Skip | None:
    """The item's description names another material than its record: the sources conflict, escalate."""
    found = material_conflict(s.cat, s.evidence_id)
    if found is None:
        return None
    mine, _ = found
    fact = f"material:{s.row['record_id']}|{'|'.join(sorted(mine))}"
    return _escalate(s, [s.evidence_id, *s.support], [fact], [fact])


@rule(Family.PACKET_ESCALATION, "version_unstated",
      gold="abstain_or_escalate",
      why=("A later version of the record changed, dropped, renamed or added the file, and the release history (or "
           "commit message) says of that version only that its metadata changed, or nothing: the statement denies "
           "what the versions show. A rename under \"metadata update\" moved bytes nobody said moved, an addition "
           "brought data nobody said came, just as a removal took data nobody said went; which version holds the "
           "data the publisher means is the publisher's to say."))
def version_unstated(s: Subject) -> Moment | Skip | None:
    """The item changed, disappeared, moved to another path or appeared between two versions under a statement that
    denies it or none: escalate."""
    if version_change(s.row) not in ("denied", "none"):
        return None
    facts = version_facts(s.row)
    return _escalate(s, [s.evidence_id, *s.support], facts, facts)


@rule(Family.PACKET_ESCALATION, "dates_backwards",
      gold="abstain_or_escalate",
      why=("The record's release history dates a version before the one it follows: which version came first, and "
           "so which holds the current bytes, cannot be read off the record; the publisher has to say."))
def dates_backwards(s: Subject) -> Moment | Skip | None:
    """The record's release history goes backwards in time: escalate a packet on its items."""
    if not s.row.get("release_dates_backwards"):
        return None
    facts = [f"dates:{s.row['record_id']}"]
    return _escalate(s, [s.evidence_id, *s.support], facts, facts)


family(FamilySpec(Family.PACKET_ESCALATION, priority=4, doc=__doc__ or ""))
