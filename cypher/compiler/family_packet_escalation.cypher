// packet_escalation: a packet that cannot resolve: a defective item of a record together with a clean
// item of the same record (the defect stays unresolved whatever else is pulled).
MATCH (r:Record)
WHERE coalesce(r.ingest_state, 'complete') = 'complete'
MATCH (bad:Evidence {record_id: r.id})-[:EVIDENCED_BY]->(c:Component)
WHERE coalesce(bad.available, true)
  AND EXISTS { (y:Component)-[:DESCRIBES*0..1]->(:Component)-[:PART_OF*0..]->(c) WHERE (y)-[:HAS_DEFECT]->() }
MATCH (ok:Evidence {record_id: r.id})-[:EVIDENCED_BY]->(c2:Component)
WHERE coalesce(ok.available, true) AND ok.kind IN ['characterization', 'process_record']
  AND NOT EXISTS { (y:Component)-[:DESCRIBES*0..1]->(:Component)-[:PART_OF*0..]->(c2) WHERE (y)-[:HAS_DEFECT]->() }
WITH r, bad, ok ORDER BY ok.id
WITH r, bad, collect(ok.id)[0..2] AS partners
UNWIND partners AS partner
RETURN r.id AS record_id, bad.id AS evidence_id, partner
ORDER BY record_id, evidence_id, partner
