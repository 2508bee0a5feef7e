"""The annotator and the judge gate (issue 10), against the project's own OpenAI-compatible server with a
scripted annotator and a rule-based judge: filters, calibration, the audit trail, the cache, the secret."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.llm_server import LocalLLMServer, Reply
from voe.artifacts.package import Action, load_package
from voe.compiler.annotate import TEMPLATE, VERDICT_WORDS, LLMAnnotator, filter_failures, normalise
from voe.compiler.judge import CRITERIA, CalibrationFailed, Judge, load_cases
from voe.compiler.moments import INSTRUCTIONS, candidate, find_moments, load_catalog, materialize
from voe.graph import Graph
from voe.ingest import ingest_paths
from voe.llm import Budget, ChatClient, ResponseCache, Settings
from voe.replay.admission import ReplayAdmission, compile_package, reference_path

SOURCES = ["mds2-4103", "mds2-3842", "mds2-2525", "mds2-2106", "amb2025-template", "FACTS.md", "ambench-releases"]
SECRET = "sk-annotator-5ecret"
TERMINAL_NAMES = [a.value for a in Action if not a.value.startswith("request_")]


@pytest.fixture(scope="module")
def shared_graph(_session_graph: Graph, archives: Path) -> Iterator[Graph]:
    graph = _session_graph
    graph.clear()
    graph.apply_schema()
    assert ingest_paths([archives / s for s in SOURCES], graph).errors == []
    yield graph


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("VOE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def client(server: LocalLLMServer, model: str, tmp_path: Path, fmt: str = "json_schema") -> ChatClient:
    return ChatClient(Settings(model=model, protocol="json", response_format=fmt), server.base_url,
                      cache=ResponseCache(tmp_path / "cache" / "llm"), run_cache=ResponseCache(None), budget=Budget(),
                      prices={})


def neutral(context: dict[str, Any], menu: list[str] | None = None, question: str | None = None) -> Reply:
    """A scripted annotator: a neutral framing of the moment it is given, the required items and three others."""
    framing = {"title": str(context["subject"]["title"]),
               "context": f"Workflow: {context['workflow']}. A risk packet on {context['subject']['title']} is about "
                          "to be assembled from this archive.",
               "question": question or "Can the packet be assembled from what the archive holds?",
               "menu": menu if menu is not None else [x["id"] for x in context["required"]]
               + [x["id"] for x in context["pool"][:3]]}
    return Reply.text(json.dumps(framing))


def annotator_model(shape: Callable[[dict[str, Any]], Reply] = neutral) -> Callable[[dict[str, Any], int], Reply]:
    def respond(body: dict[str, Any], index: int) -> Reply:
        if body["model"] == "judge":
            return rule_judge(json.loads(body["messages"][1]["content"]))
        return shape(json.loads(body["messages"][1]["content"]))
    return respond


def judge_rules(case: dict[str, Any]) -> dict[str, bool]:
    """The rule-based judge the tests script: each criterion checked on what the judge is shown."""
    menu = {m["entry_id"] for m in case["menu"]}
    framing = case["question"].split("Request the evidence you need from the menu")[0]  # the fixed instructions
    named = [x for step in case["verifier"]["reference_path"] for x in [step["item"], *step["payload"]] if x]
    named += [x for xs in case["verifier"]["must_name"].values() for x in xs]
    text = normalise(framing)
    return {
        "matches_decision": f"Workflow: {case['workflow']}." in case["question"],
        "covers_evidence": set(case["verifier"]["binding"]) <= menu,
        "binds_verifier": set(named) <= menu | set(case["verifier"]["binding"]),  # bound to the decision's items
        "useful_feedback": all(case["requests_return"].get(b, {}).get("facts") for b in case["verifier"]["binding"]),
        "grounded_mechanism": "risk packet" in framing,
        "separates_hidden": not any(normalise(t) in text for t in TERMINAL_NAMES)
        and not any(normalise(w) in text for w in VERDICT_WORDS),
    }


def rule_judge(case: dict[str, Any], always: bool | None = None) -> Reply:
    rules = judge_rules(case)
    return Reply.text(json.dumps({"criteria": {k: {"pass": rules[k] if always is None else always,
                                                   "reason": "checked by rule"} for k in CRITERIA}}))


def test_the_calibration_cases_are_real_tasks_and_each_reject_breaks_one_criterion() -> None:
    cases = load_cases()
    assert sum(c.expect == "accept" for c in cases) >= 10 and sum(c.expect == "reject" for c in cases) >= 10
    assert {c.broken for c in cases if c.expect == "reject"} == set(CRITERIA)
    for c in cases:
        failed = {k for k, ok in judge_rules(c.input).items() if not ok}
        assert failed == (set() if c.expect == "accept" else {c.broken}), c.id
        assert c.input["question"] and c.input["menu"] and "task:" in c.note


def test_filters_reject_what_they_should(shared_graph: Graph) -> None:
    cat = load_catalog(shared_graph)
    m = next(x for x in find_moments(shared_graph, cat, ReplayAdmission()) if x.family.value == "source_integrity")
    c = candidate(m, cat)
    view, answer = materialize(m, cat)
    known = set(cat.rows)
    defects = {x for x in answer.source_facts if x.startswith("defect:")}

    def rules(**change: Any) -> list[str]:
        framing = c.template.model_copy(update=change)
        return [f.split(":", 1)[0] for f in filter_failures(framing, c, view, answer, known, defects, reference_path)]

    assert rules() == []
    assert rules(menu=[*c.binding, "ev:not/in/the/pool"]) == ["menu.outside_pool", "menu.unknown_ref"]
    outside = next(e for e in cat.rows if e not in c.pool)
    assert rules(menu=[*c.binding, outside]) == ["menu.outside_pool"]
    assert rules(menu=c.pool[len(c.binding):len(c.binding) + 3]) == ["menu.binding_missing"]
    assert rules(question="Check the reference path first.") == ["framing.verifier_field"]
    assert rules(question=f"Note {next(iter(defects))}.") == ["framing.verifier_field", "framing.answer_artifact"]
    for leak in ("Is the checksum corrupt?", "This looks like a source integrity case.", "Is a file MISSING?",
                 "Maybe flag_source_defect?", "Its Invalid-Checksum worries me."):
        assert rules(question=leak) == ["framing.answer_artifact"], leak
    short = view.model_copy(update={"horizon": 1})
    assert [f.split(":")[0] for f in filter_failures(c.template, c, short, answer, known, defects, reference_path)] == \
        ["replay.reference_path"]


def test_annotated_compile_with_a_calibrated_judge_admits_and_stores_why(shared_graph: Graph, tmp_path: Path) -> None:
    rejected_one: list[str] = []

    def shape(context: dict[str, Any]) -> Reply:
        if not rejected_one:  # one framing leaks its verdict: the filter must take it out
            rejected_one.append(context["subject"]["id"])
            return neutral(context, question="Is the checksum of this file corrupt?")
        return neutral(context)

    with LocalLLMServer(annotator_model(shape)) as server:
        summary = compile_package(shared_graph, tmp_path / "pkg", annotator=LLMAnnotator(client(server, "scripted",
                                                                                                  tmp_path)),
                                  judge=Judge(client(server, "judge", tmp_path)))
        calls = server.calls
    views, _, answers, manifest = load_package(tmp_path / "pkg")
    admission = manifest.counts["admission"]
    assert manifest.annotator.startswith("openai:scripted") and admission["judge"]["calibration"] == "24/24 correct"
    assert admission["rejected_by_rule"]["framing.answer_artifact"] == 1 and summary.tasks == len(views) >= 10
    assert manifest.gate["passed"], manifest.gate  # the text-only shortcut probes still hold on model framings
    assert all(v.question.endswith(INSTRUCTIONS) and "Can the packet be assembled" in v.question for v in views)
    with shared_graph._driver.session() as s:  # noqa: SLF001 - the test reads the audit trail as a reviewer would
        why = s.run("MATCH (a:Annotation {admitted: false}) RETURN a.filter_failures AS f, a.moment_id AS m").data()
        admitted = s.run("MATCH (t:Task)-[:FRAMED_BY]->(a:Annotation)-[:ANNOTATES]->(:DecisionMoment) "
                         "MATCH (v:JudgeVerdict)-[:JUDGES]->(a) MATCH (v)-[:CALIBRATED_BY]->(c:Calibration) "
                         "WHERE t.package = $p RETURN count(DISTINCT t) AS n, collect(DISTINCT c.passed) AS cal, "
                         "collect(DISTINCT v.accept) AS accept", p=manifest.content_hash).single()
    assert [w["f"][0].split(":")[0] for w in why] == ["framing.answer_artifact"]
    assert admitted is not None and admitted["n"] == len(views) and admitted["cal"] == [True] and admitted["accept"] == [True]
    # a second compile asks nothing and writes the same bytes
    with LocalLLMServer(lambda body, i: Reply.error(500, "must not be called")) as server:
        compile_package(shared_graph, tmp_path / "again", annotator=LLMAnnotator(client(server, "scripted", tmp_path)),
                        judge=Judge(client(server, "judge", tmp_path)))
        assert server.calls == 0
    for name in ("tasks.jsonl", "evidence.jsonl", "answers.jsonl", "manifest.json"):
        assert (tmp_path / "pkg" / name).read_bytes() == (tmp_path / "again" / name).read_bytes()
    assert calls > len(views)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert not [p for p in written if SECRET.encode() in p.read_bytes()]
    with shared_graph._driver.session() as s:  # noqa: SLF001
        assert s.run("MATCH (n) WHERE any(p IN keys(n) WHERE (n[p] IS :: STRING AND n[p] CONTAINS $k) OR "
                     "(n[p] IS :: LIST<STRING> AND any(x IN n[p] WHERE x CONTAINS $k))) RETURN count(n) AS c",
                     k=SECRET).single()["c"] == 0


def test_a_judge_that_fails_calibration_stops_the_compile_and_names_the_cases(shared_graph: Graph, tmp_path: Path,
                                                                              cli_env: dict[str, str]) -> None:
    def respond(body: dict[str, Any], index: int) -> Reply:  # a judge that accepts everything
        return rule_judge(json.loads(body["messages"][1]["content"]), always=True)

    with LocalLLMServer(respond) as server:
        with pytest.raises(CalibrationFailed, match="misclassified 12 of 24.*reject-01-matches_decision"):
            compile_package(shared_graph, tmp_path / "pkg", judge=Judge(client(server, "lenient", tmp_path)))
        assert not (tmp_path / "pkg").exists()
        env = {**cli_env, "OPENAI_API_KEY": SECRET, "VOE_CACHE_DIR": str(tmp_path / "cache2")}
        done = subprocess.run([sys.executable, "-m", "voe.cli", "compile", "--out", str(tmp_path / "cli"), "--judge",
                               "openai:lenient", "--base-url", server.base_url], capture_output=True, text=True,
                              env=env, timeout=600)
    assert done.returncode == 1 and "reject-12-separates_hidden" in done.stderr and "Traceback" not in done.stderr
    with shared_graph._driver.session() as s:  # noqa: SLF001
        cal = s.run("MATCH (c:Calibration {model: 'lenient'}) RETURN c.passed AS p, size(c.misclassified) AS n").data()
    assert cal == [{"p": False, "n": 12}]


def test_without_a_model_the_compile_is_the_template(shared_graph: Graph, tmp_path: Path) -> None:
    compile_package(shared_graph, tmp_path / "pkg")
    _, _, _, manifest = load_package(tmp_path / "pkg")
    assert manifest.annotator == TEMPLATE and "admission" not in manifest.counts
