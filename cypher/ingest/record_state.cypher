// The Record the graph holds under this id, if any: its ingest stamp, state, what is left of a swap, and (plain
// folders) source folder. Read before a folder's id is chosen, and again inside the write transaction to tell
// a replacement from a no-op re-ingest.
MATCH (r:Record {id: $record_id})
RETURN r.ingest_stamp AS stamp, r.ingest_state AS state, r.swap AS swap, r.source_root AS source_root
