// packet_submission: an available, defect-free characterization or process item; the record's source
// documents (readmes, known-limitation notes) are offered as non-binding distractors.
MATCH (r:Record)
WHERE coalesce(r.ingest_state, 'complete') = 'complete'
MATCH (t:Evidence {record_id: r.id})-[:EVIDENCED_BY]->(c:Component)
WHERE coalesce(t.available, true) AND t.kind IN ['characterization', 'process_record']
  AND NOT EXISTS { (y:Component)-[:DESCRIBES*0..1]->(:Component)-[:PART_OF*0..]->(c) WHERE (y)-[:HAS_DEFECT]->() }
OPTIONAL MATCH (n:Evidence {record_id: r.id, kind: 'source_document'})
WITH r, t, n ORDER BY n.id
RETURN r.id AS record_id, t.id AS evidence_id, collect(n.id)[0..3] AS notes
ORDER BY record_id, evidence_id
