"""Locate the project's data folders (cypher/, ontology/, the Neo4j jar lock) in a checkout or a wheel."""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def data_path(name: str) -> Path:
    """`cypher`, `ontology` or `neo4j/jars.lock.json`: the copy packed into the wheel, else the checkout's."""
    packed = _PKG / "_data" / name
    if packed.exists():
        return packed
    checkout = _PKG.parent / "tools" / name if name.startswith("neo4j/") else _PKG.parent / name
    if checkout.exists():
        return checkout
    raise FileNotFoundError(f"voe data folder {name!r} not found (looked in {packed} and {checkout})")
