"""voe: the evidence-graph compiler.

`voe` holds what every stage shares (configuration, the graph layer, the ontology, the local Neo4j
and the CLI); the pipeline stages live in the sibling packages `ingest`, `compiler` and `verifiers`.
"""

__version__ = "0.1.0"
