"""Neo4j Browser as a review tool (issue 11, part): every named query of cypher/browser/ runs on a compiled
graph and shows what it says; `voe browse` prints a Browser URL carrying the query."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from voe.artifacts.package import load_package
from voe.browse import (
    GUIDE_PATH,
    STYLE_PATH,
    browser_bundle,
    guide_html,
    named_queries,
    parameters,
    post_connect_cmd,
    query_text,
    style,
)
from voe.config import local_instance
from voe.graph import Graph
from voe.ingest import ingest_paths
from voe.neo4j_server import LocalNeo4j
from voe.replay.admission import compile_package
from voe.replay.runner import run_policy
from voe.settings import settings
from voe.verifiers.score import score_run


@pytest.fixture(scope="module")
def compiled(_session_graph: Graph, archives: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    graph = _session_graph
    graph.clear()
    graph.apply_schema()
    assert ingest_paths([archives / s for s in ("mds2-4103", "mds2-2525", "mds2-2106")], graph).errors == []
    root = tmp_path_factory.mktemp("browse")
    summary = compile_package(graph, root / "pkg")
    run_policy(root / "pkg", "reference", 1, 0, root / "run")
    score_run(graph, root / "run")
    views, _, _, _ = load_package(root / "pkg")
    trajectory = json.loads((root / "run" / "trajectories.jsonl").read_text().splitlines()[0])["trajectory_id"]
    return {"package": summary.content_hash, "task_id": views[0].task_id, "menu": str(len(views[0].menu)),
            "ark": "ark:/88434/mds2-4103", "trajectory_id": trajectory}


def _run(graph: Graph, name: str, values: dict[str, str]) -> list[dict[str, object]]:
    with graph._driver.session() as s:  # noqa: SLF001 - the test runs the queries as the Browser would
        return s.run(f"CYPHER 5 {query_text(name, values)}").data()


def test_every_named_query_runs_and_shows_what_it_names(_session_graph: Graph, compiled: dict[str, str]) -> None:
    assert set(named_queries()) == {"task_evidence", "task_answers", "record_defects", "admission", "trajectory",
                                    "tasks"}
    for name in named_queries():
        rows = _run(_session_graph, name, {p: compiled[p] for p in parameters(name)})
        assert rows, name
    menu = _run(_session_graph, "task_evidence", {"task_id": compiled["task_id"]})
    assert len({json.dumps(r["evidence"], sort_keys=True, default=str) for r in menu}) == int(compiled["menu"])


def test_only_the_answers_query_shows_the_verifiers_side(_session_graph: Graph, compiled: dict[str, str]) -> None:
    """The review queries a reviewer runs by default draw no Task node, no BINDS edge and no DecisionMoment;
    `task_answers` (voe browse TASK_ID --answers) shows the answer, when asked."""
    verifier_only = ("accepted_classes", "must_bind", "may_bind", "reference_class", "needed", "useful", "family")
    for name in named_queries():
        if name in ("task_answers", "admission"):
            continue
        with _session_graph._driver.session() as s:  # noqa: SLF001
            result = s.run(f"CYPHER 5 {query_text(name, {p: compiled[p] for p in parameters(name)})}")
            graph = result.graph()
            rows = result.data()
        assert not [n for n in graph.nodes if {"Task", "DecisionMoment"} & set(n.labels)], name
        assert not [r for r in graph.relationships if r.type in ("BINDS", "DERIVED_FROM")], name
        text = json.dumps(rows, default=str)
        assert not [k for k in verifier_only if f'"{k}"' in text], (name, text[:300])
    with _session_graph._driver.session() as s:  # noqa: SLF001
        shown = s.run(f"CYPHER 5 {query_text('task_answers', {'task_id': compiled['task_id']})}").graph()
    assert [n for n in shown.nodes if "Answer" in n.labels][0]["accepted_classes"]
    admission = _run(_session_graph, "admission", {"package": compiled["package"]})
    assert any(r["admitted"] and r["task"] == compiled["task_id"] for r in admission)


VERIFIER_ONLY = ("accepted_classes", "must_bind", "may_bind", "reference_class", "needed", "useful", "family",
                 "binding", "decision", "source_facts")


def test_no_expansion_from_a_review_reaches_the_answer(_session_graph: Graph, compiled: dict[str, str]) -> None:
    """What a reviewer's double-clicks in Browser can draw: every node of every review query, then every neighbour
    of those, three expansions deep (Browser expands a node to all its neighbours). None is an Answer and none
    holds a verifier-only property; the Answer exists (the verifiers join it by id)."""
    with _session_graph._driver.session() as s:  # noqa: SLF001
        frontier: set[str] = set()
        for name in named_queries():
            if name in ("task_answers", "admission"):
                continue
            drawn = s.run(f"CYPHER 5 {query_text(name, {p: compiled[p] for p in parameters(name)})}").graph()
            frontier |= {n.element_id for n in drawn.nodes}
        seen = set(frontier)
        for _ in range(3):
            found = s.run("MATCH (n)--(m) WHERE elementId(n) IN $ids RETURN DISTINCT m",
                          ids=sorted(frontier)).values()
            nodes = [row[0] for row in found]
            frontier = {n.element_id for n in nodes} - seen
            seen |= frontier
            for n in nodes:
                assert "Answer" not in n.labels, dict(n)
                assert not [k for k in n.keys() if k.startswith(VERIFIER_ONLY)], (list(n.labels), sorted(n.keys()))
        tasks = s.run("MATCH (t:Task) WHERE elementId(t) IN $ids RETURN count(t) AS n", ids=sorted(seen)).single()
        answers = s.run("MATCH (a:Answer {task_id: $t}) RETURN count(a) AS n", t=compiled["task_id"]).single()
    assert tasks["n"] >= 1 and answers["n"] == 1  # the task is reachable, its answer is not
    assert len(seen) > 20


def test_voe_browse_prints_a_browser_url_with_the_query(compiled: dict[str, str], cli_env: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "-m", "voe.cli", "browse", compiled["task_id"], "--json"], capture_output=True,
                          text=True, env=cli_env, timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    url = urlparse(out["url"])
    args = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert url.path == "/browser/" and args["preselectAuthMethod"] == "NATIVE" and args["cmd"] == "edit"
    # the server runs with a password: the Browser's form comes with the user and the address filled in
    assert args["dbms"] == cli_env["NEO4J_URI"].replace("bolt://", "bolt://neo4j@") and out["user"] == "neo4j"
    assert args["arg"] == out["query"]
    assert json.dumps(compiled["task_id"]) in out["query"] and "$task_id" not in out["query"]
    missing = subprocess.run([sys.executable, "-m", "voe.cli", "browse", "--query", "record_defects"], capture_output=True,
                             text=True, env=cli_env, timeout=60)
    assert missing.returncode == 2 and "--param ark=" in missing.stderr
    # the Browser is the one of the server NEO4J_URI names (its own HTTP port), not a fixed 7474
    local = local_instance(cli_env["NEO4J_URI"], settings().cache_dir)
    if local is not None:
        assert url.port == local.http_port
    unknown = subprocess.run([sys.executable, "-m", "voe.cli", "browse", "task:0000000000000000"], capture_output=True,
                             text=True, env=cli_env, timeout=60)
    assert unknown.returncode == 2 and "holds no task 'task:0000000000000000'" in unknown.stderr
    assert unknown.stdout == "" and "Traceback" not in unknown.stderr


def test_the_style_gives_every_label_a_readable_caption() -> None:
    import re

    from voe.ontology import Label

    text = style()
    for label in Label:
        if label is not Label.NODE:
            assert re.search(rf"^node\.{label.value} \{{.*caption: '\{{[a-z_]+\}}';", text, re.M), label
    assert "{id}" not in text  # ids and hashes read badly


def test_the_guide_holds_every_named_query_runnable_with_its_parameters() -> None:
    import html
    import re

    guide = guide_html()
    assert guide.startswith('<article class="guide">')
    slides = re.findall(r"<slide.*?</slide>", guide, flags=re.S)
    assert len(slides) == len(named_queries()) + 1
    blocks = [html.unescape(b) for b in re.findall(r'<pre class="pre-scrollable code runnable">(.*?)</pre>', guide,
                                                   flags=re.S)]
    for name in named_queries():
        body = [ln for ln in _query_file(name).splitlines() if not ln.startswith("//")]
        assert "\n".join(body).strip() in blocks, name
        for p in parameters(name):
            assert f":param {p} => ''" in blocks
    assert "<script" not in guide


def _query_file(name: str) -> str:
    from voe import queries

    return queries.load(f"browser/{name}")


@pytest.mark.slow
def test_the_browser_bundle_adds_style_and_guide_and_is_rebuilt_only_when_they_change(tmp_path: Path) -> None:
    import zipfile

    lib = LocalNeo4j().resolve()  # the jars the suite's server runs on
    bundle = browser_bundle(lib, tmp_path / "web")
    assert bundle is not None
    with zipfile.ZipFile(bundle) as z:
        names = z.namelist()
        assert z.read(f"browser/{STYLE_PATH}").decode() == style()
        assert z.read(f"browser/{GUIDE_PATH}").decode() == guide_html()
        assert "browser/index.html" in names and "browser/voe/" in names
        assert names.index("browser/") < names.index("browser/voe/") < names.index(f"browser/{STYLE_PATH}")
    built = bundle.stat().st_mtime_ns
    assert browser_bundle(lib, tmp_path / "web") == bundle and bundle.stat().st_mtime_ns == built
    (tmp_path / "web" / "neo4j-browser.stamp").write_text("an older style")
    browser_bundle(lib, tmp_path / "web")
    assert bundle.stat().st_mtime_ns != built
    assert browser_bundle(tmp_path / "no-jars", tmp_path / "web2") is None
    cmd = post_connect_cmd(7474)
    assert cmd.split("; ") == [f"style http://localhost:7474/browser/{STYLE_PATH}",
                               f"play http://localhost:7474/browser/{GUIDE_PATH}"]


def test_the_trajectory_view_draws_the_requests_in_step_order(_session_graph: Graph, compiled: dict[str, str]) -> None:
    """Each REQUESTED edge carries the step that asked (`t`, the grass captions it `step t`); the paths come in
    that order, and the steps come as rows t = 0, 1, 2, ... with the caption of what each asked for."""
    with _session_graph._driver.session() as s:  # noqa: SLF001
        rows = s.run(f"CYPHER 5 {query_text('trajectory', {'trajectory_id': compiled['trajectory_id']})}").data()
        edges = s.run("MATCH (:Trajectory {id: $id})-[q:REQUESTED]->(e:Evidence) RETURN q.t AS t, e.id AS e",
                      id=compiled["trajectory_id"]).data()
    assert len(rows) == 1
    steps = rows[0]["steps"]
    assert [s["t"] for s in steps] == list(range(len(steps))) and len(edges) >= 1
    asked = [p[2]["id"] for p in rows[0]["asked"]]  # a path is [trajectory, REQUESTED, evidence]
    by_t = sorted(edges, key=lambda r: r["t"])
    assert asked == [r["e"] for r in by_t]
    for r in edges:  # the first step that asked for that evidence
        assert steps[r["t"]]["evidence_id"] == r["e"]
        assert all(st["evidence_id"] != r["e"] for st in steps[:r["t"]])
        assert steps[r["t"]]["evidence"]  # its caption, for the table view
    assert steps[-1]["action"] and not steps[-1]["evidence_id"] or steps[-1]["outcome"]


def test_record_defects_is_one_row_per_kind_with_one_example_drawn(_session_graph: Graph,
                                                                  compiled: dict[str, str]) -> None:
    """mds2-4103 has 37 disagreeing sidecars and one marked invalid: two rows, not a 114-node starburst."""
    with _session_graph._driver.session() as s:  # noqa: SLF001
        result = s.run(f"CYPHER 5 {query_text('record_defects', {'ark': compiled['ark']})}")
        graph = result.graph()
        rows = result.data()
    kinds = {r["kind"]: r for r in rows}
    assert kinds["sidecar_checksum_mismatch"]["defects"] == 37 and kinds["sidecar_marked_invalid"]["defects"] == 1
    assert [r["defects"] for r in rows] == sorted((r["defects"] for r in rows), reverse=True)
    assert all(1 <= len(r["locations"]) <= 5 and 1 <= len(r["subjects"]) <= 5 for r in rows)
    assert len(set(kinds["sidecar_checksum_mismatch"]["locations"])) == 5  # the locations read apart
    defects = [n for n in graph.nodes if "Defect" in n.labels]
    assert len(defects) == len(rows) and len(graph.nodes) <= 4 * len(rows) + 1
    assert all(n["caption"] for n in graph.nodes)


def test_the_url_signs_in_as_the_user_on_a_server_voe_did_not_start(tmp_path: Path) -> None:
    """docker-compose.yml's server requires a password that voe may not hold: the Browser is told to ask for it
    (basic auth, the user filled in), never to try without authentication."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("NEO4J_")}
    env.update(NEO4J_URI="bolt://db.example:7687", VOE_CACHE_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "voe.cli", "browse", "--query", "record_defects", "--param",
                           "ark=ark:/88434/mds2-4103", "--json"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    args = {k: v[0] for k, v in parse_qs(urlparse(out["url"]).query).items()}
    assert args["preselectAuthMethod"] == "NATIVE" and args["dbms"] == "bolt://neo4j@db.example:7687"
    assert out["url"].startswith("http://127.0.0.1:7474/browser/?") and out["user"] == "neo4j"


def test_docker_compose_serves_the_bundle_voe_browse_writes() -> None:
    """The compose file parses, mounts the folder `voe browse --bundle .voe-browser` writes where the server's web
    folder setting points, and sets the post-connect command `voe db up` sets (same style and guide)."""
    import yaml

    from voe.cli.browse import browse_cmd

    compose = yaml.safe_load((Path(__file__).parents[2] / "docker-compose.yml").read_text())
    neo4j = compose["services"]["neo4j"]
    env = neo4j["environment"]

    def setting(var: str) -> str:  # the image's rule: NEO4J_ off, "_" -> ".", "__" -> "_"
        return var.removeprefix("NEO4J_").replace("__", "\0").replace("_", ".").replace("\0", "_")

    conf = {setting(k): str(v) for k, v in env.items() if k.startswith("NEO4J_") and k != "NEO4J_AUTH"}
    assert conf["browser.post_connect_cmd"] == post_connect_cmd(7474)
    mounts = dict(v.split(":")[:2] for v in neo4j["volumes"] if v.startswith("./"))
    assert mounts == {"./.voe-browser": conf["internal.dbms.web_dir_path"]}
    assert "127.0.0.1:7474:7474" in neo4j["ports"] and env["NEO4J_AUTH"].startswith("neo4j/")
    assert ".voe-browser" in (browse_cmd.help or "") or any(".voe-browser" in (p.help or "")
                                                             for p in browse_cmd.params if hasattr(p, "help"))


@pytest.mark.slow
def test_voe_browse_bundle_writes_the_browser_with_style_and_guide(tmp_path: Path) -> None:
    import os
    import zipfile

    done = subprocess.run([sys.executable, "-m", "voe.cli", "browse", "--bundle", str(tmp_path / ".voe-browser"),
                           "--json"], capture_output=True, text=True, env=dict(os.environ), timeout=600)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["bundle"] == str(tmp_path / ".voe-browser" / "neo4j-browser.zip")
    with zipfile.ZipFile(out["bundle"]) as z:
        assert z.read(out["style"]).decode() == style() and z.read(out["guide"]).decode() == guide_html()
        assert "browser/index.html" in z.namelist()


def test_voe_db_captions_gives_an_older_graph_the_captions_ingest_writes(
        _session_graph: Graph, compiled: dict[str, str], cli_env: dict[str, str]) -> None:
    """A graph ingested before captions draws blank nodes: `voe db captions` writes what ingest writes now."""
    # the nodes ingest writes (the compiler captions its moments and answers itself, at every compile)
    ingested = "(n:SourceLocation OR n:Component OR n:File OR n:Defect OR n:Record OR n:Evidence)"
    read = (f"MATCH (n:Node) WHERE n.caption IS NOT NULL AND {ingested} RETURN n.id AS id, n.caption AS caption "
            "ORDER BY id")
    with _session_graph._driver.session() as s:  # noqa: SLF001
        before = s.run(read).data()
        s.run(f"MATCH (n:Node) WHERE n.caption IS NOT NULL AND {ingested} REMOVE n.caption").consume()
    assert len(before) > 1000
    done = subprocess.run([sys.executable, "-m", "voe.cli", "db", "captions"], capture_output=True, text=True,
                          env=cli_env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{len(before)} nodes captioned"
    with _session_graph._driver.session() as s:  # noqa: SLF001
        assert s.run(read).data() == before
    again = subprocess.run([sys.executable, "-m", "voe.cli", "db", "captions"], capture_output=True, text=True,
                           env=cli_env, timeout=300)
    assert again.stdout.strip() == "0 nodes captioned"
