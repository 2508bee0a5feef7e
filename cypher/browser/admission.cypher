// Why each candidate of a package was admitted or rejected: the annotation's filter verdicts, the judge's
// failed criteria, and the task it became.
MATCH (a:Annotation {package: $package})
OPTIONAL MATCH (t:Task)-[:FRAMED_BY]->(a)
OPTIONAL MATCH (v:JudgeVerdict)-[:JUDGES]->(a)
RETURN a.moment_id AS moment, a.admitted AS admitted, a.filter_failures AS why, v.failed_criteria AS judge_failed,
       t.id AS task, a.annotator AS annotator
ORDER BY admitted, moment
