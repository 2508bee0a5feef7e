// Remove every node a failed chunked ingest wrote for this record (batched: it may be large). The Record goes
// last: while any of its nodes remain, the Record (and its writer's lease) is there for clean_stale to find,
// so a delete killed half-way is finished by the next ingest, and a record id without a Record holds nothing.
// Each node is checked again under its write lock: a shared node another record's ingest took over stays.
MATCH (n:Node {record_id: $record_id})
WITH n ORDER BY n:Record
CALL (n) {
  SET n.pruning = true
  WITH n, n.record_id = $record_id AS gone
  FOREACH (_ IN CASE WHEN gone THEN [] ELSE [1] END | REMOVE n.pruning)
  WITH n, gone WHERE gone
  DETACH DELETE n
} IN TRANSACTIONS OF 10000 ROWS
