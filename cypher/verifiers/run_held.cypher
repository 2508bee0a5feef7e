// What the graph holds of a run already: the digest of the files it was written from, and how many of its
// trajectories are still attached to their task (a recompile of the package replaces the Task nodes).
MATCH (run:Node {id: $run_id}) WHERE run:Run
RETURN run.files_sha256 AS files_sha256, COUNT { (run)<-[:IN_RUN]-(:Trajectory)-[:ATTEMPTS]->(:Task) } AS attached
