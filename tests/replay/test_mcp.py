"""`voe serve` (replay/mcp_server.py): the environment as an MCP server, driven by the SDK's own client over stdio
and over streamable HTTP. The session is a voe run equal to a `python:` policy's making the same moves, `voe score`
verifies it, and no tool, resource or description carries anything verifier-only."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.replay.plays import leaky_copy, play_as_python_policy, reference_plans, same_run, verifier_only
from voe.graph import Graph
from voe.jsonl import read_jsonl
from voe.verifiers.score import score_run


async def _play(client: Any, plans: dict[str, list[dict[str, Any]]], seen: list[str],
                only: set[str] | None = None) -> None:
    tools = await client.list_tools()
    seen += [json.dumps(t.model_dump(mode="json")) for t in tools.tools]
    listed = (await client.call_tool("list_tasks", {})).structured_content["tasks"]
    seen.append(json.dumps(listed))
    for task in listed:
        if only is not None and task["task_id"] not in only:
            continue
        opened = await client.call_tool("start_task", {"task_id": task["task_id"]})
        assert not opened.is_error, opened.content
        seen.append(json.dumps(opened.structured_content))
        seen.append((await client.read_resource("voe://task")).contents[0].text)
        for move in plans[task["task_id"]]:
            # a request's tool parameter is `entry_id` (an entry of the open menu)
            args = {("entry_id" if k == "evidence_id" else k): v for k, v in move.items() if k != "action"}
            result = await client.call_tool(move["action"], args)
            assert not result.is_error, result.content
            seen.append(json.dumps(result.structured_content))
        assert result.structured_content["done"]


def test_a_scripted_client_over_stdio_makes_the_run_a_python_policy_makes(
        package: Path, _session_graph: Graph, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp import Client, StdioServerParameters
    from mcp.types import Implementation

    plans = reference_plans(package)
    seen: list[str] = []

    async def drive() -> None:
        params = StdioServerParameters(command=sys.executable, args=["-m", "voe.cli", "serve", str(package), "--out",
                                                                     str(tmp_path / "mcp")],
                                       env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)})
        async with Client(params, mode="legacy", client_info=Implementation(name="scripted", version="1.0")) as c:
            await _play(c, plans, seen)
            again = await c.call_tool("start_task", {"task_id": next(iter(plans))})
            assert again.is_error and "all its passes" in again.content[0].text  # one pass by default
            ended = await c.call_tool("abstain_or_escalate", {})
            assert ended.is_error and "start_task first" in ended.content[0].text

    asyncio.run(drive())
    info = json.loads((tmp_path / "mcp" / "run.json").read_text())
    assert info["policy"] == "mcp:scripted/1.0" and info["settings"]["client"] == {"name": "scripted", "version": "1.0"}
    assert info["trajectories"] == len(plans)
    monkeypatch.chdir(tmp_path)
    play_as_python_policy(package, plans, tmp_path, tmp_path / "python")
    same_run(tmp_path / "mcp", tmp_path / "python")
    _, mine = score_run(_session_graph, tmp_path / "mcp")
    _, theirs = score_run(_session_graph, tmp_path / "python")
    assert [(s.task_id, s.valid, s.cost_score, s.label) for s in mine] == \
        [(s.task_id, s.valid, s.cost_score, s.label) for s in theirs]
    assert sum(s.valid for s in mine) >= len(plans) // 2  # the reference's moves are valid

    secrets = verifier_only(package)
    text = "\n".join(seen)
    assert secrets and not [s for s in secrets if s in text]
    assert "must_bind" not in text and "reference_payload" not in text


def test_the_http_transport_serves_a_client_and_writes_the_run(package: Path, tmp_path: Path) -> None:
    from mcp import Client
    from mcp.types import Implementation

    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "voe.cli", "serve", str(package), "--out", str(out),
                             "--transport", "http", "--port", "0"], stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
        assert match, line
        url = match.group(0)
        first = next(iter(reference_plans(package)))

        async def drive() -> None:
            async with Client(url, mode="legacy", client_info=Implementation(name="web", version="2")) as c:
                await c.call_tool("start_task", {"task_id": first})
                done = await c.call_tool("abstain_or_escalate", {})
                assert done.structured_content["done"] and done.structured_content["end"] == "terminal"

        asyncio.run(drive())
        # a web page in the user's browser may post to a loopback port: a foreign Origin or Host (DNS rebinding)
        # is refused before MCP reads the body
        port = int(match.group(1))
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        for headers, status in (({"Origin": "http://evil.example"}, 403), ({"Host": "evil.example"}, 421),
                                ({"Host": f"127.0.0.1:{port}"}, None)):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("POST", "/mcp", body, {"Content-Type": "application/json",
                                                 "Accept": "application/json, text/event-stream", **headers})
            got = conn.getresponse().status
            conn.close()
            assert got == status if status is not None else got not in (403, 421), (headers, got)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    info = json.loads((out / "run.json").read_text())
    assert info["trajectories"] == 1 and info["policy"] == "mcp:web/2"
    assert [t["task_id"] for t in read_jsonl(out / "trajectories.jsonl")] == [first]


def test_a_new_client_session_continues_the_served_run_and_unplayed_tasks_are_counted(
        package: Path, _session_graph: Graph, tmp_path: Path) -> None:
    """README's MCP configuration started twice, as a client restarts its servers with each session: the second
    session continues the first's run; scored between them, the tasks not yet played are counted, not dropped."""
    from mcp import Client, StdioServerParameters
    from mcp.types import Implementation

    plans = reference_plans(package)
    order = list(plans)
    first, second = set(order[: len(order) // 2]), set(order[len(order) // 2:])
    out = tmp_path / "run-agent"
    params = StdioServerParameters(command=sys.executable, args=["-m", "voe.cli", "serve", str(package), "--out",
                                                                 str(out)],
                                   env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)})
    tools: dict[str, Any] = {}

    async def session(tasks: set[str], name: str) -> None:
        async with Client(params, mode="legacy", client_info=Implementation(name=name, version="1")) as c:
            tools.update({t.name: t for t in (await c.list_tools()).tools})
            await _play(c, plans, [], only=tasks)
            listed = (await c.call_tool("list_tasks", {})).structured_content["tasks"]
            assert {t["task_id"] for t in listed if t["passes_left"] == 0} >= tasks

    asyncio.run(session(first, "claude-code"))
    assert json.loads((out / "run.json").read_text())["trajectories"] == len(first)
    summary, scores = score_run(_session_graph, out)
    assert summary["unplayed"] == len(second) and summary["trajectories"] == len(order)
    assert {s.task_id for s in scores if s.label == "unplayed"} == second
    assert not any(s.valid for s in scores if s.label == "unplayed")

    asyncio.run(session(second, "claude-code"))
    info = json.loads((out / "run.json").read_text())
    assert info["trajectories"] == len(order) and info["policy"] == "mcp:claude-code/1"
    summary, scores = score_run(_session_graph, out)
    assert summary["unplayed"] == 0 and sorted(s.task_id for s in scores) == sorted(order)

    # what the tools say they take and do
    request = tools["request_characterization"]
    schema = request.input_schema
    assert list(schema["properties"]) == ["entry_id", "page"] and "enum" not in json.dumps(schema)
    assert schema["required"] == ["entry_id"] and "spends no step" in schema["properties"]["page"]["description"]
    assert "menu" in schema["properties"]["entry_id"]["description"]
    assert tools["list_tasks"].annotations.read_only_hint is True
    assert request.annotations.read_only_hint is False and request.annotations.destructive_hint is False
    assert tools["submit_risk_packet"].annotations.destructive_hint is True

    # --fresh starts over; a run of another kind in --out is not continued
    proc = subprocess.run([sys.executable, "-m", "voe.cli", "serve", str(package), "--out", str(tmp_path)],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert proc.returncode == 2 and "--fresh replaces it" in proc.stderr and "Traceback" not in proc.stderr


def test_an_id_off_the_open_menu_is_an_off_menu_step_and_the_answer_names_the_entries(
        package: Path, tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    task = next(iter(reference_plans(package)))
    params = StdioServerParameters(command=sys.executable, args=["-m", "voe.cli", "serve", str(package), "--out",
                                                                 str(tmp_path / "run")],
                                   env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)})

    async def drive() -> dict[str, Any]:
        async with Client(params, mode="legacy") as c:
            opened = (await c.call_tool("start_task", {"task_id": task})).structured_content
            action = opened["menu"][0]["request_action"]
            got = await c.call_tool(action, {"entry_id": "E999"})
            assert not got.is_error
            return {"menu": opened["menu"], "action": action, **got.structured_content}

    answer = asyncio.run(drive())
    assert answer["outcome"] == "off_menu" and answer["done"] is False
    fits = [e["entry_id"] for e in answer["menu"] if e["request_action"] == answer["action"]]
    assert "'E999' is no entry" in answer["note"] and ", ".join(fits) in answer["note"]
    assert not (tmp_path / "run").exists()  # no episode ended: nothing written


def _interruptible() -> None:
    """Ctrl-C as a terminal delivers it (a suite started with `cmd &` inherits SIGINT ignored; voe keeps it so)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextlib.contextmanager
def _served(package: Path, out: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`voe serve --transport http` on a free port: its process and URL; stopped when the block ends."""
    proc = subprocess.Popen([sys.executable, "-m", "voe.cli", "serve", str(package), "--out", str(out),
                             "--transport", "http", "--port", "0"], stderr=subprocess.PIPE, text=True,
                            preexec_fn=_interruptible)
    try:
        assert proc.stderr is not None
        said: list[str] = []
        match = None
        while match is None and len(said) < 5:  # a resumed run says so first
            said.append(proc.stderr.readline())
            match = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", said[-1])
        assert match is not None, f"voe serve did not say where it listens: {said}"
        yield proc, match.group(0)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_two_clients_cannot_touch_each_others_episode_and_their_run_is_scored(
        package: Path, _session_graph: Graph, tmp_path: Path) -> None:
    from mcp import Client
    from mcp.types import Implementation

    order = list(reference_plans(package))
    out = tmp_path / "run"
    with _served(package, out) as (_, url):
        async def drive() -> None:
            async with Client(url, mode="legacy", client_info=Implementation(name="alice", version="1")) as a, \
                    Client(url, mode="legacy", client_info=Implementation(name="bob", version="2")) as b:
                assert not (await a.call_tool("start_task", {"task_id": order[0]})).is_error
                for attempt in (b.call_tool("abstain_or_escalate", {}),
                                b.call_tool("start_task", {"task_id": order[1]}),
                                b.call_tool("request_characterization", {"entry_id": "E1"})):
                    refused = await attempt
                    assert refused.is_error and "another client's session" in refused.content[0].text
                assert (await a.call_tool("abstain_or_escalate", {})).structured_content["done"]
                assert not (await b.call_tool("start_task", {"task_id": order[1]})).is_error
                refused = await a.call_tool("abstain_or_escalate", {})
                assert refused.is_error and "another client's session" in refused.content[0].text
                assert (await b.call_tool("abstain_or_escalate", {})).structured_content["done"]

        asyncio.run(drive())
    info = json.loads((out / "run.json").read_text())
    assert info["trajectories"] == 2 and [c["name"] for c in info["settings"]["clients"]] == ["alice", "bob"]
    summary, scores = score_run(_session_graph, out)  # one policy name for every trajectory: scoreable
    assert summary["trajectories"] == len(order) and {s.task_id for s in scores if s.label != "unplayed"} == \
        set(order[:2])


def test_an_episode_whose_session_ended_is_the_next_sessions_to_continue_or_drop_and_the_run_scores(
        package: Path, _session_graph: Graph, tmp_path: Path) -> None:
    """A client that reconnects mid-episode (its session closed, a new one opened): the new session continues the
    episode the old one left open, its steps so far standing; a later one drops such an episode by starting a
    task, and the dropped task keeps its pass. Two live sessions still cannot touch each other's episode
    (test_two_clients_cannot_touch_each_others_episode_and_their_run_is_scored)."""
    from mcp import Client
    from mcp.types import Implementation

    order = list(reference_plans(package))
    out = tmp_path / "run"
    agent = Implementation(name="agent", version="1")
    with _served(package, out) as (_, url):
        async def drive() -> None:
            async with Client(url, mode="legacy", client_info=agent) as c:
                assert not (await c.call_tool("start_task", {"task_id": order[0]})).is_error
                assert not (await c.call_tool("request_characterization", {"entry_id": "E1"})).is_error
            async with Client(url, mode="legacy", client_info=agent) as c:  # reconnected: continues it
                done = await c.call_tool("abstain_or_escalate", {})
                assert not done.is_error, done.content
                assert done.structured_content["done"] and done.structured_content["t"] == 1  # after the first session's step
                assert not (await c.call_tool("start_task", {"task_id": order[1]})).is_error
                assert not (await c.call_tool("request_characterization", {"entry_id": "E1"})).is_error
            async with Client(url, mode="legacy", client_info=agent) as c:  # reconnected: starts another
                opened = await c.call_tool("start_task", {"task_id": order[2]})
                assert not opened.is_error, opened.content
                assert f"task {order[1]} left open" in opened.structured_content["note"]
                assert (await c.call_tool("abstain_or_escalate", {})).structured_content["done"]
                listed = {t["task_id"]: t["passes_left"]
                          for t in (await c.call_tool("list_tasks", {})).structured_content["tasks"]}
                assert (listed[order[0]], listed[order[1]], listed[order[2]]) == (0, 1, 0)

        asyncio.run(drive())
    info = json.loads((out / "run.json").read_text())
    assert info["trajectories"] == 2 and info["policy"] == "mcp:agent/1"
    steps = list(read_jsonl(out / "steps.jsonl"))
    assert [s["trajectory_id"].split("/")[-2] for s in steps] == [order[0], order[0], order[2]]  # none of order[1]
    summary, scores = score_run(_session_graph, out)
    assert summary["trajectories"] == len(order)
    assert sorted(s.task_id for s in scores if s.label != "unplayed") == sorted([order[0], order[2]])


