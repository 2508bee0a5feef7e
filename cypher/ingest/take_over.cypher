// A dead writer's unfinished record is taken over by exactly one live ingest or reader. The write lock comes
// first (the SET), then the check: a row read while the record was being finished by its live writer (a read
// may see some of a commit's properties and not others) no longer matches once the lock is held, so a record
// that was completed meanwhile is never taken over, and of several that try, one finds the dead lease.
MATCH (r:Record {id: $record_id})
SET r.taking = true
WITH r, (r.ingest_state IN ['writing', 'swapping', 'renaming'] OR r.swap IS NOT NULL)
        AND coalesce(r.lease, '') = coalesce($dead, '') AND coalesce(r.writer, '') = coalesce($dead_writer, '')
        AS ours
REMOVE r.taking
FOREACH (_ IN CASE WHEN ours THEN [1] ELSE [] END |
  SET r.lease = $lease, r.writer = $writer, r.writing_since = datetime())
RETURN count(CASE WHEN ours THEN 1 END) AS taken, coalesce(r.swap, r.ingest_state) AS state
