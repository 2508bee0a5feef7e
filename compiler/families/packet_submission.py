"""packet_submission: submit exactly the packet. Three rules: the subject was renamed by a release whose
changelog states the rename (submit the renamed file with the support: the name is gone, the content is not, a
hard negative for "localize the unavailable"); the subject is a file a release changed, as its changelog
states (the current release holds the corrected bytes: a hard negative for "flag what changed"); and a clean
archived subject with clean support."""

from __future__ import annotations

from voe.artifacts.package import Action, Family
from voe.compiler.families.base import SKIP, FamilySpec, Moment, Skip, Subject, family, rule, submit_packet


def _rename_target(s: Subject) -> str | None:
    cat, row = s.cat, s.row
    for x in cat.by_workflow[s.workflow]:
        r = cat.rows[x]
        if (r.get("listed_in") == row.get("listed_in") and r["name"] == row.get("renamed_to")
                and cat.objects[x].status == "archived"):
            return x
    return None


@rule(Family.PACKET_SUBMISSION, "renamed", gold="submit_risk_packet [renamed file, support]")
def renamed(s: Subject) -> Moment | Skip | None:
    """A stated rename: submit the renamed file with the support."""
    if s.row.get("release_status") != "renamed":
        return None
    target = _rename_target(s)
    if target is None:
        return SKIP  # a rename whose new file the archive lacks decides nothing
    binding = [s.evidence_id, target, *s.support]
    return Moment(Family.PACKET_SUBMISSION, s.workflow, s.evidence_id, s.support, binding, binding, binding,
                  Action.SUBMIT_RISK_PACKET, [target, *s.support], binding, [s.evidence_id, target],
                  s.cat.statement_facts(s.evidence_id), shape=s.shape)


@rule(Family.PACKET_SUBMISSION, "corrected", gold="submit_risk_packet [subject, support]")
def corrected(s: Subject) -> Moment | Skip | None:
    """A stated correction: the current release holds the corrected file; submit the packet."""
    if s.row.get("release_status") != "changed" or s.cat.objects[s.evidence_id].status != "archived":
        return None
    return submit_packet(Family.PACKET_SUBMISSION, s, s.cat.statement_facts(s.evidence_id))


@rule(Family.PACKET_SUBMISSION, "clean", gold="submit_risk_packet [subject, support]")
def clean(s: Subject) -> Moment | Skip | None:
    """A clean archived subject with clean support: submit exactly the packet."""
    if s.cat.objects[s.evidence_id].status != "archived" or s.row.get("release_status"):
        return None
    return submit_packet(Family.PACKET_SUBMISSION, s)


family(FamilySpec(Family.PACKET_SUBMISSION, priority=3, doc=__doc__ or ""))
