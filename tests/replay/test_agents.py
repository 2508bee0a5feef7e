"""LLM agents as policies (issue 9), against the project's own OpenAI-compatible server on 127.0.0.1 with
scripted models: the reference path, an ungrounded payload, malformed JSON, an off-menu id, a loop, rate
limits and server errors, slowness; resume, concurrency, the budget and the secret."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LLM_SECRET as SECRET
from tests.llm_server import LocalLLMServer, Reply
from tests.replay.plays import leaky_copy
from voe.artifacts.package import TaskAnswer, TaskView, load_package
from voe.artifacts.run import TrajectorySummary
from voe.graph import Graph
from voe.jsonl import AppendLog, read_jsonl
from voe.llm import Price, Settings
from voe.replay.agent import Transcript, task_text
from voe.replay.agent_run import Part, RunStopped, _load_parts, run_agent
from voe.replay.runner import run_policy
from voe.verifiers.score import score_run

pytestmark = pytest.mark.usefixtures("llm_env")  # tests/conftest.py: a known key, a cache of its own


class Tasks:
    """The package's tasks by what the model is shown of them."""

    def __init__(self, pkg: Path) -> None:
        views, _, answers, _ = load_package(pkg)
        self.by_text = {task_text(v): (v, answers[v.task_id]) for v in views}
        self.views = views

    def of(self, body: dict[str, Any]) -> tuple[TaskView, TaskAnswer, int]:
        messages = body["messages"]
        view, answer = self.by_text[messages[1]["content"]]
        return view, answer, sum(1 for m in messages if m["role"] == "assistant")


def entry(view: TaskView, evidence_id: str) -> str:
    return next(e.entry_id for e in view.menu if e.evidence_id == evidence_id)


def reference_reply(view: TaskView, answer: TaskAnswer, t: int, protocol: str = "tools") -> Reply:
    step = answer.reference[min(t, len(answer.reference) - 1)]  # after a detour: the reference's terminal
    args: dict[str, Any] = {"evidence_id": entry(view, step.evidence_id)} if step.evidence_id else (
        {} if step.action.value == "abstain_or_escalate" else {"payload": [entry(view, e) for e in step.payload or []]})
    if protocol == "json":
        return Reply.text(json.dumps({"action": step.action.value, **args}))
    return Reply.tool(step.action.value, args)


def model(tasks: Tasks, behave: Callable[[TaskView, TaskAnswer, int, int], Reply | None]) -> Callable[..., Reply]:
    """A scripted model: `behave(view, answer, t, call)` or, when it returns None, the reference step."""
    def respond(body: dict[str, Any], index: int) -> Reply:
        view, answer, t = tasks.of(body)
        return behave(view, answer, t, index) or reference_reply(view, answer, t)
    return respond


def files(run: Path) -> dict[str, bytes]:
    return {n: (run / n).read_bytes() for n in ("steps.jsonl", "observations.jsonl", "trajectories.jsonl",
                                                  "transcripts.jsonl")}


def finished(run: Path) -> int:
    """Trajectories the run has finished so far: the whole lines of its parts log."""
    log = run / "parts" / "log.jsonl"
    return log.read_bytes().count(b"\n") if log.exists() else 0


def scored(graph: Graph, run: Path) -> dict[str, Any]:
    summary, scores = score_run(graph, run)
    return {"summary": summary, "codes": {s.label for s in scores}, "scores": scores}


def test_a_model_on_the_reference_path_scores_like_the_reference(package: Path, _session_graph: Graph,
                                                                 tmp_path: Path) -> None:
    tasks = Tasks(package)
    with LocalLLMServer(model(tasks, lambda *a: None)) as server:
        info = run_agent(package, "scripted", tmp_path / "agent", base_url=server.base_url, passes=2)
    run_policy(package, "reference", 2, 0, tmp_path / "ref")
    agent, ref = scored(_session_graph, tmp_path / "agent"), scored(_session_graph, tmp_path / "ref")
    assert agent["codes"] == {"reference_path"}
    assert agent["summary"]["evidence_grounded_valid"] == ref["summary"]["evidence_grounded_valid"]
    assert info.trajectories == 2 * len(tasks.views) and info.policy == "openai:scripted"
    assert info.tokens_in and info.tokens_out and info.calls == sum(
        len(a.reference) for _, a in tasks.by_text.values()) * 2
    run_json = json.loads((tmp_path / "agent" / "run.json").read_text())
    assert run_json["settings"] == Settings(model="scripted", protocol="tools").model_dump()
    transcript = json.loads((tmp_path / "agent" / "transcripts.jsonl").read_text().splitlines()[0])
    assert transcript["finish_reasons"][0] == "tool_calls" and transcript["messages"][0]["role"] == "system"
    # the whole conversation: every reply of the model, each answered by the environment
    roles = [m["role"] for m in transcript["messages"]]
    assert roles.count("assistant") == transcript["calls"] == roles.count("tool") and roles[-1] == "tool"
    # the run audited itself: every message sent to the model checked, nothing verifier-only in them
    audit = json.loads((tmp_path / "agent" / "audit.json").read_text())
    assert audit["passed"] and audit["leaks"] == []
    assert audit["messages_checked"] == sum(
        sum(m["role"] != "assistant" for m in json.loads(line)["messages"])
        for line in (tmp_path / "agent" / "transcripts.jsonl").read_text().splitlines())


@pytest.mark.parametrize("behaviour, code", [
    ("ungrounded", "payload_grounding_error"),
    ("malformed", "parse_error"),
    ("off_menu", "off_menu"),
    ("loop", "duplicate_loop"),
])
def test_a_misbehaving_model_gets_its_codebook_label(package: Path, _session_graph: Graph, tmp_path: Path,
                                                     behaviour: str, code: str) -> None:
    tasks = Tasks(package)

    def behave(view: TaskView, answer: TaskAnswer, t: int, call: int) -> Reply | None:
        first = view.menu[0].entry_id
        if behaviour == "ungrounded":  # straight to the reference terminal, naming items never pulled
            last = answer.reference[-1]
            if last.action.value == "abstain_or_escalate":
                return Reply.tool("submit_risk_packet", {"payload": [first]})
            return Reply.tool(last.action.value, {"payload": [e.entry_id for e in view.menu]})
        if behaviour == "malformed":
            return Reply.text("I think the answer is {action: flag")
        if behaviour == "off_menu":
            return Reply.tool(view.menu[0].request_action.value, {"evidence_id": "E999"})
        return Reply.tool(view.menu[0].request_action.value, {"evidence_id": first})

    protocol = "json" if behaviour == "malformed" else "tools"
    with LocalLLMServer(model(tasks, behave)) as server:
        run_agent(package, "scripted", tmp_path / "run", base_url=server.base_url,
                  settings=Settings(model="scripted", protocol=protocol))
    result = scored(_session_graph, tmp_path / "run")
    if behaviour in ("malformed", "off_menu"):
        assert result["codes"] == {code}
    else:
        assert code in result["codes"] and "reference_path" not in result["codes"]
    assert result["summary"]["evidence_grounded_valid"]["mean"] < 0.2


def test_rate_limits_and_server_errors_are_retried(package: Path, tmp_path: Path) -> None:
    tasks = Tasks(package)
    seen: list[int] = []

    def respond(body: dict[str, Any], index: int) -> Reply:
        seen.append(index)
        if index == 0:
            return Reply.error(429, retry_after=0.05)
        if index in (1, 2, 3):
            return Reply.error(503)
        view, answer, t = tasks.of(body)
        return reference_reply(view, answer, t)

    with LocalLLMServer(respond) as server:
        run_agent(package, "scripted", tmp_path / "run", base_url=server.base_url, concurrency=1)
        clean_calls = server.calls - 4
    timing = [json.loads(line) for line in (tmp_path / "run" / "timing.jsonl").read_text().splitlines()]
    assert [t["retries"] for t in timing][:2] == [4, 0] and sum(t["retries"] for t in timing) == 4
    with LocalLLMServer(model(tasks, lambda *a: None)) as server:
        run_agent(package, "scripted", tmp_path / "clean", base_url=server.base_url, concurrency=1, use_cache=False)
        assert server.calls == clean_calls
    assert files(tmp_path / "run") == files(tmp_path / "clean")


def test_a_server_that_keeps_failing_stops_the_run_cleanly_and_resume_finishes_it(package: Path,
                                                                                   tmp_path: Path) -> None:
    tasks = Tasks(package)
    with LocalLLMServer(lambda body, i: Reply.error(500, "overloaded")) as server:
        with pytest.raises(RunStopped, match="trajectories failed.*--resume"):
            run_agent(package, "scripted", tmp_path / "run", base_url=server.base_url, max_attempts=2)
    assert not (tmp_path / "run" / "trajectories.jsonl").exists()
    with LocalLLMServer(model(tasks, lambda *a: None)) as server:
        run_agent(package, "scripted", tmp_path / "run", base_url=server.base_url, resume=True)
        run_agent(package, "scripted", tmp_path / "clean", base_url=server.base_url, use_cache=False)
    assert files(tmp_path / "run") == files(tmp_path / "clean")


def _part(index: int) -> Part:
    tid = f"run/T{index}/0"
    return Part(index=index, steps=[], transcript=Transcript(trajectory_id=tid, task_id=f"T{index}", pass_index=0,
                                                             messages=[]),
                summary=TrajectorySummary(trajectory_id=tid, task_id=f"T{index}", policy="openai:m", pass_index=0,
                                          steps=0, requested=[], terminal_class=None, payload=[], end="running",
                                          plumbing={}))


def test_finished_parts_are_read_from_the_log_and_from_the_files_of_earlier_versions(tmp_path: Path) -> None:
    """What a resume starts from: a part per line of the log (one cut short by a kill is played again), and the
    one-file-per-part folders earlier versions wrote; an index outside the run is ignored."""
    (tmp_path / "000000.json").write_text(_part(0).model_dump_json())
    log = AppendLog(tmp_path / "log.jsonl")
    for index in (1, 2, 9):
        log.append(_part(index).model_dump_json())
    log.close()
    with (tmp_path / "log.jsonl").open("a") as f:
        f.write(_part(3).model_dump_json()[:40])
    assert sorted(_load_parts(tmp_path, 5)) == [0, 1, 2]
    log = AppendLog(tmp_path / "log.jsonl")  # the resumed run goes on after the cut line
    log.append(_part(3).model_dump_json())
    log.close()
    assert sorted(_load_parts(tmp_path, 5)) == [0, 1, 2, 3]


def test_output_is_the_same_bytes_whatever_the_concurrency(package: Path, tmp_path: Path) -> None:
    tasks = Tasks(package)

    def behave(view: TaskView, answer: TaskAnswer, t: int, call: int) -> Reply | None:
        rng = random.Random(f"{view.task_id}:{t}")  # a model that answers after a while, each call its own delay
        reply = reference_reply(view, answer, t)
        return Reply.tool(reply.tool_calls[0]["name"], reply.tool_calls[0]["arguments"], delay=rng.random() * 0.02)

    with LocalLLMServer(model(tasks, behave)) as server:
        run_agent(package, "scripted", tmp_path / "one", base_url=server.base_url, concurrency=1, use_cache=False)
        assert server.connections_opened == 1  # one client for the run, its connection kept alive
        run_agent(package, "scripted", tmp_path / "many", base_url=server.base_url, concurrency=16, use_cache=False)
        assert server.connections_opened <= 1 + 16
    assert files(tmp_path / "one") == files(tmp_path / "many")


