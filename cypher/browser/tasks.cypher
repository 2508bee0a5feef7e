// The tasks of a package with their workflows: the place to start a review.
MATCH p = (t:Task {package: $package})-[:IN_WORKFLOW]->(:Workflow)
RETURN p
