"""ingest: read archive folders (NERDm records and the files they list) into the provenance graph.

The later stages see ingest through this face only (an import contract in pyproject checks it): `ingest_paths` and
`IngestReport` (the pipeline), `settle` (wait until no record is half swapped in, before reading the graph), the
rule tables of `voe.ingest.rules` and the budgets of `voe.ingest.payloads.limits`. The names here are loaded on
first use, so the compiler and the verifiers import the rule tables without the pipeline and its parsing
libraries."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from voe.ingest.pipeline import IngestReport, ingest_paths
    from voe.ingest.write.loader import settle

__all__ = ["IngestReport", "ingest_paths", "settle"]


def __getattr__(name: str) -> Any:
    if name == "settle":
        from voe.ingest.write import loader

        return loader.settle
    if name in __all__:
        from voe.ingest import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
