"""What an OpenAI-compatible endpoint answers, read as untrusted input (issue 44; voe/llm.py uses it).

A reply is read through a transport that refuses a body past `MAX_REPLY_BYTES` (by its Content-Length, or as it
arrives), so a 400 MB answer costs at most that much memory and is neither stored nor cached; it is parsed with
its nesting bounded; it is validated against the shape voe reads (`Completion`) before anything uses it, so a
`choices`, `message`, `tool_calls` or `usage` of another type is one line naming the field, never a traceback;
and a secret it carries (a server that echoes the Authorization header) is replaced before it is written
anywhere. Each try is bounded whole by its timeout (voe/llm.py `ChatClient` sets it from --timeout): the headers
and every read of the body wait at most what is left of it, so a body dripped a byte at a time is cut off
(httpx's own timeouts are per read) as a timeout, which the openai client retries as it retries any.
"""

from __future__ import annotations

import asyncio
import functools
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from voe.jsonl import nested_deeper_than

MAX_REPLY_BYTES = 8 << 20  # a chat completion of a few thousand tokens is kilobytes; tool calls add little
MAX_REPLY_DEPTH = 64  # nesting of a reply: a completion is 6 levels deep, a tool call's arguments a few more
REDACTED = "[redacted]"


class ReplyTooLarge(Exception):  # noqa: N818 - raised inside httpx's machinery; voe/llm.py says it as an LLMError
    """The endpoint's reply is longer than MAX_REPLY_BYTES."""

    def __init__(self, size: int | None = None) -> None:
        super().__init__(f"the endpoint's answer is longer than {MAX_REPLY_BYTES} bytes"
                         + (f" ({size} declared)" if size is not None else "") + "; it is refused, not stored")


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow")


class Function(_Loose):
    name: str
    arguments: str | dict[str, Any] | None = None  # a JSON string (OpenAI, vLLM); an object (Ollama)


class ToolCall(_Loose):
    id: str | None = None
    type: str | None = None
    function: Function


class Message(_Loose):
    role: str | None = None
    content: str | None = None
    tool_calls: list[ToolCall] | None = None


class Choice(_Loose):
    index: int | None = None
    message: Message
    finish_reason: str | None = None


class Usage(_Loose):
    prompt_tokens: int | None = Field(default=None, ge=0)
    completion_tokens: int | None = Field(default=None, ge=0)


class Completion(_Loose):
    """The part of a chat completion voe reads, with the types it reads them as."""

    choices: list[Choice] = Field(min_length=1)
    usage: Usage | None = None


def problem(reply: Any) -> str | None:
    """Why `reply` is not a chat completion voe can read (one line), or None."""
    if not isinstance(reply, dict):
        return f"not a JSON object but {type(reply).__name__}"
    if nested_deeper_than(reply, MAX_REPLY_DEPTH):
        return f"nested deeper than {MAX_REPLY_DEPTH} levels"
    try:
        Completion.model_validate(reply)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(x) for x in error["loc"]) or "the answer"
        return f"{where}: {error['msg']}"
    return None


def scrubbed(reply: dict[str, Any], secrets: list[str]) -> dict[str, Any]:
    """`reply` with every secret in it replaced (keys sorted, as the cache stores them)."""
    text = json.dumps(reply, sort_keys=True)
    for secret in secrets:
        if secret and len(secret) >= 8 and secret in text:
            text = text.replace(secret, REDACTED)
    out: dict[str, Any] = json.loads(text)
    return out


@functools.cache
def _capped_classes(http: Any) -> tuple[type, type]:
    """The capped stream and transport over `http`, the openai client's HTTP library (httpx up to openai 2,
    its fork httpx2 after): built on that library's own base classes, which its client checks."""

    class Capped(http.AsyncByteStream):  # type: ignore[misc]
        def __init__(self, inner: Any, request: Any, deadline: float | None) -> None:
            self.inner, self.request, self.deadline = inner, request, deadline

        async def __aiter__(self) -> AsyncIterator[bytes]:
            seen = 0
            chunks = aiter(self.inner)
            while True:
                try:
                    async with asyncio.timeout_at(self.deadline):
                        chunk = await anext(chunks)
                except StopAsyncIteration:
                    return
                except TimeoutError:
                    raise http.ReadTimeout(_late(self.request), request=self.request) from None
                seen += len(chunk)
                if seen > MAX_REPLY_BYTES:
                    raise ReplyTooLarge()
                yield chunk

        async def aclose(self) -> None:
            await self.inner.aclose()

    class Transport(http.AsyncBaseTransport):  # type: ignore[misc]
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def handle_async_request(self, request: Any) -> Any:
            deadline = _deadline(request)
            try:
                async with asyncio.timeout_at(deadline):
                    response = await self.inner.handle_async_request(request)
            except TimeoutError:
                raise http.ReadTimeout(_late(request), request=request) from None
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > MAX_REPLY_BYTES:
                await response.aclose()
                raise ReplyTooLarge(int(declared))
            return http.Response(status_code=response.status_code, headers=response.headers,
                                 stream=Capped(response.stream, request, deadline), extensions=response.extensions,
                                 request=request)

        async def aclose(self) -> None:
            await self.inner.aclose()

    return Capped, Transport


def _whole(request: Any) -> float | None:
    """How long a try of `request` may take in all: the longest of the per-phase timeouts httpx carries (voe gives
    one value for all), so the phases together never outlast it."""
    phases = request.extensions.get("timeout") or {}
    return max((v for v in phases.values() if v is not None), default=None)


def _deadline(request: Any) -> float | None:
    """When the try of `request` must be over, on the event loop's clock."""
    whole = _whole(request)
    return None if whole is None else asyncio.get_running_loop().time() + whole


def _late(request: Any) -> str:
    return f"the answer was not complete within {_whole(request) or 0:g} s (the whole try, headers and body)"


def capped_client(openai: Any, limits: Any) -> Any:
    """The openai client's default HTTP client, its transport refusing every reply body past MAX_REPLY_BYTES and
    ending every try, headers and body, at the request's timeout (`_deadline`)."""
    base = next(c for c in openai.DefaultAsyncHttpxClient.__mro__ if c.__name__ == "AsyncClient")
    http = sys.modules[base.__module__.split(".")[0]]
    _, transport = _capped_classes(http)
    return openai.DefaultAsyncHttpxClient(transport=transport(http.AsyncHTTPTransport(limits=limits)))


def too_large(exc: BaseException) -> ReplyTooLarge | None:
    """The ReplyTooLarge behind `exc` (the openai client wraps what the transport raised), if any."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ReplyTooLarge):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None
