// missing_evidence: an evidence object the archive names but holds no acquisition path for (a record
// reference, a reconstructed catalog entry), with the available evidence of the same record it belongs with.
MATCH (r:Record)
WHERE coalesce(r.ingest_state, 'complete') = 'complete'
MATCH (m:Evidence {record_id: r.id})
WHERE m.available = false
OPTIONAL MATCH (a:Evidence {record_id: r.id})-[:EVIDENCED_BY]->(:Component)
WHERE coalesce(a.available, true) AND a.kind IN ['characterization', 'process_record']
WITH r, m, a ORDER BY a.id
WITH r, m, collect(a.id)[0..3] AS companions
RETURN r.id AS record_id, m.id AS evidence_id, m.kind AS kind, companions
ORDER BY record_id, evidence_id
