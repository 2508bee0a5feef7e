// How many tasks of a package the graph holds with their answers (scoring needs every one; a graph compiled by an
// earlier voe keeps answers on its Task nodes, not in Answer nodes, and is compiled again).
MATCH (t:Task {package: $package})
WHERE EXISTS { MATCH (:Answer {task_id: t.id}) }
RETURN count(t) AS tasks
