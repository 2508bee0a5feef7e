// File nodes are content-addressed and shared between records; drop the ones nothing points to any more.
MATCH (f:File)
WHERE NOT EXISTS { ()-[:STORED_AS|IN_FILE|EVIDENCED_BY]->(f) }
DETACH DELETE f
