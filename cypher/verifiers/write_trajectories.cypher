// A run's trajectories and their steps, created in one statement per batch (verifiers/graph_verify.py).
// clear_run has removed what an earlier scoring of the run wrote, so every node and edge here is new: CREATE,
// not MERGE. The labels and edge types are the ontology's; graph_verify checks each endpoint pair against
// ontology/voe.ttl before the first batch, and compares the counts returned here with the rows it sent (a task
// or an evidence id the graph lacks refuses the whole transaction, as the generic writer would).
MATCH (run:Node {id: $run_id}) WHERE run:Run
UNWIND $rows AS row
MATCH (task:Node {id: row.task_id}) WHERE task:Task
CREATE (tr:Node:Trajectory)
SET tr = row.props
CREATE (tr)-[:IN_RUN]->(run)
CREATE (tr)-[:ATTEMPTS]->(task)
WITH tr, row
CALL (tr, row) {
  UNWIND row.steps AS s
  CREATE (st:Node:Step)
  SET st = s.props
  CREATE (tr)-[:HAS_STEP]->(st)
  WITH tr, st, s
  CALL (tr, st, s) {
    WITH tr, st, s WHERE s.terminal
    CREATE (tr)-[:TERMINATED_WITH]->(st)
  }
  WITH st, s WHERE s.requested IS NOT NULL
  MATCH (e:Node {id: s.requested}) WHERE e:Evidence
  CREATE (st)-[:REQUESTED]->(e)
  RETURN count(*) AS requested
}
RETURN count(tr) AS trajectories, sum(requested) AS requested
