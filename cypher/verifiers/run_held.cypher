// What the graph holds of a run already: the digest of the files it was written from, the shape it was written
// in (graph_verify.GRAPH_SHAPE), and how many of its trajectories are still attached to their task (a recompile
// of the package replaces the Task nodes).
MATCH (run:Node {id: $run_id}) WHERE run:Run
RETURN run.files_sha256 AS files_sha256, run.graph_shape AS graph_shape,
       COUNT { (run)<-[:IN_RUN]-(:Trajectory)-[:ATTEMPTS]->(:Task) } AS attached
