// A component is one kind: a plain-folder file ingested as a DataFile before `.sha256` sidecars became
// ChecksumFiles keeps its old label after the upsert (labels are only ever added); drop it.
MATCH (c:ChecksumFile:DataFile {record_id: $record_id})
REMOVE c:DataFile
