// source_integrity: an evidence object whose item (its component, a folder member, or a checksum
// sidecar describing either) carries a provenance/checkability defect. One moment per defect.
MATCH (r:Record)-[:HAS_COMPONENT]->(c:Component)<-[:EVIDENCED_BY]-(e:Evidence)
WHERE coalesce(r.ingest_state, 'complete') = 'complete'
MATCH (x:Component)-[:PART_OF*0..]->(c)
MATCH (y:Component)-[:DESCRIBES*0..1]->(x)
MATCH (y)-[:HAS_DEFECT]->(d:Defect)
RETURN DISTINCT r.id AS record_id, e.id AS evidence_id, d.id AS defect_id, d.kind AS defect_kind,
       y.filepath AS subject
ORDER BY record_id, evidence_id, defect_id
