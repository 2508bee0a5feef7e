// A large record is written in several transactions: flag it until the final one completes, with the
// writer's lease (a token, the host and pid, and when it began) so a later ingest can tell a live writer from
// a dead one. A staged replacement (`staged:` id) names the record it replaces.
MATCH (r:Node {id: $record_id})
SET r:Record, r.record_id = $record_id, r.ingest_state = 'writing', r.writer = $writer, r.lease = $lease,
    r.writing_since = datetime(), r.replaces = $replaces
