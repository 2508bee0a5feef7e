// Re-verifying a run replaces its trajectories and steps (a run id names one policy, package, seed, passes).
MATCH (:Run {id: $run_id})<-[:IN_RUN]-(tr:Trajectory)
OPTIONAL MATCH (tr)-[:HAS_STEP]->(s:Step)
DETACH DELETE s, tr
