// The graph's schema, applied idempotently by `Graph.apply_schema()` (every statement IF NOT EXISTS).
// Every node carries :Node, so one uniqueness constraint makes every id unique graph-wide and gives
// every write and lookup an index (match on (:Node {id: ...}) then check the label). Per-label
// constraints would double the index upkeep of each write for no extra guarantee.
CREATE CONSTRAINT node_id IF NOT EXISTS FOR (n:Node) REQUIRE n.id IS UNIQUE;
CREATE INDEX node_record_id IF NOT EXISTS FOR (n:Node) ON (n.record_id);
CREATE INDEX defect_kind IF NOT EXISTS FOR (n:Defect) ON (n.kind);
CREATE INDEX file_sha256 IF NOT EXISTS FOR (n:File) ON (n.sha256);
CREATE INDEX component_filepath IF NOT EXISTS FOR (n:Component) ON (n.filepath);
CREATE INDEX answer_task_id IF NOT EXISTS FOR (n:Answer) ON (n.task_id);
