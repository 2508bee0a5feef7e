// A run's trajectories, created in one statement per batch (verifiers/graph_verify.py). A trajectory's steps are
// its step_* list properties (index = t) and a REQUESTED edge to each evidence object a step asked for and got
// (revealed or unavailable): one node per trajectory and one edge per answered request instead of a node and up
// to three edges per step (issue 13). Each evidence object of the batch is looked up once ($evidence, which a
// request names by position k: collected in the order of k, each as [e] so a missing one keeps its place as
// [null]) rather than once per request. clear_run has removed what an earlier scoring of the run wrote, so every node
// and edge here is new: CREATE, not MERGE. The labels and edge types are the ontology's; graph_verify checks each
// endpoint pair against ontology/voe.ttl before the first batch, and compares the counts returned here with the
// rows it sent (a task or an evidence id the graph lacks refuses the whole transaction).
MATCH (run:Node {id: $run_id}) WHERE run:Run
CALL () {
  UNWIND range(0, size($evidence) - 1) AS k
  OPTIONAL MATCH (e:Node {id: $evidence[k]}) WHERE e:Evidence
  WITH k, e ORDER BY k
  RETURN collect([e]) AS evidence
}
UNWIND $rows AS row
MATCH (task:Node {id: row.task_id}) WHERE task:Task
CREATE (tr:Node:Trajectory)
SET tr = row.props
CREATE (tr)-[:IN_RUN]->(run)
CREATE (tr)-[:ATTEMPTS]->(task)
WITH tr, row, evidence
CALL (tr, row, evidence) {
  UNWIND row.requested AS k
  WITH tr, evidence[k][0] AS e WHERE e IS NOT NULL
  CREATE (tr)-[:REQUESTED]->(e)
  RETURN count(*) AS requested
}
RETURN count(tr) AS trajectories, sum(requested) AS requested
