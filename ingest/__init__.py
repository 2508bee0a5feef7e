"""ingest: read archive folders (NERDm records and the files they list) into the provenance graph."""

from voe.ingest.pipeline import IngestReport, ingest_paths

__all__ = ["IngestReport", "ingest_paths"]
