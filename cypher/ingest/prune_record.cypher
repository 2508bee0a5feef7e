// Remove what an earlier ingest of this record wrote that the current inputs no longer produce:
// first stale relationships touching the record's nodes (a STORED_AS to bytes that changed), then stale
// nodes. Relationships written by later stages carry no ingest_stamp and are left alone.
CALL () {
  MATCH (n:Node {record_id: $record_id})-[r]-()
  WHERE r.ingest_stamp IS NOT NULL AND r.ingest_stamp <> $stamp
  DELETE r
}
CALL () {
  MATCH (n:Node {record_id: $record_id})
  WHERE n.ingest_stamp <> $stamp
  DETACH DELETE n
}
