"""packet_submission: submit exactly the packet. Five rules: the subject was renamed by a release whose
changelog states the rename (submit the renamed file with the support: the name is gone, the content is not, a
hard negative for "localize the unavailable"); the subject was removed by a release whose changelog item names
the file that replaces it (submit the replacement with the support); the subject's checksum file is marked
invalid or disagrees, while a byte-identical copy in the archive has a valid, agreeing one (the item is
checkable through the copy: submit, and the curator's report names the stale checksum file), or a declared
digest disagrees with the bytes while a second statement of the archive agrees (a bag's manifest, a crate's digest
list or its own metadata); the subject is a
file a release changed, as its changelog states (the current release holds the corrected bytes: a hard negative
for "flag what changed"); and a clean archived subject with clean support."""

from __future__ import annotations

from voe.artifacts.package import Action, Family
from voe.compiler.catalog import version_change, version_facts
from voe.compiler.families.base import SKIP, FamilySpec, Moment, Skip, Subject, family, rule, submit_packet


def _release_target(s: Subject, name: str | None) -> str | None:
    cat, row = s.cat, s.row
    for x in cat.by_workflow[s.workflow]:
        r = cat.rows[x]
        if r.get("listed_in") == row.get("listed_in") and r["name"] == name and cat.objects[x].status == "archived":
            return x
    return None


def _successor(s: Subject, target: str) -> Moment:
    binding = [s.evidence_id, target, *s.support]
    return Moment(Family.PACKET_SUBMISSION, s.workflow, s.evidence_id, s.support, binding, binding, binding,
                  Action.SUBMIT_RISK_PACKET, [target, *s.support], binding, [s.evidence_id, target],
                  s.cat.statement_facts(s.evidence_id), shape=s.shape)


@rule(Family.PACKET_SUBMISSION, "renamed",
      gold="submit_risk_packet [renamed file, support]",
      why=("The changelog says where the file went; the content is in the release under its new name, so the "
           "packet rests on the new file."))
def renamed(s: Subject) -> Moment | Skip | None:
    """A stated rename: submit the renamed file with the support."""
    if s.row.get("release_status") != "renamed":
        return None
    target = _release_target(s, s.row.get("renamed_to"))
    return SKIP if target is None else _successor(s, target)  # a rename whose new file the archive lacks: nothing


@rule(Family.PACKET_SUBMISSION, "replaced",
      gold="submit_risk_packet [replacement, support]",
      why=("The changelog item that removes the file names the document that replaces it (L7, L8 and L9 became "
           "L7-L8-L9-O1): a curator points the packet at the replacement rather than reporting a gap."))
def replaced(s: Subject) -> Moment | Skip | None:
    """A stated removal whose statement names the replacing file: submit the replacement with the support."""
    if s.row.get("release_status") != "removed" or not s.row.get("replaced_by"):
        return None
    target = _release_target(s, s.row.get("replaced_by"))
    return SKIP if target is None else _successor(s, target)


@rule(Family.PACKET_SUBMISSION, "resolved",
      gold="submit_risk_packet [subject, support]",
      why=("The record marks the checksum file invalid (or it disagrees), yet a byte-identical copy in the "
           "archive has a valid checksum file that agrees; or the archive states the file's digest twice (a "
           "bag's NERDm metadata and its payload manifest, a crate's metadata and a digest list inside it) and "
           "one statement agrees with the bytes where the other does not: the bytes are checkable, so the "
           "packet is submitted and the curator's report names the stale declaration."))
def resolved(s: Subject) -> Moment | Skip | None:
    """A stale checksum file a valid, agreeing copy resolves, or a stale digest a second statement of the archive
    resolves (of the subject or an item the packet rests on): submit the packet, after reading the copy."""
    stale = [x for x in [s.evidence_id, *s.support, *s.calibrators] if x in s.cat.resolved]
    if not stale or s.cat.objects[s.evidence_id].status != "archived":
        return None
    facts = [f"resolved:{x}" for x in stale]
    return submit_packet(Family.PACKET_SUBMISSION, s, facts, facts,
                         also_needed=[c for x in stale for c in s.cat.resolved[x]])


@rule(Family.PACKET_SUBMISSION, "corrected",
      gold="submit_risk_packet [subject, support]",
      why=("The changelog names the correction: the current release holds the corrected bytes, so the changed "
           "hash is the fix, not a problem."))
def corrected(s: Subject) -> Moment | Skip | None:
    """A stated correction: the current release holds the corrected file; submit the packet."""
    if s.row.get("release_status") != "changed" or s.row.get("release_coverage") != "named" \
            or s.cat.objects[s.evidence_id].status != "archived":
        return None
    return submit_packet(Family.PACKET_SUBMISSION, s, s.cat.statement_facts(s.evidence_id))


@rule(Family.PACKET_SUBMISSION, "version_stated",
      gold="submit_risk_packet [subject, support]",
      why=("The file's digest changed, or it moved to another path or first appeared, between two versions, and the "
           "release history (or commit message) says the later one updated its data: the change is stated, the "
           "current version holds the bytes the publisher means."))
def version_stated(s: Subject) -> Moment | Skip | None:
    """A change between two versions the release history states ("data update"): submit the packet."""
    if version_change(s.row) != "stated" or s.cat.objects[s.evidence_id].status != "archived":
        return None
    return submit_packet(Family.PACKET_SUBMISSION, s, version_facts(s.row))


@rule(Family.PACKET_SUBMISSION, "clean",
      gold="submit_risk_packet [subject, support]",
      why=("Every item of the packet is archived and nothing about it is wrong: submit exactly the packet, "
           "nothing more."))
def clean(s: Subject) -> Moment | Skip | None:
    """A clean archived subject with clean support: submit exactly the packet."""
    if s.cat.objects[s.evidence_id].status != "archived" or s.row.get("release_status") \
            or s.row.get("provenance") == "measurement" or version_change(s.row) is not None:
        return None
    return submit_packet(Family.PACKET_SUBMISSION, s)


family(FamilySpec(Family.PACKET_SUBMISSION, priority=3, doc=__doc__ or ""))
