// The complete records the curator's report covers (all of them, or the ones named), with their contact.
MATCH (r:Record)
WHERE coalesce(r.ingest_state, 'complete') = 'complete' AND ($records IS NULL OR r.id IN $records)
RETURN r.id AS record_id, r.ark AS ark, r.version AS version, r.title AS title, r.contact_name AS contact_name,
       r.contact_email AS contact_email, coalesce(r.provenance, 'nist_bytes') AS provenance
ORDER BY record_id
