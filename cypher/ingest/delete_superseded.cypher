// After the commit point: delete the replaced version (batched: it may be large). Content-addressed nodes the
// staged version wrote in place carry its stamp and stay.
MATCH (s:Record {id: 'staged:' + $record_id})
WITH s.ingest_stamp AS stamp
MATCH (n:Node {record_id: $record_id})
WHERE n.ingest_stamp IS NULL OR n.ingest_stamp <> stamp
// the old Record last: by then its components (and their HAS_COMPONENT edges) are gone, so no batch deletes a
// million relationships of one node
WITH n ORDER BY n:Record
CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS
