// Checksum-file defects the archive itself resolves (DESIGN §5: a fact resolved elsewhere follows its
// resolution): the item's checksum file is marked invalid or disagrees with the item's declared digest, while
// another file of the same record declares the same digest and size and its own checksum file is valid and
// agrees (neither carries a defect). The item's bytes are checkable through the copy; the stale checksum file is
// the curator's to fix. One row per (defect, copy, evidence on the copy's folder chain) with the depth, so the
// compiler binds the copy to its nearest evidence item.
MATCH (r:Record)-[:HAS_COMPONENT]->(s:ChecksumFile)-[:HAS_DEFECT]->(d:Defect)
WHERE coalesce(r.ingest_state, 'complete') = 'complete'
  AND d.kind IN ['sidecar_marked_invalid', 'sidecar_checksum_mismatch']
MATCH (s)-[:DESCRIBES]->(t:DataFile)
WHERE t.declared_sha256 IS NOT NULL
MATCH (r)-[:HAS_COMPONENT]->(copy:DataFile)<-[:DESCRIBES]-(s2:ChecksumFile)
WHERE copy <> t AND copy.declared_sha256 = t.declared_sha256
  AND coalesce(copy.declared_size, -1) = coalesce(t.declared_size, -1)
  AND coalesce(s2.valid, true) AND NOT (s2)-[:HAS_DEFECT]->(:Defect) AND NOT (copy)-[:HAS_DEFECT]->(:Defect)
MATCH p = (copy)-[:PART_OF*0..]->(holder:Component)<-[:EVIDENCED_BY]-(e:Evidence)
RETURN d.id AS defect_id, t.filepath AS item, copy.filepath AS copy, s2.filepath AS copy_sidecar,
       s.filepath AS stale_sidecar, e.id AS copy_evidence, length(p) AS depth
ORDER BY defect_id, depth, copy, copy_evidence
