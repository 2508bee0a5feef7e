"""source_integrity: the subject (or a file inside it) has a defect (cypher/compiler/family_source_integrity.cypher
binds each defect to its nearest evidence item): flag it, after pulling it. Never capped."""

from __future__ import annotations

from typing import Any

from compiler.families.base import FamilySpec, Moment, Skip, Subject, family, rule
from compiler.models import Action, Family

QUERY = "compiler/family_source_integrity"


@rule(Family.SOURCE_INTEGRITY, "defective", rank=30)
def defective(s: Subject) -> Moment | Skip | None:
    defects = s.cat.own_defects.get(s.evidence_id, [])
    if not defects:
        return None
    e = s.evidence_id
    return Moment(Family.SOURCE_INTEGRITY, s.workflow, e, s.support, [e, *s.support], [e], [e],
                  Action.FLAG_SOURCE_DEFECT, [e], [e], list(defects))


def _cap(m: Moment, row: dict[str, Any]) -> tuple[tuple[str, ...], int] | None:
    return None


family(FamilySpec(Family.SOURCE_INTEGRITY, priority=0, cap_group=_cap, doc=__doc__ or "", contrasted=True))
