// The end of a swap: the staged Record takes the record's id and readers may rely on it.
MATCH (s:Record {id: $staged})
SET s.id = substring(s.id, size($prefix)), s.record_id = $record_id, s.ingest_state = 'complete'
REMOVE s.writer, s.writing_since, s.replaces
