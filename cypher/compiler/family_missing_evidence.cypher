// missing_evidence: a real gap of the archive itself. Either a file a release removed, as that release's
// changelog states (ingest/sources/releases.py: release_stated; the summary table alone shows bytes moved, not why),
// or a file the record attests and does not list (a checksum file describes it: provenance 'attested'). A
// record our local copy does not hold, a reference the archive names elsewhere, or a reconstructed catalog of
// records NIST does publish is not a gap.
MATCH (r:Record)
WHERE coalesce(r.ingest_state, 'complete') = 'complete'
MATCH (e:Evidence {record_id: r.id})
WHERE NOT coalesce(e.available, false)
  AND ((e.provenance = 'release_notes' AND e.release_status = 'removed' AND coalesce(e.release_stated, false))
       OR e.provenance = 'attested')
RETURN r.id AS record_id, e.id AS evidence_id, e.title AS title, e.release_to AS removed_in,
       e.provenance AS provenance
ORDER BY record_id, evidence_id
