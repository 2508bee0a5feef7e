"""What an OpenAI-compatible endpoint answers, read as untrusted input (issue 44; voe/llm.py uses it).

A reply is read through a transport that refuses a body past `MAX_REPLY_BYTES` (by its Content-Length, or as it
arrives), so a 400 MB answer costs at most that much memory and is neither stored nor cached; it is parsed with
its nesting bounded; it is validated against the shape voe reads (`Completion`) before anything uses it, so a
`choices`, `message`, `tool_calls` or `usage` of another type is one line naming the field, never a traceback;
and a secret it carries (a server that echoes the Authorization header) is replaced before it is written
anywhere. The whole call, a body dripped a byte at a time included, is bounded by the caller's timeout
(voe/llm.py `ChatClient`).
"""

from __future__ import annotations

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
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def __aiter__(self) -> AsyncIterator[bytes]:
            seen = 0
            async for chunk in self.inner:
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
            response = await self.inner.handle_async_request(request)
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > MAX_REPLY_BYTES:
                await response.aclose()
                raise ReplyTooLarge(int(declared))
            return http.Response(status_code=response.status_code, headers=response.headers,
                                 stream=Capped(response.stream), extensions=response.extensions, request=request)

        async def aclose(self) -> None:
            await self.inner.aclose()

    return Capped, Transport


def capped_client(openai: Any, limits: Any) -> Any:
    """The openai client's default HTTP client, its transport refusing every reply body past MAX_REPLY_BYTES."""
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
