// Verifier-only: a task with its answer (accepted classes, what a payload must bind, the reference), the items it
// binds and the decision moment it was derived from. For a curator checking a gold, never for a policy.
MATCH task = (t:Task {id: $task_id})
OPTIONAL MATCH binds = (t)-[:BINDS]->(:Evidence)
OPTIONAL MATCH derived = (t)-[:DERIVED_FROM]->(:DecisionMoment)
RETURN task, collect(DISTINCT binds) AS binds, collect(DISTINCT derived) AS derived
