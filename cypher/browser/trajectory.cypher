// A trajectory step by step: the task it attempts, each step with the evidence it requested, and its terminal
// step; the verifiers' verdict is on the trajectory's properties.
MATCH attempt = (tr:Trajectory {id: $trajectory_id})-[:ATTEMPTS]->(:Task)
OPTIONAL MATCH steps = (tr)-[:HAS_STEP]->(s:Step)
OPTIONAL MATCH asked = (s)-[:REQUESTED]->(:Evidence)
OPTIONAL MATCH ended = (tr)-[:TERMINATED_WITH]->(:Step)
RETURN attempt, steps, asked, ended
