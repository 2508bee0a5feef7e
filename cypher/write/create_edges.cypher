// Create edges of one type ($type) between endpoints of one label each ($src_label, $dst_label), all checked
// against ontology/ by the writer, that cannot exist yet: one of their endpoints was created by this write and
// nothing else can have linked it. The labels come once per statement, not per row (each row is work for the
// client and the driver, a million times in a large ingest). Endpoints must carry the labels the writer checked:
// a label test on the node found through the index of the id constraint (cheaper for the server than `$label IN labels(a)`).
UNWIND $rows AS row
MATCH (a:Node:$($src_label) {id: row.src})
MATCH (b:Node:$($dst_label) {id: row.dst})
CREATE (a)-[r:$($type)]->(b)
SET r = row.props
RETURN count(r) AS written
