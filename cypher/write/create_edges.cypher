// Create edges of one type ($type) between endpoints of one label each ($src_label, $dst_label), all checked
// against ontology/ by the writer, that cannot exist yet: one of their endpoints was created by this write and
// nothing else can have linked it. The labels come once per statement, not per row (each row is work for the
// client and the driver, a million times in a large ingest). Endpoints must carry the labels the writer checked.
UNWIND $rows AS row
MATCH (a:Node {id: row.src}) WHERE $src_label IN labels(a)
MATCH (b:Node {id: row.dst}) WHERE $dst_label IN labels(b)
CREATE (a)-[r:$($type)]->(b)
SET r = row.props
RETURN count(r) AS written
