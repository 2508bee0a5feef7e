// A large record is written in several transactions: flag it until the final one completes.
MERGE (r:Node {id: $record_id})
SET r:Record, r.record_id = $record_id, r.ingest_state = 'writing'
