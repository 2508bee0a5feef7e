// Create edges of one type ($type, checked against ontology/ by the writer) that cannot exist yet: one of
// their endpoints was created by this write and nothing else can have linked it. Endpoints must carry the
// labels the writer checked.
UNWIND $rows AS row
MATCH (a:Node {id: row.src}) WHERE row.src_label IN labels(a)
MATCH (b:Node {id: row.dst}) WHERE row.dst_label IN labels(b)
CREATE (a)-[r:$($type)]->(b)
SET r = row.props
RETURN count(r) AS written
