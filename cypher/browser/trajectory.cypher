// A trajectory step by step: the evidence it requested drawn with each request's step (`t` on the REQUESTED edge,
// in order), the task it attempts (a row of its policy-visible fields) and every step as a row, in order, from the
// trajectory's step_action, step_outcome and step_evidence_id lists (index = t); the verifiers' verdict is on the
// trajectory's properties. (A run scored before graph shape 4 has no `t` on its edges: `voe score` it again.)
MATCH (tr:Trajectory {id: $trajectory_id})-[:ATTEMPTS]->(attempted:Task)
OPTIONAL MATCH asked = (tr)-[q:REQUESTED]->(e:Evidence)
WITH tr, attempted, asked, q, e ORDER BY q.t
WITH tr, attempted, collect(asked) AS asked, collect([e.id, e.caption]) AS shown,
     coalesce(tr.step_outcome, []) AS outcomes
RETURN tr AS trajectory, attempted {.id, .question, .horizon} AS task, asked,
       [t IN range(0, size(outcomes) - 1) |
        {t: t, action: tr.step_action[t], outcome: outcomes[t], evidence_id: tr.step_evidence_id[t],
         evidence: head([x IN shown WHERE x[0] = tr.step_evidence_id[t] | x[1]])}] AS steps
