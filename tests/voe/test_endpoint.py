"""An endpoint is untrusted input (issue 44, voe/endpoint.py): every hostile shape of a completion is one line of
error, never a traceback; `--timeout` bounds a reply dripped a byte at a time; a reply past the size cap is
refused and neither stored nor cached; a key the server echoes is written nowhere; a run stopped by a hostile
answer resumes against a sane server.

The hostile server here is a bare HTTP server (the project's scripted server only answers well-formed
completions): each test sets what it answers."""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LLM_SECRET as SECRET
from tests.llm_server import LocalLLMServer, Reply
from voe.endpoint import MAX_REPLY_BYTES
from voe.llm import Budget, ChatClient, LLMError, ResponseCache, ResponseLog, Settings

Answer = Callable[[BaseHTTPRequestHandler], None]


def _message(**message: Any) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}]}


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


SHAPES: dict[str, str] = {
    "choices_object": json.dumps({"choices": {"0": {}}}),
    "choices_empty": json.dumps({"choices": []}),
    "choices_number": json.dumps({"choices": [1]}),
    "choices_missing": json.dumps({"id": "x"}),
    "message_string": json.dumps({"choices": [{"message": "hello"}]}),
    "message_missing": json.dumps({"choices": [{"finish_reason": "stop"}]}),
    "content_number": json.dumps(_message(content=42)),
    "content_object": json.dumps(_message(content={"a": 1})),
    "tool_calls_object": json.dumps(_message(content=None, tool_calls={"function": {"name": "x"}})),
    "tool_calls_numbers": json.dumps(_message(content=None, tool_calls=[1, 2])),
    "function_string": json.dumps(_message(content=None, tool_calls=[{"id": "c", "function": "x"}])),
    "function_name_number": json.dumps(_message(content=None, tool_calls=[{"function": {"name": 7}}])),
    "usage_string": json.dumps({**_message(content="hi"), "usage": "lots"}),
    "usage_tokens_text": json.dumps({**_message(content="hi"), "usage": {"prompt_tokens": "many"}}),
    "usage_negative": json.dumps({**_message(content="hi"), "usage": {"prompt_tokens": -5}}),
    "deep_nesting": '{"choices": ' + _nested(100_000) + "}",
    "deep_in_content": json.dumps(_message(content="hi"))[:-1] + ', "x": ' + _nested(200) + "}",
    "top_level_array": json.dumps([_message(content="hi")]),
    "null": "null",
    "not_json": "<html>gateway</html>",
}


class Hostile:
    """A bare HTTP server on a free port of 127.0.0.1 answering every POST with `answer`."""

    def __init__(self, answer: Answer) -> None:
        outer = self
        self.answer = answer
        self.calls = 0

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.calls += 1
                outer.answer(self)

            def do_GET(self) -> None:  # noqa: N802
                self.send_error(404)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> Hostile:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def body(text: str | bytes, content_type: str = "application/json") -> Answer:
    data = text.encode() if isinstance(text, str) else text

    def answer(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)
    return answer


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def client(base_url: str, tmp_path: Path, timeout: float = 30.0, max_attempts: int = 1) -> ChatClient:
    return ChatClient(Settings(model="m"), base_url, cache=ResponseCache(tmp_path / "shared"),
                      run_cache=ResponseLog(tmp_path / "run"), budget=Budget(), prices={}, max_attempts=max_attempts,
                      timeout=timeout)


DEFAULT_ATTEMPTS = inspect.signature(ChatClient).parameters["max_attempts"].default


def ask(chat: ChatClient) -> Any:
    async def go() -> Any:
        try:
            return await chat.complete([{"role": "user", "content": "hello"}], salt="t")
        finally:
            await chat.close()
    return asyncio.run(go())


def _stored(tmp_path: Path) -> list[Path]:
    return [p for p in tmp_path.rglob("*") if p.is_file() and p.stat().st_size > 0 and "-journal" not in p.name]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_hostile_shape_is_one_line_of_error_and_nothing_is_kept(shape: str, tmp_path: Path) -> None:
    with Hostile(body(SHAPES[shape])) as server:
        with pytest.raises(LLMError) as caught:
            ask(client(server.base_url, tmp_path))
    message = str(caught.value)
    assert "\n" not in message and len(message) < 400, message
    assert "chat completion" in message, message
    log = tmp_path / "run" / ResponseLog.NAME
    assert not log.exists() or log.read_text() == ""  # nothing of it was recorded for a replay


