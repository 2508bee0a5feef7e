// Every evidence object with what a request for it would return: its record, kind, title, whether the
// archive holds an acquisition path, the defects on it (its component, the members of a folder, and
// the checksum sidecars describing either) and the facts it is located at.
MATCH (r:Record)
WHERE coalesce(r.ingest_state, 'complete') = 'complete'
MATCH (e:Evidence {record_ark: r.ark})
WHERE e.record_id = r.id
OPTIONAL MATCH (e)-[:EVIDENCED_BY]->(c:Component)
CALL (c) {
  OPTIONAL MATCH (m:Component)-[:PART_OF*0..]->(c)
  WHERE c IS NOT NULL
  OPTIONAL MATCH (s:ChecksumFile)-[:DESCRIBES]->(m)
  WITH collect(DISTINCT m) + collect(DISTINCT s) AS subjects
  UNWIND subjects AS subject
  MATCH (subject)-[:HAS_DEFECT]->(d:Defect)
  RETURN collect(DISTINCT {id: d.id, kind: d.kind, detail: d.detail, subject: subject.filepath}) AS defects
}
CALL (c) {
  OPTIONAL MATCH (m:DataFile)-[:PART_OF]->(c)
  RETURN min(m.filepath) AS first_member
}
OPTIONAL MATCH (e)-[:LOCATED_AT]->(l:SourceLocation)
WITH r, e, c, defects, first_member, collect(DISTINCT {kind: l.kind, path: l.path, locator: coalesce(l.locator, l.pointer),
                                          sha256: l.span_sha256}) AS locations
RETURN r.id AS record_id, r.ark AS ark, r.title AS record_title, r.version AS version,
       coalesce(r.provenance, 'nist_bytes') AS record_provenance,
       e.id AS evidence_id, e.kind AS kind, e.title AS title, e.filepath AS filepath, e.provenance AS provenance,
       e.target AS target, first_member,
       coalesce(e.available, true) AND c IS NOT NULL AS available,
       c.filepath AS component_path, c.media_type AS media_type, c.declared_size AS declared_size,
       c.declared_sha256 AS declared_sha256, c.held AS held, c.download_url AS download_url,
       defects, locations
ORDER BY record_id, evidence_id
