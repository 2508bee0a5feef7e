// After the commit point: delete the replaced version (batched: it may be large). Content-addressed nodes the
// staged version wrote in place carry its stamp and stay. Each node is checked again under its write lock (the
// SET takes it): a shared node (a source location in bytes another record holds too) that another record's
// ingest took over since the MATCH is that record's now and stays.
MATCH (s:Record {id: 'staged:' + $record_id})
WHERE s.lease = $lease  // only the swap's holder (its writer, or the one ingest that took a dead one over)
WITH s.ingest_stamp AS stamp
MATCH (n:Node {record_id: $record_id})
WHERE n.ingest_stamp IS NULL OR n.ingest_stamp <> stamp OR n.id = $record_id
// the old Record last: by then its components (and their HAS_COMPONENT edges) are gone, so no batch deletes a
// million relationships of one node
WITH n, stamp ORDER BY n:Record
CALL (n, stamp) {
  SET n.pruning = true
  // the old Record goes whatever its stamp (another ingest may have written these very inputs meanwhile)
  WITH n, n.record_id = $record_id AND (n.ingest_stamp IS NULL OR n.ingest_stamp <> stamp OR n.id = $record_id) AS gone
  FOREACH (_ IN CASE WHEN gone THEN [] ELSE [1] END | REMOVE n.pruning)
  WITH n, gone WHERE gone
  DETACH DELETE n
} IN TRANSACTIONS OF 10000 ROWS
