"""Shared fixtures: a real Neo4j over Bolt and the real shared archives.

Neo4j: NEO4J_URI when set (tools/test.sh sets it after `voe db up --instance test`), else the suite
starts an instance of its own on free ports and stops and removes it at the end. Every test that takes `graph`
gets an empty database. Under CI=true a Neo4j that does not come up, or a missing ../shared, fails the
run instead of skipping.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ports import free_ports
from voe.config import Neo4jSettings
from voe.graph import Graph
from voe.ingest import ingest_paths
from voe.replay.admission import compile_package

REPO = Path(__file__).resolve().parent.parent
ARCHIVES = REPO.parent / "shared" / "archives"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


# a test that takes one of these talks to Neo4j; `pytest -m "not neo4j"` runs the others with no server
NEO4J_FIXTURES = frozenset({"_session_graph", "graph", "neo4j_settings", "cli_env"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if NEO4J_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.neo4j)


def _unavailable(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: a missing service is a failure, not a skip)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def archives() -> Path:
    if not (ARCHIVES / "mds2-4103" / "nerdm.json").is_file():
        _unavailable(f"the shared archives are not at {ARCHIVES}")
    return ARCHIVES


@pytest.fixture(scope="session")
def neo4j_settings() -> Iterator[Neo4jSettings]:
    if os.environ.get("NEO4J_URI"):
        settings = Neo4jSettings.from_env()
        yield settings
        return
    from voe.errors import ServerError
    from voe.neo4j_server import LocalNeo4j

    # an instance of this session alone, on ports free now: another suite or a developer's server keeps its own
    bolt, http = free_ports()
    server = LocalNeo4j(f"pytest-{os.getpid()}", bolt, http, heap="1g", pagecache="256m")
    try:
        status = server.up()
    except ServerError as exc:
        shutil.rmtree(server.home, ignore_errors=True)
        _unavailable(f"could not start the local Neo4j: {exc}")
        raise
    yield Neo4jSettings(uri=status.bolt_uri, password=server.password())
    server.down()
    shutil.rmtree(server.home, ignore_errors=True)


@pytest.fixture(scope="session")
def _session_graph(neo4j_settings: Neo4jSettings) -> Iterator[Graph]:
    graph = Graph(neo4j_settings)
    try:
        graph.verify()
    except Exception as exc:  # noqa: BLE001 - any failure to connect is the same verdict
        _unavailable(f"Neo4j not reachable at {neo4j_settings.uri}: {exc}")
    yield graph
    graph.close()


@pytest.fixture
def graph(_session_graph: Graph) -> Graph:
    """An empty graph with the schema applied."""
    _session_graph.clear()
    _session_graph.apply_schema()
    return _session_graph


@pytest.fixture
def cli_env(neo4j_settings: Neo4jSettings) -> dict[str, str]:
    """Environment for running `voe` as a subprocess against the test database."""
    env = dict(os.environ)
    env["NEO4J_URI"] = neo4j_settings.uri
    if neo4j_settings.password:
        env["NEO4J_PASSWORD"] = neo4j_settings.password
    return env


# ---------------------------------------------------------------- the package compiled from every shared archive
# built once per module that asks for it (modules clear the graph between them, and scoring needs the
# package's tasks in the graph)
SHARED_SOURCES = ["mds2-4103", "mds2-2525", "mds2-2106", "amb2025-template", "ambench-releases"]


@pytest.fixture(scope="module")
def package(_session_graph: Graph, archives: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    graph = _session_graph
    graph.clear()
    graph.apply_schema()
    assert ingest_paths([archives / s for s in SHARED_SOURCES], graph).errors == []
    pkg = tmp_path_factory.mktemp("shared") / "pkg"
    compile_package(graph, pkg)
    yield pkg


LLM_SECRET = "sk-test-5ecret-never-written"  # tests assert it is never written anywhere


@pytest.fixture
def llm_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An OpenAI-style client that reads only what the test gives it: a known key, no base URL from the
    developer's shell, and a response cache of its own (a shared cache would answer from another test)."""
    monkeypatch.setenv("OPENAI_API_KEY", LLM_SECRET)
    monkeypatch.setenv("VOE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """Debian's headless Chromium driven by Playwright (what users see, as they would see it); under CI=true a
    missing browser fails instead of skipping."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = "the playwright package is not installed"
    else:
        if Path(CHROMIUM).exists():
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=[
                    "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
                yield browser
                browser.close()
            return
        reason = f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: a missing browser is a failure, not a skip)", pytrace=False)
    pytest.skip(reason)
