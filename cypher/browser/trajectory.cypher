// A trajectory step by step: the task it attempts and the evidence its steps requested; the steps themselves are the trajectory's step_action, step_outcome and
// step_evidence_id lists (index = t), and the verifiers' verdict is on the trajectory's properties.
MATCH attempt = (tr:Trajectory {id: $trajectory_id})-[:ATTEMPTS]->(:Task)
OPTIONAL MATCH asked = (tr)-[:REQUESTED]->(:Evidence)
RETURN attempt, collect(asked) AS asked,
       [t IN range(0, size(tr.step_outcome) - 1) |
        {t: t, action: tr.step_action[t], outcome: tr.step_outcome[t], evidence_id: tr.step_evidence_id[t]}] AS steps
