"""voe: the evidence-graph compiler.

`voe` holds what every stage shares (configuration, the graph layer, the ontology, the local Neo4j, the
artifact contract in voe.artifacts) and the stages themselves as subpackages: voe.ingest, voe.compiler,
voe.replay, voe.verifiers, voe.export and voe.cli (in a source tree, links to the folders beside voe/).

From Python (voe.api, docs/guide/python.md), each call what the command of its name does:

    voe.ingest_archives(*paths)              -> IngestReport     records into the graph
    voe.compile(out)                         -> CompileSummary   the task package, gated
    voe.run(package, policy, out)            -> RunResult        run.json and the run's audit (.audit.passed)
    voe.score(run)                           -> Scored           verdicts, metrics, the run's audit (.audit)
    voe.label(package, out, runs)            -> LabelsInfo       state and step labels (verifier-only)
    voe.report(runs, out)                    -> Path             report.md and report.html
    voe.export_crate(package, out)           -> ExportSummary    a JSON-LD RO-Crate
    voe.export_training(package, out, runs)  -> TrainingInfo     sft, preference and value sets
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# not `ingest` or `export`: those are the stages voe.ingest and voe.export
API = ("ingest_archives", "compile", "run", "score", "label", "report", "export_crate", "export_training", "Scored",
       "RunResult", "Audit")
__all__ = ["__version__", *API]


def __getattr__(name: str) -> Any:
    # The API imports every stage; the stages import this package (for __version__). Loading voe.api on first use
    # keeps `import voe` cheap and the stages free of a cycle through it.
    if name in API:
        return getattr(importlib.import_module("voe.api"), name)
    raise AttributeError(f"module 'voe' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *API})
