// Uniqueness of ids and the indexes the pipeline's lookups use. Applied idempotently by
// `Graph.apply_schema()` (every statement is IF NOT EXISTS). One constraint per ontology label so that
// label-scoped lookups (MATCH (c:Component {id: ...})) use an index as well.
CREATE CONSTRAINT node_id IF NOT EXISTS FOR (n:Node) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT archive_id IF NOT EXISTS FOR (n:Archive) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT record_id IF NOT EXISTS FOR (n:Record) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT component_id IF NOT EXISTS FOR (n:Component) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT datafile_id IF NOT EXISTS FOR (n:DataFile) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT checksumfile_id IF NOT EXISTS FOR (n:ChecksumFile) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT subcollection_id IF NOT EXISTS FOR (n:Subcollection) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT hiddencomponent_id IF NOT EXISTS FOR (n:HiddenComponent) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT file_id IF NOT EXISTS FOR (n:File) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT evidence_id IF NOT EXISTS FOR (n:Evidence) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT sourcelocation_id IF NOT EXISTS FOR (n:SourceLocation) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT defect_id IF NOT EXISTS FOR (n:Defect) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT workflow_id IF NOT EXISTS FOR (n:Workflow) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT decisionmoment_id IF NOT EXISTS FOR (n:DecisionMoment) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT task_id IF NOT EXISTS FOR (n:Task) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT annotation_id IF NOT EXISTS FOR (n:Annotation) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT judgeverdict_id IF NOT EXISTS FOR (n:JudgeVerdict) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT run_id IF NOT EXISTS FOR (n:Run) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT trajectory_id IF NOT EXISTS FOR (n:Trajectory) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT step_id IF NOT EXISTS FOR (n:Step) REQUIRE n.id IS UNIQUE;
CREATE INDEX node_record_id IF NOT EXISTS FOR (n:Node) ON (n.record_id);
CREATE INDEX node_ingest_stamp IF NOT EXISTS FOR (n:Node) ON (n.ingest_stamp);
CREATE INDEX defect_kind IF NOT EXISTS FOR (n:Defect) ON (n.kind);
CREATE INDEX file_sha256 IF NOT EXISTS FOR (n:File) ON (n.sha256);
CREATE INDEX component_filepath IF NOT EXISTS FOR (n:Component) ON (n.filepath);