@pytest.mark.parametrize("attempts", [1, pytest.param(DEFAULT_ATTEMPTS, marks=pytest.mark.slow)],
                         ids=["one_try", "default_tries"])
def test_a_reply_dripped_a_byte_at_a_time_is_cut_off_by_the_timeout(tmp_path: Path, attempts: int) -> None:
    """Each try ends at --timeout, headers and body together (httpx's own timeouts are per read, and a byte every
    0.1 s never trips them), and the client's retries go on as for any timeout: the call ends within the tries'
    timeouts plus the client's backoff between them (0.5 s doubling to at most 8 s), not the 17 minutes a
    bound of the whole call made of per-try allowances gave with the defaults."""
    stop = threading.Event()
    timeout = 1.0

    def drip(h: BaseHTTPRequestHandler) -> None:
        data = json.dumps(_message(content="x" * 200)).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        for byte in data:
            if stop.is_set():
                return
            try:
                h.wfile.write(bytes([byte]))
                h.wfile.flush()
            except OSError:
                return
            time.sleep(0.1)

    backoff = sum(min(0.5 * 2 ** n, 8.0) for n in range(attempts - 1))
    bound = attempts * (timeout + 0.5) + backoff + 3.0  # 0.5 s a try and 3 s in all for connecting and the loop
    with Hostile(drip) as server:
        started = time.monotonic()
        try:
            with pytest.raises(LLMError, match=f"did not finish its answer within 1 s a try .*{attempts} tr"):
                ask(client(server.base_url, tmp_path, timeout=timeout, max_attempts=attempts))
            took = time.monotonic() - started
            assert took < bound, f"{took:.1f} s, past {bound:.1f} s"
            assert server.calls == attempts  # every try made, each cut off
        finally:
            stop.set()


@pytest.mark.parametrize("declared", [True, False], ids=["content_length", "chunked"])
def test_a_reply_past_the_size_cap_is_refused_and_neither_stored_nor_cached(tmp_path: Path, declared: bool) -> None:
    huge = json.dumps(_message(content="y" * (MAX_REPLY_BYTES + 1024))).encode()

    def answer(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        if declared:
            h.send_header("Content-Length", str(len(huge)))
            h.end_headers()
            h.wfile.write(huge)
            return
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        try:
            for i in range(0, len(huge), 1 << 16):
                piece = huge[i:i + (1 << 16)]
                h.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            h.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass

    with Hostile(answer) as server, pytest.raises(LLMError, match="longer than"):
        ask(client(server.base_url, tmp_path))
    assert not [p for p in _stored(tmp_path) if p.stat().st_size > MAX_REPLY_BYTES // 2]
    assert not any(b"yyyyyyyy" in p.read_bytes() for p in _stored(tmp_path))


def test_a_key_the_server_echoes_is_written_nowhere(tmp_path: Path) -> None:
    def echo(h: BaseHTTPRequestHandler) -> None:
        seen = h.headers.get("Authorization", "")
        body(json.dumps({**_message(content=f"you sent {seen}"), "debug": {"headers": dict(h.headers)}}))(h)

    with Hostile(echo) as server:
        call = ask(client(server.base_url, tmp_path))
    assert "[redacted]" in call.response["choices"][0]["message"]["content"]
    assert SECRET not in json.dumps(call.response)
    written = _stored(tmp_path)
    assert written and not [p for p in written if SECRET.encode() in p.read_bytes()]


def test_a_run_a_hostile_answer_stopped_resumes_against_a_sane_server(package: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from voe.replay.agent_run import RunStopped, run_agent

    monkeypatch.setenv("VOE_CACHE_DIR", str(tmp_path / "cache"))
    with Hostile(body(SHAPES["tool_calls_object"])) as server, pytest.raises(RunStopped) as caught:
        run_agent(package, "m", tmp_path / "run", base_url=server.base_url, max_attempts=1, concurrency=2)
    assert "not a chat completion voe can read" in str(caught.value) and "--resume" in str(caught.value)
    with LocalLLMServer(lambda b, i: Reply.tool("abstain_or_escalate", {"reason": "r"}), models=["m"]) as sane:
        info = run_agent(package, "m", tmp_path / "run", base_url=sane.base_url, resume=True)
    assert info.trajectories == len((tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()) > 0
