"""A scripted OpenAI-compatible HTTP server on 127.0.0.1, for tests and benchmarks.

Everything in the project that talks to a language model (annotator, judge, LLM policies) does so only
through an OpenAI-compatible endpoint (`base_url` + the official `openai` client). Tests and benchmarks
therefore need such an endpoint that is deterministic, offline and free: this is the project's own,
stdlib only, answering each chat completion from a `respond(body, index)` callback that returns a
`Reply` (text, tool calls, an HTTP error, a delay). Going through real HTTP rather than mocking the
client exercises what mocks skip: retries, Retry-After, status-to-exception mapping, timeouts and
concurrency.

    with LocalLLMServer(scripted([Reply.tool("lookup", {"id": 1}), Reply.text("done")])) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import socket
import socketserver
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any, Self, TypedDict
from urllib.parse import urlsplit

__all__ = ["LocalLLMServer", "LocalLLMServerProcess", "RecordedRequest", "Reply", "Respond", "scripted"]


@dataclass(frozen=True)
class Reply:
    """One answer to a chat completion: a message (status 200) or an HTTP error (status 400-599).

    `tool_calls` items are {"name": ..., "arguments": <JSON text>}; arguments stay text so a test can
    script malformed JSON. `finish_reason` None means "tool_calls" when there are tool calls, else
    "stop". `usage` None means the deterministic estimate described in `LocalLLMServer`.
    """

    content: str | None = None
    _: KW_ONLY
    tool_calls: Sequence[Mapping[str, str]] = ()
    finish_reason: str | None = None
    usage: Mapping[str, int] | None = None
    status: int = 200
    message: str | None = None
    error_type: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0

    def __post_init__(self) -> None:
        if self.status != 200 and not 400 <= self.status <= 599:
            raise ValueError(f"status must be 200 or an error status 400-599, not {self.status}")
        if self.status != 200 and (self.content is not None or self.tool_calls):
            raise ValueError("an error reply carries a message, not content or tool calls")
        if self.delay < 0:
            raise ValueError(f"delay must be >= 0, not {self.delay}")
        for call in self.tool_calls:
            if not isinstance(call.get("name"), str) or not isinstance(call.get("arguments"), str):
                raise ValueError(f'a tool call is {{"name": str, "arguments": str}}, not {call!r}')

    @classmethod
    def text(cls, content: str, *, finish_reason: str | None = None, delay: float = 0.0) -> Reply:
        return cls(content, finish_reason=finish_reason, delay=delay)

    @classmethod
    def tool(
        cls,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        content: str | None = None,
        delay: float = 0.0,
    ) -> Reply:
        # sort_keys: the same call always serializes to the same text, so usage and transcripts are stable.
        text = arguments if isinstance(arguments, str) else json.dumps(dict(arguments or {}), sort_keys=True)
        return cls(content, tool_calls=({"name": name, "arguments": text},), delay=delay)

    @classmethod
    def error(
        cls,
        status: int,
        message: str | None = None,
        *,
        retry_after: float | None = None,
        headers: Mapping[str, str] | None = None,
        delay: float = 0.0,
    ) -> Reply:
        all_headers = dict(headers or {})
        if retry_after is not None:
            # Whole seconds as an integer (the standard form); the openai client also accepts fractions.
            all_headers["Retry-After"] = str(int(retry_after)) if float(retry_after).is_integer() else str(retry_after)
        return cls(status=status, message=message, headers=all_headers, delay=delay)


Respond = Callable[[dict[str, Any], int], Reply]


class RecordedRequest(TypedDict):
    method: str
    path: str
    headers: dict[str, str]
    body: Any


def scripted(replies: Sequence[Reply]) -> Respond:
    """A `respond` that answers call i with replies[i]; calls past the end get a 500 naming the overrun."""
    frozen = tuple(replies)

    def respond(body: dict[str, Any], index: int) -> Reply:
        if index >= len(frozen):
            raise IndexError(f"the script has {len(frozen)} replies but call {index} was made")
        return frozen[index]

    return respond


def _error_body(message: str, error_type: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "code": None}}


def _text_length(content: Any) -> int:
    # Content is a string, or a list of parts of which only text parts count; anything else (None,
    # images) contributes nothing, so the estimate never fails on a shape we did not anticipate.
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(len(p["text"]) for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return 0


def _usage(body: dict[str, Any], reply: Reply) -> dict[str, int]:
    if reply.usage is not None:
        return dict(reply.usage)
    messages = body.get("messages") or []
    prompt = sum(_text_length(m.get("content")) for m in messages if isinstance(m, dict)) // 4 + 1
    completion = len(reply.content or "") // 4 + sum(len(c["arguments"]) // 4 for c in reply.tool_calls) + 1
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5: 32 clients connecting at once overflow it, and the connections
    # beyond are reset (the client sees a read error and retries) or wait a second for a SYN resend
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], owner: LocalLLMServer) -> None:
        self.owner = owner
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls socket.getfqdn(host), a reverse DNS lookup that can take seconds
        # in sandboxes; the name is never used here.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up (or our own close cutting a keep-alive connection) is not an error;
        # anything else is a bug in this module and keeps the default traceback.
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)

    def drop_connections(self) -> None:
        # Keep-alive connections outlive shutdown(); without this a pooled client could still be served
        # by a handler thread after the context manager has exited.
        with self.connections_lock:
            live = list(self.connections)
        for conn in live:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.1"  # keep-alive, as the openai client (httpx2 pool) expects
    server_version = "voe-llm"
    sys_version = ""

    def setup(self) -> None:
        super().setup()
        # headers and body go out as two writes: without NODELAY the body waits ~40 ms for the client's
        # delayed ACK of the headers (Nagle), on every call
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.connections_lock:
            self.server.connections.add(self.connection)
        self.server.owner._opened()

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.server.connections_lock:
                self.server.connections.discard(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        # Tests and benchmarks print their own results; one stderr line per request would bury them.
        return

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def _send_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            if name.lower() not in ("content-type", "content-length"):
                self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _dispatch(self) -> None:
        owner = self.server.owner
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value

        if "transfer-encoding" in headers:
            # Only Content-Length bodies are read; an unread chunked body would be parsed as the next
            # request, so refuse it and drop the connection.
            owner._record(RecordedRequest(method=self.command, path=self.path, headers=headers, body=None))
            self.close_connection = True
            self._send_json(411, _error_body("send the body with Content-Length, not Transfer-Encoding"))
            return
        try:
            length = int(headers.get("content-length") or 0)
        except ValueError:
            length = -1
        raw = self.rfile.read(length) if length > 0 else b""
        body: Any = None
        parsed = False
        if raw:
            try:
                body, parsed = json.loads(raw), True
            except ValueError:
                pass
        owner._record(RecordedRequest(method=self.command, path=self.path, headers=headers, body=body))
        if length < 0:
            self.close_connection = True
            self._send_json(400, _error_body("invalid Content-Length"))
            return

        path = urlsplit(self.path).path.rstrip("/")
        if self.command == "GET" and path == "/v1/models":
            self._send_json(200, {"object": "list", "data": [_model(m, owner.model_info) for m in owner.models]})
        elif self.command == "GET" and path.startswith("/v1/models/") and path[len("/v1/models/") :] in owner.models:
            self._send_json(200, _model(path[len("/v1/models/") :], owner.model_info))
        elif self.command == "POST" and path == "/v1/chat/completions":
            self._chat(body if parsed else _NOT_JSON)
        else:
            self._send_json(404, _error_body(f"no route for {self.command} {urlsplit(self.path).path}"))

    def _chat(self, body: Any) -> None:
        if body is _NOT_JSON or not isinstance(body, dict):
            self._send_json(400, _error_body("the request body must be a JSON object"))
            return
        if body.get("stream"):
            self._send_json(400, _error_body("streaming is not supported by this server"))
            return
        if not isinstance(body.get("model"), str) or not isinstance(body.get("messages"), list):
            self._send_json(400, _error_body('"model" (a string) and "messages" (a list) are required'))
            return

        owner = self.server.owner
        index = owner._next_index()
        try:
            reply = owner.respond(body, index)
            if not isinstance(reply, Reply):
                raise TypeError(f"respond returned {type(reply).__name__}, not a Reply")
        except Exception as exc:  # the failure is the test's to see, in the 500's message
            self._send_json(500, _error_body(f"respond raised {type(exc).__name__}: {exc}", "server_error"))
            return

        if reply.delay > 0 and owner._closing.wait(reply.delay):
            return  # the server is closing; the connection is being cut anyway
        if reply.status != 200:
            message = reply.message or _reason(reply.status)
            error_type = reply.error_type or ("server_error" if reply.status >= 500 else "invalid_request_error")
            self._send_json(reply.status, _error_body(message, error_type), reply.headers)
            return

        message_out: dict[str, Any] = {"role": "assistant", "content": reply.content}
        # ids made from the conversation, not the call count: the same conversation gets the same answer,
        # whatever order concurrent clients ask in
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:12]
        if reply.tool_calls:
            message_out["tool_calls"] = [
                {"id": f"call_{digest}_{k}", "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for k, c in enumerate(reply.tool_calls)
            ]
        finish_reason = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        payload = {
            "id": f"chatcmpl-{digest}",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": message_out, "finish_reason": finish_reason}],
            "usage": _usage(body, reply),
        }
        self._send_json(200, payload, reply.headers)


_NOT_JSON = object()


def _model(model_id: str, info: Mapping[str, Any] | None = None) -> dict[str, Any]:
    # `info`: what a local server says of the weights it serves (llama.cpp's "meta": file, size, context)
    return {"id": model_id, "object": "model", "created": 0, "owned_by": "voe", **dict(info or {})}


def _reason(status: int) -> str:
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return f"HTTP {status}"


class LocalLLMServer:
    """An OpenAI-compatible server on a free port of 127.0.0.1 while the `with` block runs.

    Serves GET /v1/models (and /v1/models/{id}) and POST /v1/chat/completions; anything else is a 404
    in OpenAI's error shape. Each chat completion calls `respond(body, index)`, index counting the chat
    completions handed to `respond` so far (rejected requests - bad JSON, stream=true - take none).
    Without a `Reply.usage`, usage is prompt_tokens = characters of all message contents // 4 + 1 and
    completion_tokens = len(content) // 4 + sum(len(arguments) // 4) + 1.
    """

    def __init__(
        self,
        respond: Respond,
        models: Sequence[str] = ("scripted",),
        host: str = "127.0.0.1",
        port: int = 0,
        model_info: Mapping[str, Any] | None = None,
    ) -> None:
        self.respond = respond
        self.models = tuple(models)
        self.model_info = model_info
        self.host = host
        self.port = port  # the bound port once started (the requested one, 0 = any free, is kept apart)
        self._requested_port = port
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._calls = 0
        self._connections_opened = 0
        self._closing = threading.Event()
        self._server: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the server is not running (use it as a context manager)")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first (a copy: handler threads keep appending)."""
        with self._lock:
            return list(self._requests)

    @property
    def calls(self) -> int:
        """Chat completions handed to `respond` so far."""
        with self._lock:
            return self._calls

    @property
    def connections_opened(self) -> int:
        """TCP connections accepted so far (a client that keeps its connections alive opens few)."""
        with self._lock:
            return self._connections_opened

    def _opened(self) -> None:
        with self._lock:
            self._connections_opened += 1

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _next_index(self) -> int:
        with self._lock:
            index = self._calls
            self._calls += 1
            return index

    def __enter__(self) -> Self:
        if self._server is not None:
            raise RuntimeError("the server is already running")
        self._closing.clear()
        self._server = _HTTPServer((self.host, self._requested_port), self)
        self.port = self._server.server_port
        # A short poll interval: shutdown() waits for the serve loop's next poll (0.5 s by default),
        # which would add half a second to every test.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name=f"llm-server-{self.port}", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        self._closing.set()  # wakes handlers sleeping in a Reply.delay
        server.shutdown()
        server.drop_connections()
        server.server_close()
        thread.join()
        self._server = self._thread = None


