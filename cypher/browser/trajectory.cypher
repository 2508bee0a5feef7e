// A trajectory step by step: the evidence its steps requested (drawn), the task it attempts (a row of its
// policy-visible fields) and the steps themselves from the trajectory's step_action, step_outcome and
// step_evidence_id lists (index = t); the verifiers' verdict is on the trajectory's properties. (A trajectory scored
// before graph shape 2 has no lists: no steps.)
MATCH (tr:Trajectory {id: $trajectory_id})-[:ATTEMPTS]->(attempted:Task)
OPTIONAL MATCH asked = (tr)-[:REQUESTED]->(:Evidence)
WITH tr, attempted, collect(asked) AS asked, coalesce(tr.step_outcome, []) AS outcomes
RETURN tr AS trajectory, attempted {.id, .question, .horizon} AS task, asked,
       [t IN range(0, size(outcomes) - 1) |
        {t: t, action: tr.step_action[t], outcome: outcomes[t], evidence_id: tr.step_evidence_id[t]}] AS steps
