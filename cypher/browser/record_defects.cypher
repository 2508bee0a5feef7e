// Every defect of a record (on the record itself or on any of its components), with where it was found.
MATCH (r:Record {ark: $ark, ingest_state: 'complete'})
OPTIONAL MATCH own = (r)-[:HAS_DEFECT]->(:Defect)
OPTIONAL MATCH onpart = (r)-[:HAS_COMPONENT]->(:Component)-[:HAS_DEFECT]->(:Defect)
OPTIONAL MATCH located = (r)-[:HAS_COMPONENT]->(:Component)-[:HAS_DEFECT]->(:Defect)-[:LOCATED_AT]->(:SourceLocation)
RETURN r, own, onpart, located
