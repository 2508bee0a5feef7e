// The record's last write transaction: readers may rely on it from here on.
MATCH (r:Record {id: $record_id})
SET r.ingest_state = 'complete'
REMOVE r.writer, r.writing_since, r.replaces, r.lease
