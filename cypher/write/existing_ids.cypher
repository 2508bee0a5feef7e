// Which of these node ids the graph holds already (read inside the same transaction as the write): the writer CREATEs
// the others instead of MERGEing them, the cheaper write when most of a record is new.
UNWIND $rows AS row
MATCH (n:Node {id: row})
RETURN collect(row) AS ids