_COUNTERS = ("calls", "connections_opened")  # what the parent may ask the child's server; anything else stops it


def _serve_in_child(factory: Callable[..., Respond], args: tuple[Any, ...], models: tuple[str, ...], host: str,
                    conn: Connection) -> None:
    """The child of LocalLLMServerProcess: serve until the parent says stop or is gone (its end of the pipe
    closes when it dies, even by SIGKILL, so no server outlives the process that started it)."""
    try:
        respond = factory(*args)
        server = LocalLLMServer(respond, models, host)
        server.__enter__()
    except BaseException as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        raise
    try:
        conn.send(("ready", server.port))
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return
            if message not in _COUNTERS:
                return
            conn.send(getattr(server, message))
    finally:
        server.__exit__(None, None, None)


class LocalLLMServerProcess:
    """A LocalLLMServer in a child process while the `with` block runs, for measurements: the server's CPU and
    GIL are then not the measured process's, as with any real endpoint.

    The child makes its `respond` as `factory(*args)`; both are pickled, so `factory` is a module-level function
    (not a closure or a lambda) and `args` plain data. The child is spawned, not forked: a fork would copy the
    parent's threads' locks and its event loop mid-use. It binds a free port; `requests` stay in the child.
    """

    def __init__(self, factory: Callable[..., Respond], *args: Any, models: Sequence[str] = ("scripted",),
                 host: str = "127.0.0.1", start_timeout: float = 120.0) -> None:
        self.factory, self.args, self.models, self.host = factory, args, tuple(models), host
        self.start_timeout = start_timeout
        self.port = 0
        self._lock = threading.Lock()
        self._conn: Connection | None = None
        self._process: multiprocessing.process.BaseProcess | None = None

    @property
    def base_url(self) -> str:
        if self._process is None:
            raise RuntimeError("the server is not running (use it as a context manager)")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def _ask(self, counter: str) -> int:
        if self._conn is None:
            raise RuntimeError("the server is not running (use it as a context manager)")
        with self._lock:
            self._conn.send(counter)
            value: int = self._conn.recv()
            return value

    @property
    def calls(self) -> int:
        """Chat completions handed to `respond` so far (asked of the child)."""
        return self._ask("calls")

    @property
    def connections_opened(self) -> int:
        """TCP connections the child's server accepted so far."""
        return self._ask("connections_opened")

    def __enter__(self) -> Self:
        if self._process is not None:
            raise RuntimeError("the server is already running")
        ctx = multiprocessing.get_context("spawn")
        ours, theirs = ctx.Pipe()
        process = ctx.Process(target=_serve_in_child, args=(self.factory, self.args, self.models, self.host, theirs),
                              name="llm-server", daemon=True)
        process.start()
        theirs.close()  # the child's end lives in the child only: its death is then our EOF
        self._conn, self._process = ours, process
        try:
            if not ours.poll(self.start_timeout):
                raise RuntimeError(f"the server process did not start within {self.start_timeout} s")
            kind, value = ours.recv()
        except EOFError:
            process.join(10)
            code = process.exitcode
            self._stop()
            raise RuntimeError(f"the server process died before it served (exit code {code})") from None
        except BaseException:
            self._stop()
            raise
        if kind != "ready":
            self._stop()
            raise RuntimeError(f"the server process failed to start: {value}")
        self.port = int(value)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop()

    def _stop(self) -> None:
        conn, process = self._conn, self._process
        if process is None or conn is None:
            return
        try:
            with self._lock:
                conn.send("stop")
        except OSError:
            pass  # already gone
        process.join(10)
        if process.is_alive():
            process.terminate()
            process.join(5)
        if process.is_alive():
            process.kill()
            process.join()
        conn.close()
        process.close()
        self._conn = self._process = None
