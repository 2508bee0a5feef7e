// Every evidence object with what a reviewer holding the archive would see for it, plus the verifier-only
// facts the compiler decides with (defect ids and kinds never reach a policy: compiler/observations.py
// states facts, compiler/moments.py reads the defects).
// Per item: the record, its component's metadata (declared size, digest, media type, the record's own
// flags), the bytes we hold (recomputed digest, size, parsed format), the checksum files describing it,
// for a folder its direct member files (with their checksum files), the facts it is located at (release
// note rows, changelog lines, reference entries), the first lines of a held text document, and the defects on it or anything inside it
// (each with the sha256 of the bytes it is about, for the source of a finding the compiler states as a fact).
MATCH (r:Record)
WHERE coalesce(r.ingest_state, 'complete') = 'complete'
MATCH (e:Evidence {record_ark: r.ark})
WHERE e.record_id = r.id
OPTIONAL MATCH (e)-[:EVIDENCED_BY]->(c:Component)
OPTIONAL MATCH (c)-[:STORED_AS]->(cf:File)
CALL (c) {
  OPTIONAL MATCH (m:Component)-[:PART_OF*0..]->(c)
  WHERE c IS NOT NULL
  OPTIONAL MATCH (s:ChecksumFile)-[:DESCRIBES]->(m)
  WITH collect(DISTINCT m) + collect(DISTINCT s) AS subjects
  UNWIND subjects AS subject
  MATCH (subject)-[:HAS_DEFECT]->(d:Defect)
  // the digest of the bytes a finding is about: its own location's span, else the subject's held file
  OPTIONAL MATCH (d)-[:LOCATED_AT]->(dl:SourceLocation)
  OPTIONAL MATCH (subject)-[:STORED_AS]->(sf:File)
  WITH subject, d, min(dl.span_sha256) AS located, min(sf.sha256) AS stored
  RETURN collect(DISTINCT {id: d.id, kind: d.kind, rule: d.rule, detail: d.detail, path: d.path, pointer: d.pointer,
                            subject: subject.filepath, sha256: coalesce(located, stored)}) AS defects
}
CALL (c) {
  OPTIONAL MATCH (s:ChecksumFile)-[:DESCRIBES]->(c)
  WHERE c IS NOT NULL
  RETURN collect(DISTINCT {path: s.filepath, declared_sha256: s.declared_sha256, declared_size: s.declared_size,
                           valid: s.valid, held: coalesce(s.held, false), content: s.content}) AS sidecars
}
CALL (c) {
  OPTIONAL MATCH (m:DataFile)-[:PART_OF]->(c)
  WHERE c IS NOT NULL AND NOT m:ChecksumFile
  OPTIONAL MATCH (m)-[:STORED_AS]->(mf:File)
  OPTIONAL MATCH (ms:ChecksumFile)-[:DESCRIBES]->(m)
  WITH m, mf, collect(DISTINCT {path: ms.filepath, declared_sha256: ms.declared_sha256,
                                declared_size: ms.declared_size, valid: ms.valid, held: coalesce(ms.held, false),
                                content: ms.content}) AS member_sidecars
  ORDER BY m.filepath
  RETURN collect(CASE WHEN m IS NULL THEN NULL ELSE {
    path: m.filepath, media_type: m.media_type, declared_size: m.declared_size, declared_sha256: m.declared_sha256,
    held: coalesce(m.held, false), sha256: mf.sha256, size: mf.size, format: mf.format, summary: mf.summary_json,
    sidecars: [x IN member_sidecars WHERE x.path IS NOT NULL]} END) AS members,
    count(DISTINCT m) AS member_count
}
CALL (c) {
  OPTIONAL MATCH (sub:Subcollection)-[:PART_OF]->(c)
  WHERE c IS NOT NULL
  RETURN collect(DISTINCT sub.filepath) AS subfolders
}
CALL (cf) {
  OPTIONAL MATCH (t:SourceLocation {kind: 'line'})-[:IN_FILE]->(cf)
  WHERE cf IS NOT NULL
  WITH t ORDER BY t.line LIMIT 80
  RETURN collect(CASE WHEN t IS NULL THEN NULL ELSE {line: t.line, text: t.text, locator: t.locator,
                                                     sha256: t.span_sha256, path: t.path} END) AS lines
}
CALL (e) {
  OPTIONAL MATCH (e)-[cb:CALIBRATED_BY]->(t:Evidence)
  RETURN collect(CASE WHEN t IS NULL THEN NULL ELSE {target: t.id, statement: cb.statement,
                                                     kind: cb.statement_kind, cell: cb.cell} END) AS calibrated_by
}
CALL (r) {
  OPTIONAL MATCH (r)-[:LOCATED_AT]->(rd:SourceLocation)
  WHERE rd.pointer ENDS WITH '/description' OR rd.pointer ENDS WITH '/releaseHistory'
  WITH rd ORDER BY rd.path, rd.pointer
  WITH collect(rd) AS at
  RETURN [x IN at WHERE x.pointer ENDS WITH '/description' | {path: x.path, locator: x.pointer,
                                                              sha256: x.span_sha256}][0] AS record_description_at,
         [x IN at WHERE x.pointer ENDS WITH '/releaseHistory' | {path: x.path, locator: x.pointer,
                                                                 sha256: x.span_sha256}][0] AS record_history_at
}
OPTIONAL MATCH (e)-[:LOCATED_AT]->(l:SourceLocation)
// one order whatever the store's: the first location is a fact's source (compiler/observations.py) and the release
// statements are shown in this order, so a graph built in another order compiles to the same bytes
WITH r, e, c, cf, defects, sidecars, members, member_count, subfolders, lines, calibrated_by, record_description_at,
     record_history_at, l
