// Records left in state `writing` (a killed or failed multi-transaction ingest), with their writer's lease;
// ingest/loader.py decides which writer is dead before anything is deleted.
MATCH (r:Record {ingest_state: 'writing'})
RETURN r.id AS record_id, r.writer AS writer, toString(r.writing_since) AS since,
       duration.inSeconds(coalesce(r.writing_since, datetime('1970-01-01T00:00:00Z')), datetime()).seconds AS age
ORDER BY record_id
