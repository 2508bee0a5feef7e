// The replaced version is gone; what remains of the swap is renaming the staged nodes. (A swap an older voe
// committed is marked `swapping` in ingest_state: it is read from here on as well.)
MATCH (s:Record {id: $staged})
WHERE s.lease = $lease
SET s.swap = 'renaming', s.ingest_state = 'complete'
