"""Writing a record's graph: online, chunked and swapped in at one commit point (loader), or as a first bulk load
of an empty database through neo4j-admin (bulk)."""
