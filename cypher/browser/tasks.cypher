// The tasks of a package by workflow: the place to start a review. Workflows are drawn; the tasks are rows of
// their policy-visible fields (`voe browse TASK_ID` opens one).
MATCH (t:Task {package: $package})-[:IN_WORKFLOW]->(w:Workflow)
RETURN w AS workflow, collect(t {.id, .question, .horizon}) AS tasks
