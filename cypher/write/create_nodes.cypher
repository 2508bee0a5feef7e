// Create nodes the writer has just found absent (write/existing_ids, same transaction); each row is the
// properties of one node, its id among them. Every node carries :Node (the id constraint lives there), so a
// concurrent writer that created one of these ids meanwhile makes this statement fail, and the write is run
// again (it then MERGEs that id). One statement per label set ($labels, checked against ontology/ by the
// writer): labels given once per statement cost about as little as labels in the query text, labels per row
// (`$(row.labels)`) about 1.4x that.
UNWIND $rows AS row
CREATE (n:Node:$($labels))
SET n = row
