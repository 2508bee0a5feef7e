// Remove every node a failed chunked ingest wrote for this record (batched: it may be large). The Record goes
// last: while any of its nodes remain, the Record (and its writer's lease) is there for clean_stale to find,
// so a delete killed half-way is finished by the next ingest, and a record id without a Record holds nothing.
MATCH (n:Node {record_id: $record_id})
WITH n ORDER BY n:Record
CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS
