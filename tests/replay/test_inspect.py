"""`inspect eval voe/bench` (replay/inspect_task.py) and `voe import-inspect` (replay/inspect_import.py): an Inspect
eval with the `mockllm` model offline, and Inspect's own CLI with its OpenAI-compatible provider against the
project's scripted server. The imported runs equal a `python:` policy's making the same moves, `voe score` gives
them the verdicts Inspect's scorer gave, and no answer, gold family or API key reaches the log or the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.llm_server import LocalLLMServer, Reply
from tests.replay.plays import (
    Move,
    arguments,
    leaky_copy,
    play_as_python_policy,
    reference_plans,
    same_run,
    verifier_only,
)
from voe.artifacts.package import load_package
from voe.cli import cli
from voe.graph import Graph
from voe.jsonl import read_jsonl
from voe.replay.agent import task_text
from voe.replay.inspect_import import import_log
from voe.verifiers.score import score_run

KEY = "sk-voe-test-0123456789abcdef"


@pytest.fixture
def offline_inspect(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """Inspect's user folders under tmp_path, no control server, no .env found above the working directory."""
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg-data"), "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
           "INSPECT_EVAL_CTL_SERVER": "false", "INSPECT_LOG_DIR": str(tmp_path / "logs")}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    return env


def _by_text(package: Path, plans: dict[str, list[Move]]) -> dict[str, list[Move]]:
    views, _, _, _ = load_package(package)
    return {task_text(v): plans[v.task_id] for v in views}


def _mockllm_outputs(package: Path, plans: dict[str, list[Move]]) -> Any:
    """mockllm's `custom_outputs`: the n-th turn of a sample gets its task's n-th move (samples run concurrently,
    so the move is found from the sample's own conversation, never from the order of calls)."""
    from inspect_ai.model import ChatMessageAssistant, ModelOutput, ModelUsage
    from inspect_ai.tool import ToolCall

    by_text = _by_text(package, plans)

    def output(messages: list[Any], tools: list[Any], tool_choice: Any, config: Any) -> ModelOutput:
        moves = by_text[next(m.text for m in messages if m.role == "user")]
        turn = sum(1 for m in messages if m.role == "assistant")
        move = moves[turn]
        if "text" in move:
            out = ModelOutput.from_content("mockllm/model", move["text"])
        else:
            calls = [ToolCall(id=f"call_{turn}_{i}", function=c["action"], arguments=arguments(c))
                     for i, c in enumerate(move.get("calls", [move]))]
            out = ModelOutput.from_message(ChatMessageAssistant(content="", tool_calls=calls, model="model"))
        out.usage = ModelUsage(input_tokens=10, output_tokens=2, total_tokens=12)  # else mockllm counts with tiktoken,
        return out                                                                   # which downloads its tables

    return output


def _log_text(log_file: Path) -> str:
    """Every member of an .eval log, as stored (Inspect compresses them with zstd, which zipfile reads once
    zipfile_zstd, a dependency of Inspect, has patched it)."""
    import zipfile_zstd  # noqa: F401

    with zipfile.ZipFile(log_file) as z:
        return "\n".join(z.read(name).decode("utf-8", "replace") for name in z.namelist())


