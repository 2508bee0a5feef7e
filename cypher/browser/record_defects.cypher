// A record's defects by kind: one row per kind with how many there are, the first few subjects and source
// locations (by caption) and one detail, and one example of the kind drawn (record -> component -> defect ->
// location): a record with a hundred defects of three kinds draws a dozen nodes, the table view holds the counts.
MATCH (r:Record {ark: $ark, ingest_state: 'complete'})
OPTIONAL MATCH found = (r)-[:HAS_COMPONENT*0..1]->(s)-[:HAS_DEFECT]->(d:Defect)
OPTIONAL MATCH (d)-[:LOCATED_AT]->(l:SourceLocation)
WITH r, found, s, d, l ORDER BY coalesce(s.filepath, s.title), d.id, l.id
WITH r, d.kind AS kind, count(DISTINCT d) AS defects, collect(found)[0] AS example,
     collect(DISTINCT coalesce(s.caption, s.filepath, s.title))[0..5] AS subjects,
     collect(DISTINCT coalesce(l.caption, l.locator, l.pointer))[0..5] AS locations, collect(d.detail)[0] AS detail,
     collect(d.rule)[0] AS rule
WITH r, kind, defects, example, subjects, locations, detail, rule, last(nodes(example)) AS shown
OPTIONAL MATCH at = (shown)-[:LOCATED_AT]->(:SourceLocation)
WITH r, kind, defects, example, subjects, locations, detail, rule, collect(at)[0] AS at
RETURN r AS record, kind, defects, rule, subjects, locations, detail, example, at
ORDER BY defects DESC, kind
