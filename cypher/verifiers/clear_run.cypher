// Re-verifying a run replaces its Run node and trajectories (a run id names one policy, package, seed, passes);
// graph_verify writes the Run node again in the same transaction. A run scored before issue 13 has Step nodes
// hanging off its trajectories (labels no longer in the ontology, so they are matched as what a trajectory points
// at beyond its run, task and evidence) and they go too. So do trajectories of the run left without their Run node
// (a Run deleted by hand in the Browser keeps them, and their ids, the run id and a "/" first, would collide with
// the new ones).
OPTIONAL MATCH (run:Run {id: $run_id})
WITH run, [(run)<-[:IN_RUN]-(tr:Trajectory) | tr]
          + COLLECT { MATCH (tr:Node) WHERE tr.id STARTS WITH $run_id + '/' AND tr:Trajectory
                      AND NOT (tr)-[:IN_RUN]->() RETURN tr } AS trajectories
UNWIND CASE WHEN trajectories = [] THEN [null] ELSE trajectories END AS tr
OPTIONAL MATCH (tr)-->(old:Node) WHERE NOT (old:Run OR old:Task OR old:Evidence)
DETACH DELETE old, tr, run
