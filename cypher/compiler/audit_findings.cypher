// Every defect of every complete record (or of the records named), with its record, the file it is about, where
// it is located and what the record says of whom to write to: the rows of the curator's report (compiler/audit.py).
MATCH (r:Record)
WHERE coalesce(r.ingest_state, 'complete') = 'complete' AND ($records IS NULL OR r.id IN $records)
MATCH (x)-[:HAS_DEFECT]->(d:Defect)
WHERE d.record_id = r.id
OPTIONAL MATCH (d)-[:LOCATED_AT]->(l:SourceLocation)
RETURN r.id AS record_id, r.ark AS ark, r.version AS version, r.title AS title, r.contact_name AS contact_name,
       r.contact_email AS contact_email, d.id AS defect_id, d.kind AS kind, d.rule AS rule, d.detail AS detail,
       coalesce(x.filepath, d.path) AS file, min(l.path) AS at_path, min(coalesce(l.locator, l.pointer)) AS at
ORDER BY record_id, file, defect_id
