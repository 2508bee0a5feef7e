// Checksum-file defects the archive itself resolves (DESIGN §5: a fact resolved elsewhere follows its
// resolution), one row per (defect, how, evidence item on the resolving file's folder chain) with the depth, so
// the compiler binds the resolution to the nearest evidence item:
// - by a copy: the item's checksum file is marked invalid or disagrees, while another file of the same record
//   declares the same digest and size and its own checksum file is valid and agrees (neither carries a defect);
//   the copy is what a reader checks the item by;
// - by the data: the checksum file is marked invalid, yet what the record declares of it agrees with the item
//   (its recorded digest is the digest of the item's declared digest, no mismatch found): the flag is stale.
// - by a second manifest (below).
// Either way the item stands and the stale declaration is the curator's to fix.
MATCH (r:Record)-[:HAS_COMPONENT]->(s:ChecksumFile)-[:HAS_DEFECT]->(d:Defect)
WHERE coalesce(r.ingest_state, 'complete') = 'complete'
  AND d.kind IN ['sidecar_marked_invalid', 'sidecar_checksum_mismatch']
MATCH (s)-[:DESCRIBES]->(t:DataFile)
WHERE t.declared_sha256 IS NOT NULL
CALL (r, s, t, d) {
  MATCH (r)-[:HAS_COMPONENT]->(copy:DataFile)<-[:DESCRIBES]-(s2:ChecksumFile)
  WHERE copy <> t AND copy.declared_sha256 = t.declared_sha256
    AND coalesce(copy.declared_size, -1) = coalesce(t.declared_size, -1)
    AND coalesce(s2.valid, true) AND NOT (s2)-[:HAS_DEFECT]->(:Defect) AND NOT (copy)-[:HAS_DEFECT]->(:Defect)
  RETURN 'copy' AS how, copy AS by, s2.filepath AS by_sidecar
  UNION
  WITH r, s, t, d
  WHERE d.kind = 'sidecar_marked_invalid' AND s.declared_sha256 IS NOT NULL
    AND NOT (s)-[:HAS_DEFECT]->(:Defect {kind: 'sidecar_checksum_mismatch'})
  RETURN 'data' AS how, t AS by, s.filepath AS by_sidecar
}
MATCH p = (by)-[:PART_OF*0..]->(holder:Component)<-[:EVIDENCED_BY]-(e:Evidence)
RETURN d.id AS defect_id, how, t.filepath AS item, by.filepath AS copy, by_sidecar AS copy_sidecar,
       s.filepath AS stale_sidecar, e.id AS copy_evidence, length(p) AS depth
UNION
// - by a second manifest: a bag's NERDm metadata declares another digest than the file's bytes, while the bag's
//   payload manifest lists the file and agrees with them (no manifest finding on it)
MATCH (r:Record)-[:HAS_COMPONENT]->(f:DataFile)-[:HAS_DEFECT]->(d:Defect {rule: 'bag.nerdm.sha256'})
WHERE coalesce(r.ingest_state, 'complete') = 'complete'
  AND NOT (f)-[:HAS_DEFECT]->(:Defect {rule: 'bag.manifest'}) AND (f)-[:LOCATED_AT]->(:SourceLocation {kind: 'line'})
MATCH p = (f)-[:PART_OF*0..]->(holder:Component)<-[:EVIDENCED_BY]-(e:Evidence)
RETURN d.id AS defect_id, 'manifest' AS how, f.filepath AS item, f.filepath AS copy, null AS copy_sidecar,
       d.path AS stale_sidecar, e.id AS copy_evidence, length(p) AS depth
UNION
// - by an RO-Crate's second statement (ingest/sources/rocrate.py): the crate's metadata declares another sha256 than
//   the file's bytes while a digest list inside the crate lists the file with the digest they have (a line located
//   on it and no line of any list disagreeing); or a list's line disagrees with the bytes while the crate's own
//   sha256 is theirs. The statement that disagrees is stale; the file stands.
MATCH (r:Record)-[:HAS_COMPONENT]->(f:DataFile)-[:HAS_DEFECT]->(d:Defect)
WHERE coalesce(r.ingest_state, 'complete') = 'complete' AND d.rule IN ['crate.sha256', 'crate.manifest']
OPTIONAL MATCH (f)-[:LOCATED_AT]->(l:SourceLocation {kind: 'line'})
OPTIONAL MATCH (f)-[:STORED_AS]->(b:File)
WITH r, f, d, min(l.path) AS listed_in, collect(DISTINCT b.sha256) AS held
WHERE (d.rule = 'crate.sha256' AND listed_in IS NOT NULL
       AND NOT (f)-[:HAS_DEFECT]->(:Defect {rule: 'crate.manifest'}))
   OR (d.rule = 'crate.manifest' AND f.declared_sha256 IN held
       AND NOT (f)-[:HAS_DEFECT]->(:Defect {rule: 'crate.sha256'}))
MATCH p = (f)-[:PART_OF*0..]->(holder:Component)<-[:EVIDENCED_BY]-(e:Evidence)
RETURN d.id AS defect_id, CASE d.rule WHEN 'crate.sha256' THEN 'crate_list' ELSE 'crate_metadata' END AS how,
       f.filepath AS item, f.filepath AS copy, CASE d.rule WHEN 'crate.sha256' THEN listed_in ELSE d.path END
       AS copy_sidecar, d.path AS stale_sidecar, e.id AS copy_evidence, length(p) AS depth
