// Remove the nodes an earlier ingest of this record wrote that the current inputs no longer produce.
MATCH (n:Node {record_id: $record_id})
WHERE n.ingest_stamp <> $stamp
DETACH DELETE n
