// (`$legacy`: the prefix an older voe gave staged nodes, `staged:`, for a swap it left to finish.)
// Give the staged version's nodes their real ids (batched); the Record node last, in complete_swap. An id
// another record holds (shared content) is left to merge_staged. The lookup of the real id runs inside each
// batch: a unique-index seek holds its lock until its transaction ends, and the batch must be able to write it.
MATCH (s:Record {id: $staged})
WHERE s.lease = $lease  // only the swap's holder
MATCH (n:Node {record_id: $staged})
WHERE NOT n:Record
CALL (n) {
  OPTIONAL MATCH (m:Node {id: substring(n.id, size(CASE WHEN n.id STARTS WITH $prefix THEN $prefix ELSE $legacy END))})
  WITH n WHERE m IS NULL
  SET n.id = substring(n.id, size(CASE WHEN n.id STARTS WITH $prefix THEN $prefix ELSE $legacy END)), n.record_id = $record_id
} IN TRANSACTIONS OF 10000 ROWS
