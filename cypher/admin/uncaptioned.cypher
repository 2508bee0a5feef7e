// Nodes an earlier voe ingested without a Browser caption (voe db captions makes them as ingest does now), a batch
// at a time after the id $after: the id index walks them in order, so each batch starts where the last one ended.
MATCH (n:Node)
WHERE n.id > $after AND n.caption IS NULL
  AND (n:SourceLocation OR n:Component OR n:File OR n:Defect OR n:Record OR n:Evidence)
RETURN n.id AS id, labels(n) AS labels, properties(n) AS props
ORDER BY n.id
LIMIT $limit
