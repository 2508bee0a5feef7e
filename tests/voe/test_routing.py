"""voe against a `neo4j://` routing URI, as against a cluster or Aura: the driver asks the server for a routing
table (the local server advertises its own Bolt address) and every command reads and writes through it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from voe.config import Neo4jSettings
from voe.graph import Graph


def _routing(uri: str) -> str:
    scheme, rest = uri.split("://", 1)
    assert scheme in ("bolt", "neo4j"), uri
    return f"neo4j://{rest}"


def test_every_command_works_through_a_routing_uri(graph: Graph, archives: Path, tmp_path: Path,
                                                   cli_env: dict[str, str], neo4j_settings: Neo4jSettings) -> None:
    env = {**cli_env, "NEO4J_URI": _routing(neo4j_settings.uri)}

    def voe(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, "-m", "voe.cli", *args], capture_output=True, text=True, env=env,
                              timeout=600)
        assert done.returncode == 0, done.stderr
        return done

    ingested = json.loads(voe("ingest", str(archives / "mds2-2525"), "--json").stdout)
    assert ingested["records"] == 1 and ingested["graph"]["nodes_created"] > 0
    compiled = json.loads(voe("compile", "--out", str(tmp_path / "pkg"), "--json").stdout)
    assert compiled["tasks"] > 0
    voe("run", str(tmp_path / "pkg"), "--policy", "reference", "--out", str(tmp_path / "run"), "--quiet")
    scored = json.loads(voe("score", str(tmp_path / "run"), "--json").stdout)
    assert scored["evidence_grounded_valid"]["mean"] == 1.0
    # the library too: a routing driver, managed write transactions, reads routed to a reader
    with Graph(Neo4jSettings(uri=_routing(neo4j_settings.uri), user=neo4j_settings.user,
                             password=neo4j_settings.password, database=neo4j_settings.database)) as routed:
        routed.verify()
        assert routed.execute("verifiers/clear_run", run_id="run:not-there").nodes_deleted == 0  # a routed write
        tasks = routed.query("verifiers/package_tasks", package=compiled["content_hash"])
        assert tasks == [{"tasks": compiled["tasks"]}]
