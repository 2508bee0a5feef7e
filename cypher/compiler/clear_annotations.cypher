// Before a compile stores its audit trail: drop the annotations and judge verdicts an earlier compile of the
// same package wrote (a re-compile replaces them, it does not pile them up).
MATCH (n:Node {package: $package})
WHERE n:Annotation OR n:JudgeVerdict
DETACH DELETE n
