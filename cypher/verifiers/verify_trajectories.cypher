// The verifier over every trajectory of a run the graph holds, in one batch (a run written by this scoring is
// verified as its batches are written: write_trajectories). Only tasks of the run's package count: the graph may
// also hold tasks of other compiles.
MATCH (run:Run {id: $run_id})<-[:IN_RUN]-(tr:Trajectory)-[:ATTEMPTS]->(t:Task)
WHERE t.package = run.content_hash
// a pattern comprehension, not a CALL subquery with collect(DISTINCT e.id): 10-15 % faster at 870 trajectories, and
// a repeated id changes no membership test
// the answer: a node no relationship reaches, joined by its task id (compiler/package.py _store)
MATCH (ans:Answer {task_id: t.id})
WITH tr, t, ans, [(tr)-[:REQUESTED]->(e:Evidence) | e.id] AS pulled
// include: verifiers/verdict
// one row for the whole run: the driver's cost per record is most of the query's wall time for a few thousand
// small rows (graph_verify.verdicts reads the list back as one Verdict per trajectory)
RETURN collect([tr.id, t.id, action_valid, payload_bound, grounded]) AS verdicts
