// Verifier-only: a task with its answer (family, accepted classes, what a payload must bind, the reference's needs),
// the items the answer binds and the decision moment it was derived from. For a curator checking a gold, never for
// a policy: `voe browse TASK_ID --answers` is the one way to it (the Answer node is joined by the task's id; no
// relationship reaches it, so no expansion in Browser does).
MATCH task = (t:Task {id: $task_id})
MATCH (ans:Answer {task_id: $task_id})
OPTIONAL MATCH binds = (t)-[:OFFERS]->(e:Evidence) WHERE e.id IN ans.binding
OPTIONAL MATCH derived = (t)-[:DERIVED_FROM]->(:DecisionMoment)
RETURN task, ans AS answer, collect(DISTINCT binds) AS binds, collect(DISTINCT derived) AS derived
