"""verifiers: deterministic checks of terminal decisions, run as Cypher over the graph (DESIGN §6)."""
