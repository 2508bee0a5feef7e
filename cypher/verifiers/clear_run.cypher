// Re-verifying a run replaces its Run node and trajectories (a run id names one policy, package, seed, passes);
// graph_verify writes the Run node again in the same transaction. A run scored before issue 13 has Step nodes
// hanging off its trajectories (labels no longer in the ontology, so they are matched as what a trajectory points
// at beyond its run, task and evidence) and they go too.
MATCH (run:Run {id: $run_id})
OPTIONAL MATCH (run)<-[:IN_RUN]-(tr:Trajectory)
OPTIONAL MATCH (tr)-->(old:Node) WHERE NOT (old:Run OR old:Task OR old:Evidence)
DETACH DELETE old, tr, run
