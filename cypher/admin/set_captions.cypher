// The captions voe db captions made for nodes that had none (a caption an ingest wrote meanwhile is kept).
UNWIND $rows AS row
MATCH (n:Node {id: row.id})
WHERE n.caption IS NULL
SET n.caption = row.caption
RETURN count(n) AS captioned
