// Delete every relationship in batches, before the nodes (admin/clear): a node's DETACH DELETE takes all of its
// relationships in one inner transaction, and a Record of a million components has a million of them.
MATCH ()-[r]->()
CALL (r) { DELETE r } IN TRANSACTIONS OF 10000 ROWS
