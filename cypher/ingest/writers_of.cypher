// The record under this id and a staged replacement of it, with their writers' leases: a live writer's
// record is left alone by another ingest, a dead one's is finished or removed first.
MATCH (r:Record)
WHERE r.id IN [$record_id, $staged]
RETURN r.id AS record_id, coalesce(r.swap, r.ingest_state) AS state, r.writer AS writer, r.lease AS lease,
       toString(r.writing_since) AS since,
       duration.inSeconds(coalesce(r.writing_since, datetime('1970-01-01T00:00:00Z')), datetime()).seconds AS age
