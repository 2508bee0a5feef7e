// Upsert ANNOTATES edges between existing nodes; endpoints must carry the labels the writer checked.
UNWIND $rows AS row
MATCH (a:Node {id: row.src}) WHERE row.src_label IN labels(a)
MATCH (b:Node {id: row.dst}) WHERE row.dst_label IN labels(b)
MERGE (a)-[r:ANNOTATES]->(b)
SET r = row.props
RETURN count(r) AS written
