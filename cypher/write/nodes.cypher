// Upsert nodes by their deterministic id. Every node carries :Node (the id constraint lives there);
// its ontology labels come from row.labels, checked against ontology/ by the writer before this runs.
// SET n = row.props replaces the properties, so a re-ingest of the same input changes nothing.
UNWIND $rows AS row
MERGE (n:Node {id: row.id})
SET n:$(row.labels)
SET n = row.props
