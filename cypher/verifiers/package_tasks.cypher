// How many tasks of a package the graph holds (scoring needs every one).
MATCH (t:Task {package: $package})
RETURN count(t) AS tasks
