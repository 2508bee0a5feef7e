"""missing_evidence: the subject is a file a release removed (the archive has no acquisition path; the gap is a
graph fact, cypher/compiler/family_missing_evidence.cypher): localize it, after pulling it and its support."""

from __future__ import annotations

from typing import Any

from compiler.families.base import SKIP, FamilySpec, Moment, Skip, Subject, family, release_group, rule
from compiler.models import Action, Family

QUERY = "compiler/family_missing_evidence"


@rule(Family.MISSING_EVIDENCE, "removed", rank=10)
def removed(s: Subject) -> Moment | Skip | None:
    if s.evidence_id not in s.gaps:
        return None
    binding = [s.evidence_id, *s.support]
    return Moment(Family.MISSING_EVIDENCE, s.workflow, s.evidence_id, s.support, binding, binding, binding,
                  Action.LOCALIZE_MISSING_EVIDENCE, [s.evidence_id], binding, [s.evidence_id])


def _cap(m: Moment, row: dict[str, Any]) -> tuple[tuple[str, ...], int] | None:
    from compiler import moments

    return release_group(m, row, moments.RELEASE_CAP)  # outside a release: never capped


def _missing(m: Moment) -> list[str]:
    return [m.subject]  # the item the archive names and cannot supply


family(FamilySpec(Family.MISSING_EVIDENCE, priority=1, cap_group=_cap, doc=__doc__ or "", missing=_missing))
_ = SKIP  # no subject is skipped by this family