ORDER BY l.path, coalesce(l.locator, l.pointer), l.line, l.id
WITH r, e, c, cf, defects, sidecars, members, member_count, subfolders, lines, calibrated_by, record_description_at,
     record_history_at,
     collect(DISTINCT {kind: l.kind, path: l.path, locator: coalesce(l.locator, l.pointer), sha256: l.span_sha256,
                       text: l.text, line: l.line, id: l.id, name: l.name, sheet: l.sheet, cell: l.cell}) AS locations
RETURN r.id AS record_id, r.ark AS ark, r.title AS record_title, r.version AS version,
       coalesce(r.provenance, 'nist_bytes') AS record_provenance, r.description AS record_description,
       coalesce(r.source_format, 'nerdm') AS source_format,
       record_description_at, r.release_history AS record_history, record_history_at,
       r.release_dates_backwards AS release_dates_backwards, r.snapshot_conflict AS snapshot_conflict,
       e.id AS evidence_id, e.kind AS kind, e.title AS title, e.filepath AS filepath, e.provenance AS provenance,
       e.target AS target, e.ref_type AS ref_type, e.available AS evidence_available,
       e.release_status AS release_status, e.release_from AS release_from, e.release_to AS release_to,
       e.renamed_to AS renamed_to, e.renamed_from AS renamed_from, e.listed_in AS listed_in,
       e.sha1 AS release_sha1, e.size AS release_size, coalesce(e.release_stated, false) AS release_stated,
       e.replaced_by AS replaced_by, e.replaces AS replaces, e.release_coverage AS release_coverage,
       e.release_size_delta AS release_size_delta, e.releases AS releases,
       e.workbook AS workbook, e.sheet AS sheet, e.measurement_id AS measurement_id, e.rows AS sheet_rows,
       coalesce(e.calibration_flag, false) AS calibration_flag, coalesce(e.calibration_claims, []) AS calibration_claims,
       calibrated_by, e.version_status AS version_status, e.version_from AS version_from,
       e.version_to AS version_to, e.version_statement AS version_statement, e.version_coverage AS version_coverage,
       e.version_changed AS version_changed, e.version_before_json AS version_before_json,
       CASE WHEN e.provenance IN ['release_notes', 'measurement'] THEN coalesce(e.available, true)
            ELSE coalesce(e.available, true) AND c IS NOT NULL END AS available,
       c IS NOT NULL AND c:Subcollection AS is_folder,
       c.filepath AS component_path, c.media_type AS media_type, c.declared_size AS declared_size,
       c.declared_sha256 AS declared_sha256, c.held AS held, c.download_url AS download_url,
       c.description AS description, c.entity_id AS crate_entity, c.found_at AS crate_found_at,
       c.described AS crate_described, r.crate_root AS crate_root, r.source_path AS record_source,
       cf.sha256 AS local_sha256, cf.size AS local_size, cf.format AS local_format,
       cf.summary_json AS local_summary,
       defects, [x IN sidecars WHERE x.path IS NOT NULL] AS sidecars, members, member_count, subfolders, lines,
       locations
ORDER BY record_id, evidence_id