def test_a_budget_stops_cleanly_and_a_resumed_run_equals_an_uninterrupted_one(package: Path,
                                                                             tmp_path: Path) -> None:
    """A sampling model (answers vary call to call): a resumed run replays what was answered before the stop
    from the run's own cache, so it ends exactly as an uninterrupted run that got the same answers."""
    tasks = Tasks(package)
    counter = iter(range(10**6))
    lock = threading.Lock()

    def behave(view: TaskView, answer: TaskAnswer, t: int, call: int) -> Reply | None:
        with lock:
            n = next(counter)
        if n % 5 == 4:  # now and then a detour the reference does not take
            return Reply.tool(view.menu[-1].request_action.value, {"evidence_id": view.menu[-1].entry_id})
        return None

    with LocalLLMServer(model(tasks, behave)) as server:
        with pytest.raises(RunStopped, match="--max-requests 12 reached"):
            run_agent(package, "scripted", tmp_path / "run", base_url=server.base_url, max_requests=12,
                      concurrency=3, use_cache=False)
        assert 0 < finished(tmp_path / "run") < len(tasks.views)
        run_agent(package, "scripted", tmp_path / "run", base_url=server.base_url, resume=True, use_cache=False)
    # the uninterrupted run: the same answers, from the responses the interrupted run recorded
    with LocalLLMServer(lambda body, i: Reply.error(500, "must not be called")) as server:
        shutil.copytree(tmp_path / "run" / "responses", tmp_path / "clean" / "responses")
        run_agent(package, "scripted", tmp_path / "clean", base_url=server.base_url, use_cache=False)
        assert server.calls == 0
    assert files(tmp_path / "run") == files(tmp_path / "clean")
    with pytest.raises(Exception, match="holds a run already"):
        run_agent(package, "scripted", tmp_path / "run", base_url="http://127.0.0.1:9/v1")


def test_a_rerun_at_temperature_0_is_free_and_identical(package: Path, tmp_path: Path) -> None:
    tasks = Tasks(package)
    prices = {"scripted": Price(input_per_mtok=1.0, output_per_mtok=2.0)}
    with LocalLLMServer(model(tasks, lambda *a: None)) as server:
        first = run_agent(package, "scripted", tmp_path / "a", base_url=server.base_url, prices=prices)
        calls = server.calls
        second = run_agent(package, "scripted", tmp_path / "b", base_url=server.base_url, prices=prices)
        assert server.calls == calls
    assert files(tmp_path / "a") == files(tmp_path / "b")
    assert first.cost is not None and first.cost > 0 and first.cost == second.cost


def test_the_api_key_is_never_written(package: Path, tmp_path: Path) -> None:
    tasks = Tasks(package)
    with LocalLLMServer(model(tasks, lambda *a: None)) as server:
        run_agent(package, "scripted", tmp_path / "run", base_url=server.base_url)
        assert all(r["headers"].get("authorization") == f"Bearer {SECRET}" for r in server.requests)
    with LocalLLMServer(lambda body, i: Reply.error(401, f"bad key {SECRET}")) as server:
        with pytest.raises(RunStopped) as stopped:
            run_agent(package, "scripted", tmp_path / "failed", base_url=server.base_url, use_cache=False)
    assert SECRET not in str(stopped.value)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) > 10
    assert not [p for p in written if SECRET.encode() in p.read_bytes()]


def _readme_policy() -> str:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    start = readme.index("```python\n# my_policy.py")
    return readme[start + len("```python\n"):readme.index("```", start + 10)]


