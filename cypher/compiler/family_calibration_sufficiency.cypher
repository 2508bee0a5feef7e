// calibration_sufficiency: a workflow holding k >= 2 available calibration artifacts; each of its available,
// defect-free characterization or process items is a decision that needs the full set. Items of a plain
// folder record are grouped by their top-level folder (the workflow), NERDm records are one workflow each.
MATCH (r:Record)
WHERE coalesce(r.ingest_state, 'complete') = 'complete'
MATCH (k:Evidence {record_id: r.id, kind: 'calibration_artifact'})-[:EVIDENCED_BY]->(kc:Component)
WHERE coalesce(k.available, true)
  AND NOT EXISTS { (y:Component)-[:DESCRIBES*0..1]->(:Component)-[:PART_OF*0..]->(kc) WHERE (y)-[:HAS_DEFECT]->() }
WITH r, k, CASE WHEN r.ark STARTS WITH 'folder:' THEN split(k.filepath, '/')[0] ELSE '' END AS part
WITH r, part, collect(k.id) AS calibration
WHERE size(calibration) >= 2
MATCH (t:Evidence {record_id: r.id})-[:EVIDENCED_BY]->(c:Component)
WHERE coalesce(t.available, true) AND t.kind IN ['characterization', 'process_record']
  AND (part = '' OR split(t.filepath, '/')[0] = part)
  AND NOT EXISTS { (y:Component)-[:DESCRIBES*0..1]->(:Component)-[:PART_OF*0..]->(c) WHERE (y)-[:HAS_DEFECT]->() }
RETURN r.id AS record_id, t.id AS evidence_id, calibration
ORDER BY record_id, evidence_id
