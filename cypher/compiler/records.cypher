// The records a package is compiled from, with the stamps that fix their content (the graph hash).
MATCH (r:Record)
WHERE coalesce(r.ingest_state, 'complete') = 'complete'
RETURN r.id AS record_id, r.ark AS ark, r.version AS version, r.title AS title, r.ingest_stamp AS stamp,
       coalesce(r.provenance, 'nist_bytes') AS provenance
ORDER BY record_id
