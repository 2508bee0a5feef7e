"""The scripted OpenAI-compatible server, exercised through the official openai client and raw HTTP."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.llm_server import LocalLLMServer, LocalLLMServerProcess, Reply, Respond, scripted

USER: list[Any] = [{"role": "user", "content": "What is the yield strength?"}]  # 27 characters
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {"name": "lookup", "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}}},
    }
]


def _digest(body: Any) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:12]


def client(server: LocalLLMServer, **kwargs: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test", **{"max_retries": 0, **kwargs})


def raw(server: LocalLLMServer, method: str, path: str, data: bytes | None = None) -> tuple[int, dict[str, str], Any]:
    """Status, lower-cased headers and parsed JSON body, without the openai client in between."""
    url = server.base_url.removesuffix("/v1") + path
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, json.loads(error.read())


def test_models_list() -> None:
    with LocalLLMServer(scripted([]), models=("scripted", "judge")) as server:
        assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
        models = client(server).models.list()
        assert [m.id for m in models.data] == ["scripted", "judge"]
        assert models.data[0].owned_by == "voe"
        assert client(server).models.retrieve("judge").id == "judge"
        status, _, body = raw(server, "GET", "/v1/models")
        assert status == 200
        assert body == {
            "object": "list",
            "data": [
                {"id": "scripted", "object": "model", "created": 0, "owned_by": "voe"},
                {"id": "judge", "object": "model", "created": 0, "owned_by": "voe"},
            ],
        }


def test_text_reply_and_deterministic_usage() -> None:
    with LocalLLMServer(scripted([Reply.text("Yield strength is 1.2 GPa.")])) as server:  # 26 characters
        completion = client(server).chat.completions.create(model="scripted", messages=USER)
    assert completion.id == f"chatcmpl-{_digest(server.requests[0]['body'])}"  # made from the conversation
    assert completion.model == "scripted"
    choice = completion.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content == "Yield strength is 1.2 GPa."
    assert choice.message.tool_calls is None
    assert choice.finish_reason == "stop"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens, completion.usage.total_tokens) == (
        27 // 4 + 1,
        26 // 4 + 1,
        27 // 4 + 1 + 26 // 4 + 1,
    )


def test_usage_counts_every_message_and_text_parts_and_can_be_overridden() -> None:
    messages: list[Any] = [
        {"role": "system", "content": "12345678"},
        {"role": "user", "content": [{"type": "text", "text": "1234"}, {"type": "image_url", "image_url": {"url": "x"}}]},
        {"role": "assistant", "content": None, "tool_calls": []},
    ]
    replies = [
        Reply.tool("lookup", {"id": 12}),
        Reply(content="x", usage={"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8}),
    ]
    with LocalLLMServer(scripted(replies)) as server:
        first = client(server).chat.completions.create(model="scripted", messages=messages)
        second = client(server).chat.completions.create(model="scripted", messages=messages)
    assert first.usage is not None and second.usage is not None
    arguments = '{"id": 12}'  # 10 characters
    assert first.usage.prompt_tokens == 12 // 4 + 1
    assert first.usage.completion_tokens == 0 + len(arguments) // 4 + 1
    assert first.usage.total_tokens == first.usage.prompt_tokens + first.usage.completion_tokens
    assert (second.usage.prompt_tokens, second.usage.completion_tokens, second.usage.total_tokens) == (7, 1, 8)


def test_tool_call_reply() -> None:
    replies = [
        Reply.tool("lookup", {"id": 7, "field": "yield"}),
        Reply(tool_calls=[{"name": "a", "arguments": "{}"}, {"name": "b", "arguments": "not json"}], finish_reason="length"),
    ]
    with LocalLLMServer(scripted(replies)) as server:
        c = client(server)
        first = c.chat.completions.create(model="scripted", messages=USER, tools=TOOLS)
        second = c.chat.completions.create(model="scripted", messages=USER, tools=TOOLS)
        sent = server.requests[0]["body"]
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    assert choice.message.tool_calls is not None
    call = choice.message.tool_calls[0]
    assert call.type == "function" and call.id == f"call_{_digest(sent)}_0"
    assert call.function.name == "lookup"
    assert call.function.arguments == '{"field": "yield", "id": 7}'  # sort_keys
    assert json.loads(call.function.arguments) == {"id": 7, "field": "yield"}
    # Several calls get ids by (conversation, position); arguments are passed through verbatim.
    calls = second.choices[0].message.tool_calls
    assert calls is not None
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [  # type: ignore[union-attr]
        (f"call_{_digest(sent)}_0", "a", "{}"),
        (f"call_{_digest(sent)}_1", "b", "not json"),
    ]
    assert second.choices[0].finish_reason == "length"
    assert sent["tools"] == TOOLS


def test_async_client() -> None:
    async def run(server: LocalLLMServer) -> tuple[str | None, str, list[str]]:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as c:
            text = await c.chat.completions.create(model="scripted", messages=USER)
            tool = await c.chat.completions.create(model="scripted", messages=USER, tools=TOOLS)
            models = [m.id async for m in c.models.list()]
        assert tool.choices[0].message.tool_calls is not None
        return text.choices[0].message.content, tool.choices[0].message.tool_calls[0].function.name, models  # type: ignore[union-attr]

    with LocalLLMServer(scripted([Reply.text("async hello"), Reply.tool("lookup", {"id": 1})])) as server:
        assert asyncio.run(run(server)) == ("async hello", "lookup", ["scripted"])
        assert server.requests[0]["headers"]["x-stainless-async"].startswith("async")


def test_error_statuses_map_to_openai_exceptions() -> None:
    replies = [
        Reply.error(429, "slow down", retry_after=1.0),
        Reply.error(500),
        Reply.error(503, "overloaded"),
        Reply.error(400, "bad tool schema"),
        Reply.error(401),
        Reply.error(404),
    ]
    with LocalLLMServer(scripted(replies)) as server:
        c = client(server)
        with pytest.raises(openai.RateLimitError) as rate_limited:
            c.chat.completions.create(model="scripted", messages=USER)
        for expected in (openai.InternalServerError, openai.InternalServerError, openai.BadRequestError):
            with pytest.raises(expected):
                c.chat.completions.create(model="scripted", messages=USER)
        with pytest.raises(openai.AuthenticationError):
            c.chat.completions.create(model="scripted", messages=USER)
        with pytest.raises(openai.NotFoundError):
            c.chat.completions.create(model="scripted", messages=USER)
        assert server.calls == 6  # max_retries=0: one request per error
    error = rate_limited.value
    assert error.status_code == 429
    assert error.response.headers["retry-after"] == "1"
    assert error.body == {"message": "slow down", "type": "invalid_request_error", "code": None}


def test_retry_after_is_in_the_raw_response_and_honoured_by_retries() -> None:
    with LocalLLMServer(scripted([Reply.error(429, retry_after=1)])) as server:
        status, headers, body = raw(server, "POST", "/v1/chat/completions", json.dumps({"model": "m", "messages": []}).encode())
    assert status == 429
    assert headers["retry-after"] == "1"
    assert headers["content-type"] == "application/json"
    assert body == {"error": {"message": "429 Too Many Requests", "type": "invalid_request_error", "code": None}}

    # With retries on, the client waits Retry-After (0.2 s here) instead of its own backoff, then retries.
    with LocalLLMServer(scripted([Reply.error(429, retry_after=0.2), Reply.text("ok")])) as server:
        started = time.monotonic()
        completion = client(server, max_retries=1).chat.completions.create(model="scripted", messages=USER)
        elapsed = time.monotonic() - started
        retry_counts = [r["headers"]["x-stainless-retry-count"] for r in server.requests]
    assert completion.choices[0].message.content == "ok"
    assert 0.2 <= elapsed < 1.0
    assert retry_counts == ["0", "1"]


SLOW = 2.0  # long against a loaded machine's client start-up, so the order is the server's doing


def test_delay_does_not_block_a_concurrent_request() -> None:
    def respond(body: dict[str, Any], index: int) -> Reply:
        word = body["messages"][0]["content"]
        return Reply.text(word, delay=SLOW if word == "slow" else 0.0)

    finished: list[str] = []

    def ask(server: LocalLLMServer, word: str) -> None:
        answer = client(server).chat.completions.create(model="scripted", messages=[{"role": "user", "content": word}])
        finished.append(answer.choices[0].message.content or "")

    with LocalLLMServer(respond) as server:
        started = time.monotonic()
        slow = threading.Thread(target=ask, args=(server, "slow"))
        slow.start()
        while server.calls < 1:  # the slow request is being answered before the fast one is sent
            time.sleep(0.005)
        fast = threading.Thread(target=ask, args=(server, "fast"))
        fast.start()
        fast.join(5)
        fast_done = time.monotonic() - started
        slow.join(5)
        slow_done = time.monotonic() - started
    assert finished == ["fast", "slow"]
    assert fast_done < SLOW <= slow_done


def test_requests_are_recorded() -> None:
    with LocalLLMServer(scripted([Reply.text("a")])) as server:
        client(server).chat.completions.create(model="scripted", messages=USER, temperature=0)
        raw(server, "GET", "/v1/nothing-here")
        recorded = server.requests
    assert [(r["method"], r["path"]) for r in recorded] == [("POST", "/v1/chat/completions"), ("GET", "/v1/nothing-here")]
    chat = recorded[0]
    assert chat["headers"]["authorization"] == "Bearer test"
    assert chat["headers"]["content-type"] == "application/json"
    assert chat["headers"]["user-agent"].startswith("OpenAI/Python")
    assert all(key == key.lower() for key in chat["headers"])
    assert chat["body"] == {"model": "scripted", "messages": USER, "temperature": 0}
    assert recorded[1]["body"] is None


def test_unknown_routes_are_404_in_openai_error_shape() -> None:
    with LocalLLMServer(scripted([])) as server:
        for method, path in (("GET", "/v1/embeddings"), ("GET", "/v1/chat/completions"), ("GET", "/v1/models/other")):
            status, _, body = raw(server, method, path)
            assert status == 404
            assert body["error"]["type"] == "invalid_request_error" and body["error"]["code"] is None
            assert path in body["error"]["message"]
        with pytest.raises(openai.NotFoundError):
            client(server).embeddings.create(model="scripted", input="x")
        assert server.calls == 0


def test_bad_json_missing_fields_and_stream_are_400() -> None:
    with LocalLLMServer(scripted([Reply.text("first real call")])) as server:
        status, _, body = raw(server, "POST", "/v1/chat/completions", b"{not json")
        assert status == 400
        assert body == {
            "error": {"message": "the request body must be a JSON object", "type": "invalid_request_error", "code": None}
        }
        status, _, body = raw(server, "POST", "/v1/chat/completions", b"[1, 2]")
        assert status == 400
        status, _, body = raw(server, "POST", "/v1/chat/completions", b'{"messages": []}')
        assert status == 400 and "model" in body["error"]["message"]
        with pytest.raises(openai.BadRequestError, match="streaming is not supported by this server"):
            client(server).chat.completions.create(model="scripted", messages=USER, stream=True)
        assert server.requests[0]["body"] is None
        # Rejected requests take no index: the script's first reply is still next.
        completion = client(server).chat.completions.create(model="scripted", messages=USER)
        assert completion.choices[0].message.content == "first real call"
        assert server.calls == 1


def test_respond_raising_is_a_500_and_the_server_keeps_serving() -> None:
    def respond(body: dict[str, Any], index: int) -> Reply:
        if index == 0:
            raise ValueError("script bug")
        return Reply.text(f"call {index}")

    with LocalLLMServer(respond) as server:
        c = client(server)
        with pytest.raises(openai.InternalServerError, match="ValueError: script bug"):
            c.chat.completions.create(model="scripted", messages=USER)
        assert c.chat.completions.create(model="scripted", messages=USER).choices[0].message.content == "call 1"
        # An exhausted script names the overrun instead of hanging or repeating.
    with LocalLLMServer(scripted([])) as server:
        with pytest.raises(openai.InternalServerError, match="the script has 0 replies but call 0 was made"):
            client(server).chat.completions.create(model="scripted", messages=USER)


def test_exit_closes_the_port_and_cuts_pending_delays() -> None:
    with LocalLLMServer(lambda body, index: Reply.text("late", delay=30)) as server:
        c = client(server, timeout=0.2)
        with pytest.raises(openai.APITimeoutError):
            c.chat.completions.create(model="scripted", messages=USER)
        started = time.monotonic()
    assert time.monotonic() - started < 1.0  # the 30 s delay does not hold up the exit
    with pytest.raises(RuntimeError, match="not running"):
        server.base_url  # noqa: B018
    with pytest.raises(openai.APIConnectionError):
        c.chat.completions.create(model="scripted", messages=USER)


def test_reply_validation() -> None:
    assert Reply.error(429, retry_after=0.5).headers == {"Retry-After": "0.5"}
    assert Reply.tool("f", '{"raw": ').tool_calls == ({"name": "f", "arguments": '{"raw": '},)
    with pytest.raises(ValueError, match="status"):
        Reply(status=302)
    with pytest.raises(ValueError, match="error reply"):
        Reply("text", status=500)
    with pytest.raises(ValueError, match="tool call"):
        Reply(tool_calls=[{"name": "f"}])


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except ConnectionRefusedError:
        return True
    except OSError:
        return False  # reset: the listening socket is being closed
    return False


def test_a_server_in_another_process_answers_calls_at_once_and_goes_with_the_block() -> None:
    """32 calls in flight against a server that takes 0.3 s each: served together (a thread per connection in
    the child), counted from the parent, and the child gone with its port when the block ends."""
    async def run(url: str) -> tuple[float, list[str | None]]:
        async with openai.AsyncOpenAI(base_url=url, api_key="test", max_retries=0) as c:
            started = time.monotonic()
            done = await asyncio.gather(*(c.chat.completions.create(model="scripted", messages=USER)
                                          for _ in range(32)))
            return time.monotonic() - started, [d.choices[0].message.content for d in done]

    with LocalLLMServerProcess(scripted, [Reply.text(f"call {i}", delay=0.3) for i in range(32)]) as server:
        assert server.pid is not None and server.pid != os.getpid()
        elapsed, texts = asyncio.run(run(server.base_url))
        assert server.calls == 32 and 1 <= server.connections_opened <= 32
        pid, port = server.pid, server.port
    assert elapsed < 3.0  # one after the other: 9.6 s
    assert sorted(t or "" for t in texts) == sorted(f"call {i}" for i in range(32))
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert _refused(port)
    with pytest.raises(RuntimeError, match="not running"):
        server.base_url  # noqa: B018


def _no_model() -> Respond:
    raise FileNotFoundError("no package here")


def test_a_server_process_that_cannot_start_says_why() -> None:
    with pytest.raises(RuntimeError, match="failed to start: FileNotFoundError: no package here"):
        with LocalLLMServerProcess(_no_model):
            pass


def test_a_server_process_does_not_outlive_the_process_that_started_it() -> None:
    """The parent is killed (SIGKILL: no cleanup runs); the child sees its pipe close and stops serving."""
    repo = Path(__file__).resolve().parent.parent
    code = ("import time\nfrom tests.llm_server import LocalLLMServerProcess, scripted\n"
            "with LocalLLMServerProcess(scripted, []) as server:\n"
            "    print(server.port, flush=True)\n    time.sleep(600)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")])}
    parent = subprocess.Popen([sys.executable, "-c", code], cwd=repo, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        port = int(parent.stdout.readline())
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5) as response:
            assert response.status == 200
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 15
    while not _refused(port) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _refused(port)
