// Create nodes the writer has just found absent (write/existing_ids, same transaction). Every node carries
// :Node (the id constraint lives there), so a concurrent writer that created one of these ids meanwhile
// makes this statement fail, and the write is run again (it then MERGEs that id). Labels are checked against
// ontology/ by the writer before this runs.
UNWIND $rows AS row
CREATE (n:Node:$(row.labels))
SET n = row.props
