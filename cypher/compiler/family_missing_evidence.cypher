// missing_evidence: a real gap of the archive itself, a file a release removed: the release notes list it
// in an older release and the current release holds no file of that name (ingest/releases.py). A record
// our local copy does not hold, a reference the archive names elsewhere, or a reconstructed catalog of
// records NIST does publish is not a gap.
MATCH (r:Record)
WHERE coalesce(r.ingest_state, 'complete') = 'complete'
MATCH (e:Evidence {record_id: r.id, provenance: 'release_notes', release_status: 'removed'})
WHERE NOT coalesce(e.available, false)
RETURN r.id AS record_id, e.id AS evidence_id, e.title AS title, e.release_to AS removed_in
ORDER BY record_id, evidence_id
