// A task's menu: each offered evidence item, the component and bytes behind it, and the source locations
// (file, pointer or line, span hash) of the facts a request of it returns. The task itself comes as a row of its
// policy-visible fields (the Task node carries the verifier's answer: `task_answers` shows it, when asked).
MATCH (t:Task {id: $task_id})-[:OFFERS]->(e:Evidence)
OPTIONAL MATCH held = (e)-[:EVIDENCED_BY]->(:Component)-[:STORED_AS]->(:File)
OPTIONAL MATCH located = (e)-[:LOCATED_AT]->(:SourceLocation)-[:IN_FILE]->(:File)
RETURN t {.id, .question, .horizon} AS task, e AS evidence, held, located
