// A task's menu: each offered evidence item, the component and bytes behind it, and the source locations
// (file, pointer or line, span hash) of the facts a request of it returns.
MATCH menu = (t:Task {id: $task_id})-[:OFFERS]->(e:Evidence)
OPTIONAL MATCH held = (e)-[:EVIDENCED_BY]->(:Component)-[:STORED_AS]->(:File)
OPTIONAL MATCH located = (e)-[:LOCATED_AT]->(:SourceLocation)-[:IN_FILE]->(:File)
RETURN menu, held, located
