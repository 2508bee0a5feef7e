// Staged nodes whose real id another record holds (content-addressed ids, such as source locations in bytes
// two records hold): the node under the real id takes the staged node's labels, properties and
// relationships, as a direct write would have made it, and the staged node goes. (Run after rename_staged:
// only such nodes are left under the staged record id.)
MATCH (s:Record {id: $staged})
WHERE s.lease = $lease  // only the swap's holder
MATCH (n:Node {record_id: $staged})
WHERE NOT n:Record
CALL (n) {
  MATCH (m:Node {id: substring(n.id, size(CASE WHEN n.id STARTS WITH $prefix THEN $prefix ELSE $legacy END))})
  SET m = n {.*, id: substring(n.id, size(CASE WHEN n.id STARTS WITH $prefix THEN $prefix ELSE $legacy END)), record_id: $record_id}
  SET m:$(labels(n))
  WITH n, m
  CALL (n, m) {
    MATCH (a)-[r]->(n)
    WITH a, m, type(r) AS t, properties(r) AS p
    MERGE (a)-[r2:$(t)]->(m)
    SET r2 = p
  }
  CALL (n, m) {
    MATCH (n)-[r]->(b)
    WITH b, m, type(r) AS t, properties(r) AS p
    MERGE (m)-[r2:$(t)]->(b)
    SET r2 = p
  }
  DETACH DELETE n
} IN TRANSACTIONS OF 1000 ROWS
