// Every defect of a record (on the record itself or on any of its components), with where it was found.
MATCH (r:Record {ark: $ark, ingest_state: 'complete'})
OPTIONAL MATCH found = (r)-[:HAS_COMPONENT*0..1]->()-[:HAS_DEFECT]->(d:Defect)
OPTIONAL MATCH at = (d)-[:LOCATED_AT]->(:SourceLocation)
RETURN r, collect(DISTINCT found) AS defects, collect(DISTINCT at) AS locations
