"""Parsers turn one file's bytes into located facts. Each returns a `Parsed`; none touches the graph."""
