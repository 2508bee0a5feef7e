"""Neo4j Browser checked as a reviewer sees it (issue 11, issue 34 item 2): the real Browser served by the test's
Neo4j, in headless Chromium (Debian's `chromium`, driven by Playwright with `executable_path`): `voe browse`'s URL
opens connected with the query in the editor; the default review views (task_evidence, record_defects, trajectory)
draw every node's caption whole (the Browser cut none) and nothing of the answer; double-clicking every drawn node
and reading every property panel after shows nothing of it either, and with the network blocked the page asks no
host but this machine for anything. Screenshots are saved. Outside CI
a missing Chromium or Playwright skips with the reason; under CI=true it fails (.ci/run installs Chromium)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.ports import browser_http
from voe.artifacts.package import Family, load_package
from voe.browse import browser_url, named_queries, query_text
from voe.graph import Graph
from voe.ingest import ingest_paths
from voe.ingest.rules.captions import short_name
from voe.replay.admission import compile_package
from voe.replay.runner import run_policy
from voe.verifiers.score import score_run


@pytest.fixture(scope="module")
def playwright_page(chromium: Any) -> object:
    return chromium.new_page(viewport={"width": 1400, "height": 900})


def _run(page: object, text: str) -> None:
    """Run `text` in a stream of its own (`:clear` first), so the drawn nodes read after are this query's only."""
    _type(page, ":clear")
    time.sleep(0.5)
    _type(page, text)


def _type(page: object, text: str) -> None:
    editor = page.locator(".monaco-editor textarea").first  # type: ignore[attr-defined]
    editor.focus()
    page.keyboard.press("Control+a")  # type: ignore[attr-defined]
    page.keyboard.insert_text(text)  # type: ignore[attr-defined]
    page.keyboard.press("Control+Enter")  # type: ignore[attr-defined]


def _captions(page: object, at_least: int) -> list[str]:
    """The caption of each drawn node as the Browser drew it: its lines (one <text> each) joined by a space."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        texts = [t for t in page.evaluate(DRAWN_NODES) if t]  # type: ignore[attr-defined]
        if len(texts) >= at_least:
            return texts
        time.sleep(0.5)
    return []


DRAWN_NODES = """() => Array.from(document.querySelectorAll('svg g.node')).map(g =>
  Array.from(g.querySelectorAll('text')).map(t => t.textContent.trim()).filter(Boolean).join(' '))"""
DRAWN_EDGES = """() => Array.from(document.querySelectorAll('svg g.relationship text')).map(t => t.textContent.trim())"""


def _drawn_query(graph: Graph, name: str, values: dict[str, str]) -> tuple[set[str], list[dict[str, object]]]:
    """What a named query draws, read over Bolt: each node's caption as the style makes it, and the rows."""
    with graph._driver.session() as s:  # noqa: SLF001 - the query as the Browser runs it
        result = s.run(f"CYPHER 5 {query_text(name, values)}")
        drawn = result.graph()
        rows = result.data()
    return {str(n.get("caption") or n.get("end") or "") for n in drawn.nodes}, rows


def _uncut(drawn: list[str], expected: set[str]) -> None:
    """Every drawn caption is a whole caption of the graph: the Browser cut none (it cuts with a trailing "…" a
    word that does not fit its circle, and drops the words after it)."""
    assert drawn and set(drawn) <= expected, (sorted(set(drawn) - expected), sorted(expected))


# names of the verifier's properties, as the Browser's property panel would list them
VERIFIER_ONLY = ("accepted_classes", "must_bind_", "may_bind_", "reference_class", "source_facts", "decision\t",
                 "family\t", "needed\t", "useful\t", "binding\t")


def _expand_and_read(page: Any, most: int = 150) -> str:
    """Double-click every drawn node (Browser expands it to all its neighbours), then click each node drawn after
    that and read the page with its property panel open. Returns the text read."""
    nodes = page.locator("svg g.node")

    def press(node: Any, how: str) -> None:
        try:
            getattr(node, how)(force=True, timeout=5000)
        except Exception as exc:  # noqa: BLE001 - Playwright's Error: a node the expansion drew off the canvas
            if "outside of the viewport" not in str(exc) and "not visible" not in str(exc):
                raise
            node.dispatch_event(how)  # the event the Browser's d3 handlers take, where no mouse can reach

    for i in range(min(nodes.count(), 40)):
        press(nodes.nth(i), "dblclick")
        time.sleep(0.3)
    time.sleep(2)
    texts = []
    for i in range(min(nodes.count(), most)):
        press(nodes.nth(i), "click")
        time.sleep(0.1)
        texts.append(page.inner_text("body"))
    # the Browser keeps a node selected into the next frames (its panel then shows that node, not the overview):
    # a click on the canvas's empty corner lets it go, as a reviewer's would
    canvas = page.locator("svg").filter(has=page.locator("g.node")).first
    box = canvas.bounding_box()
    if box is not None:
        page.mouse.click(box["x"] + 5, box["y"] + 5)
        time.sleep(0.3)
    return "\n".join(texts)


def _overview(page: object) -> str:
    return str(page.locator("text=Relationship types").first.locator("xpath=../..").inner_text())  # type: ignore[attr-defined]


