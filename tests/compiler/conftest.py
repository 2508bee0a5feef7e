"""Fixtures of the compiler tests: the package compiled from every shared archive, built once per module (the
modules clear the graph between them, and scoring needs the package's tasks in the graph)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from compiler.package import compile_package
from ingest import ingest_paths
from voe.graph import Graph

SOURCES = ["mds2-4103", "mds2-2525", "mds2-2106", "amb2025-template", "ambench-releases"]


@pytest.fixture(scope="module")
def package(_session_graph: Graph, archives: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    graph = _session_graph
    graph.clear()
    graph.apply_schema()
    assert ingest_paths([archives / s for s in SOURCES], graph).errors == []
    pkg = tmp_path_factory.mktemp("shared") / "pkg"
    compile_package(graph, pkg)
    yield pkg
