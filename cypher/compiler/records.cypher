// The records a package is compiled from, with the stamps that fix their content (the graph hash), and the
// terms and publisher their archive states (the export's license and publisher).
MATCH (r:Record)
WHERE coalesce(r.ingest_state, 'complete') = 'complete'
RETURN r.id AS record_id, r.ark AS ark, r.version AS version, r.title AS title, r.ingest_stamp AS stamp,
       coalesce(r.provenance, 'nist_bytes') AS provenance, r.license AS license, r.publisher AS publisher,
       r.landing_page AS landing_page
ORDER BY record_id
