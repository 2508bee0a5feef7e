// A run's trajectories, created in one statement per batch (verifiers/graph_verify.py), and verified as they are
// written. A trajectory's steps are its step_* list properties (index = t) and a REQUESTED edge to each evidence
// object a step asked for and got (revealed or unavailable): one node per trajectory and one edge per answered
// request instead of a node and up to three edges per step (issue 13). Each evidence object of the batch is looked
// up once ($evidence, which a request names by position k: collected in the order of k, each as [e] so a missing
// one keeps its place as [null]) rather than once per request. clear_run has removed what an earlier scoring of the
// run wrote, so every node and edge here is new: CREATE, not MERGE. The labels and edge types are the ontology's;
// graph_verify checks each endpoint pair against ontology/voe.ttl before the first batch, and compares the counts
// returned here with the rows it sent (a task or an evidence id the graph lacks refuses the whole transaction).
MATCH (run:Node {id: $run_id}) WHERE run:Run
CALL () {
  UNWIND range(0, size($evidence) - 1) AS k
  OPTIONAL MATCH (e:Node {id: $evidence[k]}) WHERE e:Evidence
  WITH k, e ORDER BY k
  RETURN collect([e]) AS evidence
}
UNWIND $rows AS row
MATCH (t:Node {id: row.task_id}) WHERE t:Task
CREATE (tr:Node:Trajectory)
SET tr = row.props
CREATE (tr)-[:IN_RUN]->(run)
CREATE (tr)-[:ATTEMPTS]->(t)
WITH run, tr, t, row, evidence
CALL (tr, row, evidence) {
  UNWIND range(0, size(row.requested) - 1) AS i
  WITH tr, row.requested[i] AS k, row.requested_t[i] AS t
  WITH tr, k, t, evidence[k][0] AS e WHERE e IS NOT NULL
  // t: the step that asked, so a drawing of the trajectory reads its requests in order
  CREATE (tr)-[:REQUESTED {t: t}]->(e)
  // the ids of what was just linked, the very ids the evidence was matched by: the verifier reads the ids of
  // the REQUESTED edges' ends without going back to the graph for them (a third of a verify query's time)
  RETURN count(*) AS requested, collect($evidence[k]) AS pulled
}
WITH run, tr, t, requested, pulled
// the answer: a node no relationship reaches, joined by its task id (compiler/package.py _store)
OPTIONAL MATCH (ans:Answer {task_id: t.id})
// include: verifiers/verdict
// a verdict for each trajectory of a task of the run's package, as verify_trajectories gives them
RETURN count(tr) AS trajectories, sum(requested) AS requested,
       collect(CASE WHEN t.package = run.content_hash THEN [tr.id, t.id, action_valid, payload_bound, grounded] END)
         AS verdicts
