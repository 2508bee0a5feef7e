// Delete the whole graph in batches (an implicit transaction, so large graphs do not exhaust memory).
MATCH (n)
CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS
