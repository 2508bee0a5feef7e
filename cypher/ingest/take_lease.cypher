// The lease of a write in several transactions, taken atomically: MERGE holds the id's lock, so of two ingests
// racing for one record id (or one staged replacement) only the first creates the Record with its lease; the
// other finds a Record it does not hold and leaves it alone.
MERGE (r:Node {id: $record_id})
ON CREATE SET r:Record, r.record_id = $record_id, r.lease = $lease, r.ingest_state = 'writing'
RETURN coalesce(r.lease = $lease, false) AS ours
