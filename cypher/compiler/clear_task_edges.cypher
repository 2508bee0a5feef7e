// Before a compile stores its tasks: drop the menus and bindings an earlier compile gave the same task ids.
UNWIND $task_ids AS task_id
MATCH (t:Task {id: task_id})-[r:OFFERS|BINDS]->()
DELETE r
