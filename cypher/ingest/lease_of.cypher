// The lease a Record carries now (null once complete): a failed write deletes only what it still holds.
MATCH (r:Record {id: $record_id})
RETURN r.lease AS lease
