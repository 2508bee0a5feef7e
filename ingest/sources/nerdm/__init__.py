"""A NERDm record: the builder (build: the record read whole), its streamed reader for records of any size
(stream: the same graph, a chunk of components at a time) and the offline schema check (schema)."""
