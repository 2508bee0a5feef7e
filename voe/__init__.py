"""voe: the evidence-graph compiler.

`voe` holds what every stage shares (configuration, the graph layer, the ontology, the local Neo4j, the
artifact contract in voe.artifacts) and the stages themselves as subpackages: voe.ingest, voe.compiler,
voe.replay, voe.verifiers, voe.export and voe.cli (in a source tree, links to the folders beside voe/).
"""

__version__ = "0.1.0"
