// Whether the graph holds a task of this id (`voe browse TASK_ID` refuses one it does not).
OPTIONAL MATCH (t:Task {id: $task_id})
RETURN count(t) AS tasks
