"""The export stage: task packages and runs as JSON-LD in an RO-Crate 1.2 with a Croissant description (jsonld,
runs, croissant), and a package rebuilt from its export (rebuild)."""
