"""missing_evidence: the archive names an item it cannot supply (the gap is a graph fact,
cypher/compiler/family_missing_evidence.cypher): a file a release removed, as that release's changelog states,
or a file a checksum file of the record describes and the record does not list. Localize it, after pulling
it and the support."""

from __future__ import annotations

from voe.artifacts.package import Action, Family
from voe.compiler.families.base import FamilySpec, Moment, Skip, Subject, family, rule


@rule(Family.MISSING_EVIDENCE, "removed", gold="localize_missing_evidence [subject]")
def removed(s: Subject) -> Moment | Skip | None:
    """The subject is a gap of the archive: localize it."""
    if s.evidence_id not in s.found[Family.MISSING_EVIDENCE]:
        return None
    binding = [s.evidence_id, *s.support]
    return Moment(Family.MISSING_EVIDENCE, s.workflow, s.evidence_id, s.support, binding, binding, binding,
                  Action.LOCALIZE_MISSING_EVIDENCE, [s.evidence_id], binding, [s.evidence_id],
                  s.cat.gap_facts(s.evidence_id), shape=s.shape)


def _missing(m: Moment) -> list[str]:
    return [m.subject]  # the item the archive names and cannot supply


family(FamilySpec(Family.MISSING_EVIDENCE, priority=1, doc=__doc__ or "", missing=_missing,
                  query="compiler/family_missing_evidence"))