def test_an_inspect_eval_is_the_run_a_python_policy_makes_and_scores_as_voe_scores_it(
        package: Path, _session_graph: Graph, tmp_path: Path, offline_inspect: dict[str, str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    from voe.replay.inspect_task import bench

    plans = reference_plans(package, detours=True)
    model = get_model("mockllm/model", custom_outputs=_mockllm_outputs(package, plans))
    [log] = inspect_eval(bench(package=str(package)), model=model, display="none", log_realtime=False)
    assert log.status == "success", log.error
    done = import_log(Path(log.location), tmp_path / "inspect")
    assert done.skipped == {} and done.info.trajectories == len(plans)
    assert done.info.policy == "inspect:mockllm/model" and done.info.settings is not None
    assert done.info.settings["surface"] == "inspect"

    play_as_python_policy(package, plans, tmp_path, tmp_path / "python")
    same_run(tmp_path / "inspect", tmp_path / "python")
    outcomes = {s["outcome"] for s in read_jsonl(tmp_path / "inspect" / "steps.jsonl")}
    assert {"parse_error", "off_menu", "duplicate", "revealed", "terminal"} <= outcomes  # the detours were played

    _, mine = score_run(_session_graph, tmp_path / "inspect")
    _, theirs = score_run(_session_graph, tmp_path / "python")
    assert [(s.task_id, s.valid, s.cost_score, s.label) for s in mine] == \
        [(s.task_id, s.valid, s.cost_score, s.label) for s in theirs]
    assert sum(s.valid for s in mine) >= len(plans) // 2  # the reference's moves are valid
    # Inspect's scorer (the verifier's Python twin) said what the graph says
    said = {str(s.id): s.scores["verdict_scorer"].value for s in log.samples or []}
    assert {s.task_id: (float(s.valid), s.cost_score) for s in mine} == \
        {t: (v["valid"], v["cost_score"]) for t, v in said.items()}

    text = _log_text(Path(log.location))
    secrets = verifier_only(package)
    assert secrets and not [s for s in secrets if s in text]
    assert "must_bind" not in text and "reference_payload" not in text and "accepted_classes" not in text

    again = import_log(Path(log.location), tmp_path / "again")  # the same log, the same run
    for name in ("steps.jsonl", "observations.jsonl", "trajectories.jsonl"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "inspect" / name).read_bytes()
    assert again.info.run_id == done.info.run_id


def test_inspects_cli_plays_voe_bench_on_an_openai_compatible_server_and_the_key_stays_out(
        package: Path, tmp_path: Path, offline_inspect: dict[str, str]) -> None:
    plans = reference_plans(package)
    by_text = _by_text(package, plans)

    def respond(body: dict[str, Any], index: int) -> Reply:
        messages = body["messages"]
        user = next(m["content"] for m in messages if m["role"] == "user")
        if isinstance(user, list):
            user = "".join(part.get("text", "") for part in user)
        move = by_text[user][sum(1 for m in messages if m["role"] == "assistant")]
        return Reply.tool(move["action"], arguments(move))

    with LocalLLMServer(respond) as server:
        # anything Inspect would fetch from the internet goes to a proxy that refuses it (loopback stays direct)
        env = {**os.environ, **offline_inspect, "LOCAL_BASE_URL": server.base_url, "LOCAL_API_KEY": KEY,
               "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1,localhost"}
        inspect = Path(sys.executable).parent / "inspect"
        done = subprocess.run([str(inspect), "eval", "voe/bench", "-T", f"package={package}", "-T", "passes=2",
                               "--model", "openai-api/local/scripted", "--display", "none", "--no-log-realtime"],
                              env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        assert any(KEY in r["headers"].get("authorization", "") for r in server.requests)  # the key was used
    [log_file] = (tmp_path / "logs").glob("*.eval")
    text = _log_text(log_file)
    assert KEY not in text
    secrets = verifier_only(package)
    assert not [s for s in secrets if s in text]

    result = CliRunner().invoke(cli, ["import-inspect", str(log_file), "--out", str(tmp_path / "run"), "--json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["trajectories"] == 2 * len(plans) and info["passes"] == 2 and info["skipped"] == {}
    assert info["settings"]["inspect"]["task"] == "voe/bench"
    run_text = "".join(p.read_text() for p in (tmp_path / "run").rglob("*") if p.is_file())
    assert KEY not in run_text and "127.0.0.1" not in run_text  # neither the key nor the endpoint is copied
    passes = [t["pass_index"] for t in read_jsonl(tmp_path / "run" / "trajectories.jsonl")]
    assert passes == [0] * len(plans) + [1] * len(plans)  # as `voe run` orders them


def test_import_refuses_an_edited_log_another_package_and_a_stranger(
        package: Path, tmp_path: Path, offline_inspect: dict[str, str]) -> None:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import read_eval_log, write_eval_log
    from inspect_ai.model import ChatMessageTool, get_model

    from voe.replay.inspect_task import bench

    plans = reference_plans(package)
    model = get_model("mockllm/model", custom_outputs=_mockllm_outputs(package, plans))
    [log] = inspect_eval(bench(package=str(package)), model=model, display="none", log_realtime=False)

    def voe(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "voe.cli", *args], capture_output=True, text=True, timeout=300)

    edited = read_eval_log(log.location)
    assert edited.samples
    sample = edited.samples[0]
    answer = next(m for m in sample.messages if isinstance(m, ChatMessageTool))
    answer.content = answer.text.replace('"outcome": "', '"outcome": "x')
    write_eval_log(edited, str(tmp_path / "edited.eval"))
    result = voe("import-inspect", str(tmp_path / "edited.eval"), "--out", str(tmp_path / "r1"))
    assert result.returncode == 2 and f"sample {sample.id}/0, step 0" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "r1").exists()

    other = read_eval_log(log.location)
    other.eval.metadata = {**(other.eval.metadata or {}), "voe_content_hash": "0" * 64}
    write_eval_log(other, str(tmp_path / "other.eval"))
    result = voe("import-inspect", str(tmp_path / "other.eval"), "--out", str(tmp_path / "r2"))
    assert result.returncode == 2 and "played on package 000000000000" in result.stderr, result.stderr

    (tmp_path / "stranger.eval").write_bytes(b"PK\x03\x04 not really a zip")
    result = voe("import-inspect", str(tmp_path / "stranger.eval"), "--out", str(tmp_path / "r3"))
    assert result.returncode == 2 and "not an Inspect log" in result.stderr and "Traceback" not in result.stderr


def test_an_import_whose_audit_fails_exits_1_with_json_too(
        package: Path, tmp_path: Path, offline_inspect: dict[str, str]) -> None:
    """A log played on a package that shows a task's family: the imported run's audit fails, and
    `voe import-inspect` exits 1 whether it prints JSON or text (the run is kept)."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    from voe.replay.inspect_task import bench

    leaky = tmp_path / "leaky"
    leaky_copy(package, leaky)
    plans = reference_plans(leaky)
    model = get_model("mockllm/model", custom_outputs=_mockllm_outputs(leaky, plans))
    [log] = inspect_eval(bench(package=str(leaky)), model=model, display="none", log_realtime=False)
    assert log.status == "success", log.error

    for args in (["--json"], []):
        out = tmp_path / f"run{len(args)}"
        done = subprocess.run([sys.executable, "-m", "voe.cli", "import-inspect", str(log.location), "--out", str(out),
                               *args], capture_output=True, text=True, timeout=300)
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        assert "the run's audit failed" in done.stderr and "Traceback" not in done.stderr
        assert not json.loads((out / "audit.json").read_text())["passed"]
        if args:  # the JSON is printed whole before the exit
            assert json.loads(done.stdout)["trajectories"] == len(plans)
