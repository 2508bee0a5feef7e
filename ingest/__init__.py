"""ingest: read archive folders (NERDm records and the files they list) into the provenance graph.

`ingest_paths` and `IngestReport` are loaded on first use: the compiler and the verifiers import the rule tables
(ingest.rules.defects, ingest.rules.media_types) without the pipeline and its parsing libraries."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from voe.ingest.pipeline import IngestReport, ingest_paths

__all__ = ["IngestReport", "ingest_paths"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from voe.ingest import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