def test_the_readme_python_policy_runs_like_the_baseline_it_imitates(package: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    code = _readme_policy()
    assert len(code.strip().splitlines()) <= 11  # "a ten-line example"
    (tmp_path / "my_policy.py").write_text(code)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(__import__("sys").modules, "my_policy", raising=False)
    run_policy(package, "python:my_policy:act", 2, 0, tmp_path / "mine")
    run_policy(package, "request_everything", 2, 0, tmp_path / "base")
    mine = [json.loads(x) for x in (tmp_path / "mine" / "trajectories.jsonl").read_text().splitlines()]
    base = [json.loads(x) for x in (tmp_path / "base" / "trajectories.jsonl").read_text().splitlines()]
    strip = ("trajectory_id", "policy")
    assert [{k: v for k, v in t.items() if k not in strip} for t in mine] == \
        [{k: v for k, v in t.items() if k not in strip} for t in base]


def _voe(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "voe.cli", *args], capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.timeout(600)
def test_voe_run_openai_then_score_and_report_and_a_killed_run_resumes(package: Path, tmp_path: Path,
                                                                       cli_env: dict[str, str]) -> None:
    """README's agent command from the command line: a model run that `voe score` and `voe report` handle like a
    baseline run; killed (SIGKILL) mid-way and resumed, it equals a run that was never interrupted."""
    tasks = Tasks(package)

    def slow(view: TaskView, answer: TaskAnswer, t: int, call: int) -> Reply | None:
        reply = reference_reply(view, answer, t)
        return Reply.tool(reply.tool_calls[0]["name"], reply.tool_calls[0]["arguments"], delay=0.03)

    env = {**cli_env, "OPENAI_API_KEY": SECRET, "VOE_CACHE_DIR": str(tmp_path / "cache")}
    with LocalLLMServer(model(tasks, slow)) as server:
        args = ["run", str(package), "--policy", "openai:scripted", "--base-url", server.base_url, "--passes", "3",
                "--concurrency", "2", "--no-cache"]
        child = subprocess.Popen([sys.executable, "-m", "voe.cli", *args, "--out", str(tmp_path / "killed")], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and finished(tmp_path / "killed") < 5:
            time.sleep(0.05)
        child.kill()
        child.wait()
        assert 5 <= finished(tmp_path / "killed") < 3 * len(tasks.views)
        resumed = _voe([*args, "--out", str(tmp_path / "killed"), "--resume"], env)
        assert resumed.returncode == 0, resumed.stderr
        clean = _voe([*args, "--out", str(tmp_path / "clean"), "--json"], env)
        assert clean.returncode == 0, clean.stderr
    assert files(tmp_path / "killed") == files(tmp_path / "clean")
    info = json.loads(clean.stdout)
    assert info["policy"] == "openai:scripted" and info["trajectories"] == 3 * len(tasks.views)
    ref = _voe(["run", str(package), "--policy", "reference", "--passes", "3", "--out", str(tmp_path / "ref")], env)
    assert ref.returncode == 0, ref.stderr
    score = _voe(["score", str(tmp_path / "clean"), "--json"], env)
    assert score.returncode == 0, score.stderr
    assert json.loads(score.stdout)["codebook"] == {"reference_path": 3 * len(tasks.views)}
    assert _voe(["score", str(tmp_path / "ref")], env).returncode == 0  # `voe report` reads the scores
    report = _voe(["report", str(tmp_path / "clean"), str(tmp_path / "ref"), "--against", str(tmp_path / "ref"),
                   "--out", str(tmp_path / "report")], env)
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    assert "## Model usage" in text and "openai:scripted" in text and "## Paired difference" in text
    usage_row = next(line for line in text.splitlines() if line.startswith("| openai:scripted |") and "tokens" not in line
                     and line.count("|") == 6)
    assert str(info["tokens_in"]) in usage_row
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert not [p for p in written if SECRET.encode() in p.read_bytes()]


def test_a_run_whose_messages_carry_a_family_name_fails_its_audit(package: Path, _session_graph: Graph,
                                                                  tmp_path: Path, cli_env: dict[str, str]) -> None:
    """A package that shows a task's family in its question (a compiler that leaks): every run of it says so in
    its audit and exits 1, and `voe score` prints the audit line and exits 1; the same run of the package as
    compiled passes."""
    leaky = tmp_path / "leaky"
    task_id, family = leaky_copy(package, leaky)

    clean = _voe(["run", str(package), "--policy", "random", "--out", str(tmp_path / "clean")], cli_env)
    assert clean.returncode == 0, clean.stderr
    assert json.loads((tmp_path / "clean" / "audit.json").read_text())["passed"]

    run = _voe(["run", str(leaky), "--policy", "random", "--out", str(tmp_path / "run")], cli_env)
    assert run.returncode == 1 and "audit failed" in run.stderr and "family" in run.stderr
    assert "Traceback" not in run.stderr
    audit = json.loads((tmp_path / "run" / "audit.json").read_text())
    assert not audit["passed"] and {x["kind"] for x in audit["leaks"]} == {"family"}
    assert {x["trajectory_id"].split("/")[-2] for x in audit["leaks"]} == {task_id}
    assert family not in (tmp_path / "run" / "audit.json").read_text()  # named by kind and hash only

    score = _voe(["score", str(tmp_path / "run")], cli_env)
    assert score.returncode == 1 and "audit FAILED: 1 message(s)" in score.stdout, score.stdout + score.stderr
    ok = _voe(["score", str(tmp_path / "clean")], cli_env)
    assert ok.returncode == 0 and "audit passed" in ok.stdout, ok.stderr


LLAMA_CONTEXT = 8192  # tokens, as a small local model's server is started


def _llama(tasks: Tasks, slot: threading.Lock) -> Callable[..., Reply]:
    """A model behind llama-cpp-python as users meet it: one slot (requests wait their turn), an 8k context
    (longer prompts are refused with its 400), `tool_choice: "required"` refused with a 500; the model pulls
    every menu item in order, then escalates."""
    def respond(body: dict[str, Any], index: int) -> Reply:
        with slot:
            if body.get("tool_choice") == "required":
                return Reply.error(500, "Internal Server Error")
            prompt = sum(len(str(m.get("content") or "")) for m in body["messages"]) + len(json.dumps(body.get("tools")))
            if prompt // 4 > LLAMA_CONTEXT:
                return Reply.error(400, f"the request exceeds the available context size ({prompt // 4} tokens), "
                                        "try increasing it")
            view, _, t = tasks.of(body)
            if t < len(view.menu):
                entry_ = view.menu[t]
                return Reply.tool(entry_.request_action.value, {"evidence_id": entry_.entry_id})
            return Reply.tool("abstain_or_escalate", {})
    return respond


@pytest.mark.timeout(600)
def test_a_local_model_with_an_8k_context_and_one_slot_finishes_every_task_with_the_defaults(
        package: Path, _session_graph: Graph, tmp_path: Path, cli_env: dict[str, str]) -> None:
    tasks = Tasks(package)
    env = {**cli_env, "OPENAI_API_KEY": SECRET, "VOE_CACHE_DIR": str(tmp_path / "cache")}
    with LocalLLMServer(_llama(tasks, threading.Lock()), models=["local"],
                        model_info={"meta": {"n_ctx": LLAMA_CONTEXT, "size": 1}}) as first:
        port = first.port
        done = _voe(["run", str(package), "--policy", "openai:local", "--base-url", first.base_url, "--out",
                     str(tmp_path / "run")], env)
        assert done.returncode == 0, done.stderr
        # the package's largest pull-everything episode is more than the server's 8k: said before the run
        assert "is smaller than what an episode that pulls every item" in done.stderr
        calls = first.calls
    ends = {t["end"] for t in read_jsonl(tmp_path / "run" / "trajectories.jsonl")}
    trajectories = list(read_jsonl(tmp_path / "run" / "trajectories.jsonl"))
    assert len(trajectories) == len(tasks.views)  # every task, none lost to the overflows
    assert "context_exhausted" in ends and "terminal" in ends
    settings = json.loads((tmp_path / "run" / "run.json").read_text())["settings"]
    assert settings["max_tokens"] == 2048  # bounded by default
    summary, scores = score_run(_session_graph, tmp_path / "run")
    assert summary["codebook"]["context_exhausted"] == sum(t["end"] == "context_exhausted" for t in trajectories)
    # the first call with tools found "required" failing where "auto" is answered, and failing again (not a passing
    # server error): "auto" from then on
    requests = [r["body"] for r in first.requests if r["body"] and "tools" in r["body"]]
    assert [b["tool_choice"] for b in requests[:3]] == ["required", "auto", "required"]
    assert {b["tool_choice"] for b in requests[3:]} == {"auto"}

    # other weights under the same alias, on the same URL: nothing of the first server's is replayed
    with LocalLLMServer(_llama(tasks, threading.Lock()), models=["local"], port=port,
                        model_info={"meta": {"n_ctx": LLAMA_CONTEXT, "size": 2}}) as second:
        again = _voe(["run", str(package), "--policy", "openai:local", "--base-url", second.base_url, "--out",
                      str(tmp_path / "again")], env)
        assert again.returncode == 0, again.stderr
        assert second.calls == calls
