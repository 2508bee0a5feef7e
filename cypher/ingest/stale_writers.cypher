// Records a multi-transaction ingest has not finished: `writing` (before the commit point), `swapping` or
// `renaming` (a staged replacement past it), with the writer's lease; ingest/loader.py decides which writer
// is dead before anything is deleted or finished.
MATCH (r:Record)
WHERE r.ingest_state IN ['writing', 'swapping', 'renaming']
RETURN r.id AS record_id, r.ingest_state AS state, r.writer AS writer, toString(r.writing_since) AS since,
       duration.inSeconds(coalesce(r.writing_since, datetime('1970-01-01T00:00:00Z')), datetime()).seconds AS age
ORDER BY record_id
