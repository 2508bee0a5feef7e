// A writer that failed but lives on lets go of its Record: with no writer named, the next ingest or reader
// takes it over as a dead writer's and deletes or finishes it.
MATCH (r:Record {id: $record_id})
WHERE r.lease = $lease
REMOVE r.writer
