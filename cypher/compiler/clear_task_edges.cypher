// Before a compile stores its tasks: the tasks and decision moments of these ids lose every relationship they have
// but a trajectory's ATTEMPTS (menus, bindings and workflows an earlier compile gave them; BINDS is an earlier voe's)
// and every property but their id, so nothing of an answer an older graph kept on them stays where a reviewer can
// expand to it; the compile then writes them again.
UNWIND $task_ids AS task_id
MATCH (t:Task {id: task_id})
OPTIONAL MATCH (t)-[r:OFFERS|BINDS|IN_WORKFLOW|DERIVED_FROM]->()
DELETE r
WITH DISTINCT t
SET t = {id: t.id}
WITH count(*) AS tasks
UNWIND $moment_ids AS moment_id
MATCH (m:DecisionMoment {id: moment_id})
SET m = {id: m.id}
