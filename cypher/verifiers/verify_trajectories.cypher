// The three checks of DESIGN §6 for every trajectory of a run, in one batch:
// (1) action valid: the terminal class is one the task accepts;
// (2) payload bound: every payload id is evidence the trajectory actually requested;
// (3) grounded: everything the reference needs to justify its class was requested.
MATCH (:Run {id: $run_id})<-[:IN_RUN]-(tr:Trajectory)-[:ATTEMPTS]->(t:Task)
CALL (tr) {
  OPTIONAL MATCH (tr)-[:HAS_STEP]->(:Step)-[:REQUESTED]->(e:Evidence)
  RETURN collect(DISTINCT e.id) AS pulled
}
OPTIONAL MATCH (tr)-[:TERMINATED_WITH]->(term:Step)
WITH tr, t, pulled, term,
     term IS NOT NULL AND term.action IN t.accepted_classes AS action_valid,
     term IS NOT NULL AND all(p IN coalesce(term.payload, []) WHERE p IN pulled) AS payload_bound,
     all(n IN t.needed WHERE n IN pulled) AS grounded
RETURN tr.id AS trajectory_id, t.id AS task_id, action_valid, payload_bound, grounded,
       action_valid AND payload_bound AND grounded AS valid
ORDER BY trajectory_id
