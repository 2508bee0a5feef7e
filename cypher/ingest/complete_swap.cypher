// The end of a swap: the staged Record takes the record's id and nothing is left to do.
MATCH (s:Record {id: $staged})
WHERE s.lease = $lease  // once: the lease goes with it
SET s.id = substring(s.id, size($prefix)), s.record_id = $record_id, s.ingest_state = 'complete'
REMOVE s.writer, s.writing_since, s.replaces, s.swap, s.lease
