// A trajectory step by step: the task it attempts and the evidence its steps requested; the steps themselves
// are the trajectory's step_action, step_outcome and step_evidence_id lists (index = t), and the verifiers'
// verdict is on the trajectory's properties. (A trajectory scored before graph shape 2 has no lists: no steps.)
MATCH attempt = (tr:Trajectory {id: $trajectory_id})-[:ATTEMPTS]->(:Task)
OPTIONAL MATCH asked = (tr)-[:REQUESTED]->(:Evidence)
WITH attempt, tr, collect(asked) AS asked, coalesce(tr.step_outcome, []) AS outcomes
RETURN attempt, asked,
       [t IN range(0, size(outcomes) - 1) |
        {t: t, action: tr.step_action[t], outcome: outcomes[t], evidence_id: tr.step_evidence_id[t]}] AS steps
