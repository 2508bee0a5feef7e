// File nodes are content-addressed and shared between records; drop the ones nothing points to any more.
// Another ingest may be linking one of them right now: each candidate is write-locked first (the SET), then
// checked again, so a link committed meanwhile keeps the file (the marker is removed in the same statement).
MATCH (f:File)
WHERE NOT EXISTS { ()-[:STORED_AS|IN_FILE|EVIDENCED_BY]->(f) }
SET f.pruning = true
WITH f
CALL (f) {
  WITH f
  WHERE NOT EXISTS { ()-[:STORED_AS|IN_FILE|EVIDENCED_BY]->(f) }
  DETACH DELETE f
  RETURN 1 AS gone
UNION
  WITH f
  WHERE EXISTS { ()-[:STORED_AS|IN_FILE|EVIDENCED_BY]->(f) }
  REMOVE f.pruning
  RETURN 0 AS gone
}
RETURN count(*) AS checked
