// The first statement of a record written in one transaction: the Record's id locked (created bare if new, and
// gone again if the transaction rolls back), so no write in several transactions can take its lease meanwhile.
MERGE (r:Node {id: $record_id})
ON CREATE SET r:Record, r.record_id = $record_id