@pytest.mark.timeout(420)
def test_the_browser_draws_a_task_and_a_record_with_readable_captions(
        _session_graph: Graph, archives: Path, tmp_path: Path, playwright_page: object) -> None:
    graph = _session_graph
    graph.clear()
    graph.apply_schema()
    assert ingest_paths([archives / s for s in ("mds2-4103", "mds2-2525", "mds2-2106")], graph).errors == []
    compile_package(graph, tmp_path / "pkg")
    run_policy(tmp_path / "pkg", "reference", 1, 0, tmp_path / "run")
    score_run(graph, tmp_path / "run")
    views, _, answers, _ = load_package(tmp_path / "pkg")
    task = views[0]
    trajectories = [json.loads(ln) for ln in (tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()]
    trajectory = next(t for t in trajectories if t["task_id"] == task.task_id)["trajectory_id"]
    page = playwright_page
    # the network is blocked: every request the page makes is counted, and one that leaves the machine fails
    off: list[str] = []

    def local_only(route: Any) -> None:
        host = urlsplit(route.request.url).hostname
        if route.request.url.startswith(("data:", "blob:")) or host in ("127.0.0.1", "localhost"):
            route.continue_()
        else:
            off.append(route.request.url)
            route.abort()

    page.route("**/*", local_only)  # type: ignore[attr-defined]
    user = graph.settings.user if graph.settings.password else None
    url = browser_url(browser_http(graph.settings.uri), graph.settings.uri,
                      query_text("task_evidence", {"task_id": task.task_id}), user)
    page.goto(url)  # type: ignore[attr-defined]
    if user:  # the server runs with a password: the form comes filled in but for it, as `voe browse` says
        assert page.locator('input[data-testid="username"]').input_value() == user  # type: ignore[attr-defined]
        page.locator('input[data-testid="password"]').fill(graph.settings.password)  # type: ignore[attr-defined]
        page.get_by_test_id("connect").click()  # type: ignore[attr-defined]
    page.get_by_text("Connected to Neo4j").wait_for(timeout=60_000)  # type: ignore[attr-defined]
    # nothing typed: the server's browser.post_connect_cmd loads voe's style and plays the guide of the named
    # queries, both served by the server itself from its Browser bundle
    page.get_by_text("voe review queries").wait_for(timeout=30_000)  # type: ignore[attr-defined]
    assert page.get_by_text(f"1 / {len(named_queries()) + 1}").count() == 1  # type: ignore[attr-defined]
    page.get_by_text(":style http://localhost:").wait_for(timeout=30_000)  # type: ignore[attr-defined]
    assert page.get_by_text("Could not parse grass").count() == 0  # type: ignore[attr-defined]
    shots = tmp_path / "browser"
    shots.mkdir()
    page.screenshot(path=str(shots / "guide.png"))  # type: ignore[attr-defined]
    # nothing of the verifier's side is drawn: no family, no decision moment, no reference class as a caption
    families = {f.value for f in Family}
    answer_words = families | {a.reference_class.value for a in answers.values()} | {a.decision for a in answers.values()}

    expected, _ = _drawn_query(graph, "task_evidence", {"task_id": task.task_id})
    _run(page, query_text("task_evidence", {"task_id": task.task_id}))
    captions = _captions(page, len(task.menu) + 1)
    page.screenshot(path=str(shots / "task_evidence.png"))  # type: ignore[attr-defined]
    assert len(captions) >= len(task.menu) + 1, captions
    _uncut(captions, expected)
    shown = {c.replace(" ", "") for c in captions}
    for entry in task.menu:  # every offered item drawn by its short name, whole
        assert short_name(["Evidence"], {"title": entry.title}).replace(" ", "") in shown, (entry.title, captions)
    assert any(c.startswith(("L", "/", "…/", "p", "whole file")) for c in captions), captions  # locations by place
    assert not [c for c in captions if c.startswith(("task:", "ev:", "loc:", "file:sha256", "component:"))], captions
    assert not answer_words & set(captions), captions
    overview = _overview(page)
    assert "IN_FILE" in overview and "OFFERS" not in overview and "BINDS" not in overview, overview
    assert page.get_by_text("Task (", exact=False).count() == 0  # type: ignore[attr-defined]
    # a reviewer double-clicks what is drawn (Browser draws every neighbour) and reads each node's properties:
    # the task comes into view, nothing of its answer does
    shown_props = _expand_and_read(page)
    page.screenshot(path=str(shots / "task_evidence_expanded.png"))  # type: ignore[attr-defined]
    assert "Node properties" in shown_props and "question" in shown_props
    assert not [k for k in VERIFIER_ONLY if k in shown_props], [k for k in VERIFIER_ONLY if k in shown_props]

    expected, rows = _drawn_query(graph, "record_defects", {"ark": "ark:/88434/mds2-4103"})
    _run(page, query_text("record_defects", {"ark": "ark:/88434/mds2-4103"}))
    time.sleep(2)
    defects = _captions(page, len(expected))
    page.screenshot(path=str(shots / "record_defects.png"))  # type: ignore[attr-defined]
    _uncut(defects, expected)
    assert len(defects) == len(expected) <= 4 * len(rows) + 1, defects  # one example per kind, not 114 nodes
    assert {"sidecar checksum mismatch", "sidecar marked invalid"} <= set(defects), defects
    assert not [c for c in defects if c.startswith(("defect:", "record:"))], defects

    expected, rows = _drawn_query(graph, "trajectory", {"trajectory_id": trajectory})
    _run(page, query_text("trajectory", {"trajectory_id": trajectory}))
    time.sleep(2)
    drawn = _captions(page, len(expected))
    steps = sorted(page.evaluate(DRAWN_EDGES))  # type: ignore[attr-defined]
    page.screenshot(path=str(shots / "trajectory.png"))  # type: ignore[attr-defined]
    _uncut(drawn, expected)
    first: dict[str, int] = {}  # each evidence item's first request: the step its edge is captioned with
    for st in rows[0]["steps"]:  # type: ignore[index]
        if st["evidence"]:
            first.setdefault(st["evidence_id"], st["t"])
    assert steps == sorted(f"step {t}" for t in first.values()) and steps, (steps, first)
    assert not answer_words & set(drawn), drawn
    overview = _overview(page)
    assert "REQUESTED" in overview and "BINDS" not in overview and "ATTEMPTS" not in overview, overview
    shown_props = _expand_and_read(page)
    assert not [k for k in VERIFIER_ONLY if k in shown_props], [k for k in VERIFIER_ONLY if k in shown_props]
    assert off == [], off  # no font, error report, feedback or analytics host was asked for anything
    print(f"screenshots: {shots}")
