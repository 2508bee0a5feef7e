// The defects behind each evidence object (the catalog binds them; every family reads them, source_integrity
// flags them): an evidence object whose item (its component, a folder member at any depth, or a
// checksum sidecar describing either) carries a provenance/checkability defect. One row per (defect,
// evidence on the folder chain) with the depth, so the compiler binds each defect to the nearest folder.
MATCH (r:Record)-[:HAS_COMPONENT]->(c:Component)<-[:EVIDENCED_BY]-(e:Evidence)
WHERE coalesce(r.ingest_state, 'complete') = 'complete'
MATCH p = (x:Component)-[:PART_OF*0..]->(c)
MATCH (y:Component)-[:DESCRIBES*0..1]->(x)
MATCH (y)-[:HAS_DEFECT]->(d:Defect)
RETURN r.id AS record_id, e.id AS evidence_id, d.id AS defect_id, d.kind AS defect_kind,
       x.filepath AS subject, min(length(p)) AS depth
ORDER BY record_id, defect_id, depth, evidence_id
