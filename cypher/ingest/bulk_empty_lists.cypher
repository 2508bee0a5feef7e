// After a bulk import (ingest/write/bulk.py): the empty-list properties, which neo4j-admin's CSV import cannot write
// (an empty array field reads as no value), set as the online writer sets them.
UNWIND $rows AS row
MATCH (n:Node {id: row.id})
SET n += row.props
