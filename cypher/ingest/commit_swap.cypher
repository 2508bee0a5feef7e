// The commit point of a staged replacement, one small transaction: the old version stops being read
// (`superseded`) and the staged one is to be swapped in; from here on the new version wins.
MATCH (new:Record {id: $staged})
WHERE new.ingest_state = 'writing'
OPTIONAL MATCH (old:Record {id: $record_id})
SET old.ingest_state = 'superseded', new.ingest_state = 'swapping', new.writer = $writer
