// Remove every node a failed chunked ingest wrote for this record (batched: it may be large).
MATCH (n:Node {record_id: $record_id})
CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS
