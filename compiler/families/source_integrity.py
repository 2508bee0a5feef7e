"""source_integrity: the subject (or a file inside it) has a defect that breaks provenance or checkability
(ingest/rules/defects.py GOLDS: decision flag; the catalog binds each defect to its nearest evidence item,
cypher/compiler/defects_by_evidence.cypher): flag it, after pulling it."""

from __future__ import annotations

from voe.artifacts.package import Action, Family
from voe.compiler.families.base import FamilySpec, Moment, Skip, Subject, family, rule


@rule(Family.SOURCE_INTEGRITY, "defective",
      gold="flag_source_defect [subject]",
      why=("A defect of the item itself (ingest/rules/defects.py says why each kind breaks provenance or "
           "checkability): the item cannot be trusted as published, so it is reported, not used."))
def defective(s: Subject) -> Moment | Skip | None:
    """The subject carries a defect: flag it."""
    defects = s.cat.own_defects.get(s.evidence_id, [])
    if not defects:
        return None
    e = s.evidence_id
    return Moment(Family.SOURCE_INTEGRITY, s.workflow, e, s.support, [e, *s.support], [e], [e],
                  Action.FLAG_SOURCE_DEFECT, [e], [e], list(defects), [s.cat.defect_fact(e)], shape=s.shape)


family(FamilySpec(Family.SOURCE_INTEGRITY, priority=0, doc=__doc__ or ""))