def test_a_server_killed_mid_episode_leaves_a_scoreable_run_that_serve_resumes(
        package: Path, _session_graph: Graph, tmp_path: Path) -> None:
    import signal

    from mcp import Client
    from mcp.types import Implementation

    order = list(reference_plans(package))
    out = tmp_path / "run"
    with _served(package, out) as (proc, url):
        async def drive() -> None:
            async with Client(url, mode="legacy", client_info=Implementation(name="c", version="1")) as c:
                for task in order[:2]:
                    await c.call_tool("start_task", {"task_id": task})
                    await c.call_tool("abstain_or_escalate", {})
                await c.call_tool("start_task", {"task_id": order[2]})
                await c.call_tool("request_characterization", {"entry_id": "E1"})

        asyncio.run(drive())
        proc.send_signal(signal.SIGKILL)  # its third episode open, nothing flushed on the way out
    summary, scores = score_run(_session_graph, out)
    assert sorted(s.task_id for s in scores if s.label != "unplayed") == sorted(order[:2])
    with _served(package, out) as (_, url):  # resumed: the open episode was not finished, its task is played again
        async def again() -> None:
            async with Client(url, mode="legacy", client_info=Implementation(name="c", version="1")) as c:
                listed = {t["task_id"]: t["passes_left"]
                          for t in (await c.call_tool("list_tasks", {})).structured_content["tasks"]}
                assert listed[order[0]] == 0 and listed[order[2]] == 1
                await c.call_tool("start_task", {"task_id": order[2]})
                assert (await c.call_tool("abstain_or_escalate", {})).structured_content["done"]

        asyncio.run(again())
    assert json.loads((out / "run.json").read_text())["trajectories"] == 3


def _one_episode_over_stdio(package: Path, out: Path, task_id: str) -> subprocess.CompletedProcess[str]:
    """`voe serve` over stdio as a client drives it, line by line (JSON-RPC): one episode of `task_id`, then the
    client leaves (closes the server's stdin). The server's exit code and stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "voe.cli", "serve", str(package), "--out", str(out)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    calls = [{"method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                 "clientInfo": {"name": "by-hand", "version": "1"}}},
             {"method": "tools/call", "params": {"name": "start_task", "arguments": {"task_id": task_id}}},
             {"method": "tools/call", "params": {"name": "abstain_or_escalate", "arguments": {}}}]
    for i, call in enumerate(calls):
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, **call}) + "\n")
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        assert "error" not in answer and not answer["result"].get("isError"), answer
        if i == 0:
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    out_text, err = proc.communicate(timeout=120)  # stdin closed: the client is gone
    return subprocess.CompletedProcess(proc.args, proc.returncode, out_text, err)


def test_a_served_run_says_its_audit_when_the_server_ends_and_a_failed_one_exits_1(
        package: Path, tmp_path: Path) -> None:
    """The client leaving (stdin closed) or Ctrl-C ends `voe serve`: the audit line is said on stderr (stdout is
    the MCP channel), and a run whose audit failed exits 1, as `voe run` does; a clean one exits 0."""
    leaky = tmp_path / "leaky"
    task_id, family = leaky_copy(package, leaky)

    failed = _one_episode_over_stdio(leaky, tmp_path / "leaked", task_id)
    assert failed.returncode == 1, failed.stderr
    assert "audit FAILED: 1 message(s)" in failed.stderr and "the run's audit failed" in failed.stderr
    assert "Traceback" not in failed.stderr and family not in failed.stderr
    assert not json.loads((tmp_path / "leaked" / "audit.json").read_text())["passed"]

    clean = _one_episode_over_stdio(package, tmp_path / "clean", task_id)
    assert clean.returncode == 0, clean.stderr
    assert "audit passed" in clean.stderr and "voe: error" not in clean.stderr

    import signal

    from mcp import Client
    from mcp.types import Implementation

    out = tmp_path / "leaked-http"
    with _served(leaky, out) as (proc, url):
        async def drive() -> None:
            async with Client(url, mode="legacy", client_info=Implementation(name="c", version="1")) as c:
                await c.call_tool("start_task", {"task_id": task_id})
                assert (await c.call_tool("abstain_or_escalate", {})).structured_content["done"]

        asyncio.run(drive())
        proc.send_signal(signal.SIGINT)  # Ctrl-C: the server stops, the run is written and its audit said
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert "audit FAILED: 1 message(s)" in err and "Traceback" not in err

    # SIGTERM (a client or service manager stopping the server) ends it as Ctrl-C does, with the shell's 143
    out = tmp_path / "clean-http"
    with _served(package, out) as (proc, url):
        asyncio.run(drive())
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "audit passed" in err and "terminated" in err and "Traceback" not in err
    assert json.loads((out / "audit.json").read_text())["passed"]
