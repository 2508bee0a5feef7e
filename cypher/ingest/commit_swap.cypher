// The commit point of a staged replacement, one small transaction, run only by the lease's holder: the old
// version stops being read (`superseded`) and the staged one is read from here on (`complete`: docs/guide/review.md's and
// the Browser's queries start from complete Records and find it whole), while `swap` says what is left to do
// (delete the old version, then give the staged nodes their real ids).
MATCH (new:Record {id: $staged})
WHERE new.ingest_state = 'writing' AND new.lease = $lease
OPTIONAL MATCH (old:Record {id: $record_id})
SET old.ingest_state = 'superseded', new.ingest_state = 'complete', new.swap = 'deleting', new.writer = $writer
RETURN count(new) AS committed
