// The replaced version is gone; what remains of the swap is renaming the staged nodes.
MATCH (s:Record {id: $staged})
SET s.ingest_state = 'renaming'
