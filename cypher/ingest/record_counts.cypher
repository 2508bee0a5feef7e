// What a complete record holds, counted as an ingest report counts it: for a streamed record whose inputs are
// unchanged, which is not built again (ingest/pipeline.py).
CALL {
  MATCH (d:Node {record_id: $record_id}) WHERE d:Defect
  WITH d.kind AS kind, count(*) AS n
  RETURN collect([kind, n]) AS defects
}
CALL {
  MATCH (e:Node {record_id: $record_id}) WHERE e:Evidence
  WITH e.kind AS kind, count(*) AS n
  RETURN collect([kind, n]) AS evidence
}
CALL {
  MATCH (c:Node {record_id: $record_id})-[:STORED_AS]->(f:File)
  WHERE c:Component AND NOT c:ChecksumFile AND f.format IS NOT NULL
  WITH f.format AS format, count(*) AS n, sum(f.facts) AS facts
  RETURN collect([format, n]) AS formats, sum(facts) AS facts
}
CALL {
  MATCH (n:Node {record_id: $record_id})-[:STORED_AS]->(f:File)
  RETURN count(DISTINCT f) AS files, count(CASE WHEN n:Component THEN 1 END) AS held
}
RETURN defects, evidence, formats, facts, files, held
