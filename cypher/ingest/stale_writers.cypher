// Records a multi-transaction ingest has not finished: `writing` (before the commit point), or a staged
// replacement past it with its swap to finish (`swap`: deleting, renaming; an older voe's `swapping` or
// `renaming` in ingest_state), with the writer's lease; ingest/write/loader.py decides which writer is dead before
// anything is deleted or finished.
MATCH (r:Record)
WHERE r.ingest_state IN ['writing', 'swapping', 'renaming'] OR r.swap IS NOT NULL
RETURN r.id AS record_id, coalesce(r.swap, r.ingest_state) AS state, r.writer AS writer, r.lease AS lease,
       toString(r.writing_since) AS since,
       duration.inSeconds(coalesce(r.writing_since, datetime('1970-01-01T00:00:00Z')), datetime()).seconds AS age
ORDER BY record_id
