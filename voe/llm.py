"""Chat completions from any OpenAI-compatible endpoint, as a run needs them: the openai client's own retries
(exponential backoff from 0.5 s to 8 s with jitter on 408, 409, 429, 5xx, timeouts and dropped connections,
honouring Retry-After up to two minutes), a response cache keyed by model, settings and conversation, a request
and cost budget (a retried call counts once), and a record of every call (tokens, finish reason, attempts,
latency).

The API key is read from OPENAI_API_KEY and handed to the client only: it is never part of a cache key,
a cache entry, a transcript or an error message (`redact`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from voe.errors import UsageError, VoeError
from voe.settings import settings as environment

CACHE_VERSION = 1
RAW_RESPONSE = {"X-Stainless-Raw-Response": "true"}  # the openai client's switch for a response with retries_taken


class LLMError(VoeError):
    """The endpoint failed for good (after retries), or answered something that is not a chat completion."""


class BudgetExhausted(VoeError):
    """The run reached --max-requests or --max-cost; what finished is kept, `--resume` goes on from there."""


Protocol = Literal["tools", "json"]  # tools: one function per action; json: one JSON object per turn
ResponseFormat = Literal["json_schema", "json_object", "json_object_schema", "none"]  # how JSON is requested


class Settings(BaseModel):
    """What decides a model's answer besides the conversation: part of the cache key and of run.json."""

    model: str
    temperature: float = 0.0
    max_tokens: int | None = None
    seed: int | None = None
    protocol: Protocol = "tools"
    response_format: ResponseFormat = "json_schema"  # the json protocol only


class Price(BaseModel):
    input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0


class Call(BaseModel):
    """One chat completion as a run records it (the cached flag and latency go to timing.jsonl only)."""

    request: dict[str, Any]
    response: dict[str, Any]
    finish_reason: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float | None = None
    attempts: int = 1
    cached: bool = False
    latency_s: float = 0.0


@dataclass
class Budget:
    max_requests: int | None = None
    max_cost: float | None = None
    requests: int = 0
    cost: float = 0.0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def exhausted(self) -> str | None:
        if self.max_requests is not None and self.requests >= self.max_requests:
            return f"--max-requests {self.max_requests} reached"
        if self.max_cost is not None and self.cost >= self.max_cost:
            return f"--max-cost {self.max_cost} reached ({self.cost:.4f} spent)"
        return None


def load_prices(path: Path | None) -> dict[str, Price]:
    """A price table: JSON {model: {"input_per_mtok": USD, "output_per_mtok": USD}} (per million tokens)."""
    if path is None:
        path = environment().voe_prices
    if path is None:
        return {}
    try:
        raw = json.loads(path.read_text())
        return {str(k): Price.model_validate(v) for k, v in raw.items()}
    except (OSError, ValueError, AttributeError) as exc:
        raise UsageError(f"{path}: not a price table ({exc}); expected {{model: {{input_per_mtok, output_per_mtok}}}}")\
            from exc


def redact(text: str) -> str:
    secret = environment().openai_api_key
    key = secret.get_secret_value() if secret else None
    return text.replace(key, "[redacted]") if key and len(key) >= 4 else text


def cache_key(settings: Settings, request: dict[str, Any], salt: str) -> str:
    """The conversation and everything that shapes the answer; `salt` separates replicate passes (a pass at
    temperature > 0 is its own sample)."""
    blob = json.dumps({"v": CACHE_VERSION, "settings": settings.model_dump(), "request": request, "salt": salt},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    """One JSON file per response under `root`, written atomically: the shared cache (VOE_CACHE_DIR/llm) and
    each run's own (RUN/responses, always read, so a resumed trajectory replays exactly what it was answered)."""

    def __init__(self, root: Path | None) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        assert self.root is not None
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        if self.root is None:
            return None
        try:
            entry = json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return None
        return entry.get("response") if isinstance(entry, dict) else None

    def put(self, key: str, response: dict[str, Any]) -> None:
        if self.root is None:
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{random.getrandbits(32):08x}.tmp")
        tmp.write_text(json.dumps({"v": CACHE_VERSION, "response": response}, sort_keys=True))
        tmp.replace(path)


def default_cache_dir() -> Path:
    return environment().cache_dir / "llm"


class ChatClient:
    """The async client with the run's cache and budget rules; retries are the openai client's (`max_attempts`
    tries a call at most)."""

    def __init__(self, settings: Settings, base_url: str | None, *, cache: ResponseCache, run_cache: ResponseCache,
                 budget: Budget,
                 prices: dict[str, Price], timeout: float = 120.0, max_attempts: int = 8) -> None:
        import openai

        self.settings, self.cache, self.run_cache, self.budget, self.prices = settings, cache, run_cache, budget, prices
        self.max_attempts = max(1, max_attempts)
        env = environment()
        base = base_url or env.openai_base_url
        key = (env.openai_api_key.get_secret_value() if env.openai_api_key else None) or ("local" if base else None)
        if key is None:
            raise UsageError("no API key: set OPENAI_API_KEY (or give --base-url for a local server that needs none)")
        self._base, self._key, self._timeout = base, key, timeout
        self._async: Any = None  # made inside the event loop that uses it; close() ends it
        self._openai = openai

    @property
    def _client(self) -> Any:
        if self._async is None:
            self._async = self._openai.AsyncOpenAI(base_url=self._base, api_key=self._key,
                                                   max_retries=self.max_attempts - 1,
                                                   timeout=self._timeout)
        return self._async

    async def close(self) -> None:
        if self._async is not None:
            await self._async.close()
            self._async = None

    def _cost(self, tokens_in: int, tokens_out: int) -> float | None:
        price = self.prices.get(self.settings.model)
        if price is None:
            return None
        return round((tokens_in * price.input_per_mtok + tokens_out * price.output_per_mtok) / 1e6, 8)

    def _request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 response_format: dict[str, Any] | None) -> dict[str, Any]:
        req: dict[str, Any] = {"model": self.settings.model, "messages": messages,
                               "temperature": self.settings.temperature}
        if self.settings.max_tokens is not None:
            req["max_tokens"] = self.settings.max_tokens
        if self.settings.seed is not None:
            req["seed"] = self.settings.seed
        if tools:
            req["tools"] = tools
            req["tool_choice"] = "required"
        if response_format is not None:
            req["response_format"] = response_format
        return req

    async def complete(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
                       response_format: dict[str, Any] | None = None, salt: str = "",
                       use_cache: bool = True) -> Call:
        req = self._request(messages, tools, response_format)
        key = cache_key(self.settings, req, salt)
        hit = self.run_cache.get(key)
        if hit is None and use_cache:
            hit = self.cache.get(key)
            if hit is not None:
                self.run_cache.put(key, hit)
        if hit is not None:
            return self._call(req, hit, cached=True, attempts=0, latency=0.0)
        async with self.budget.lock:
            if (why := self.budget.exhausted()) is not None:
                raise BudgetExhausted(why)
            self.budget.requests += 1
        started = time.perf_counter()
        response, attempts = await self._with_retries(req)
        call = self._call(req, response, cached=False, attempts=attempts, latency=time.perf_counter() - started)
        if call.cost is not None:
            async with self.budget.lock:
                self.budget.cost += call.cost
        self.run_cache.put(key, response)
        self.cache.put(key, response)  # a --no-cache run does not read the shared cache, but feeds it
        return call

    def _call(self, req: dict[str, Any], response: dict[str, Any], *, cached: bool, attempts: int,
              latency: float) -> Call:
        usage = response.get("usage") or {}
        tokens_in, tokens_out = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        choices = response.get("choices") or [{}]
        return Call(request=req, response=response, finish_reason=choices[0].get("finish_reason"),
                    tokens_in=tokens_in, tokens_out=tokens_out, cost=self._cost(tokens_in, tokens_out),
                    attempts=attempts, cached=cached, latency_s=round(latency, 4))

    async def _with_retries(self, req: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """The answer and how many tries it took (the client retries; an error here is final)."""
        openai = self._openai
        try:
            # the request is plain JSON already: posted as it is, it skips the client's per-call transform of the
            # whole conversation (3-4 ms of CPU a call); the raw response says how many retries it took
            raw = await self._client.post("/chat/completions", body=req, cast_to=dict,
                                          options={"headers": RAW_RESPONSE})
            resp = raw.parse()
        except openai.APIStatusError as exc:
            raise LLMError(redact(f"the endpoint answered {exc.status_code}: {exc.message}")) from None
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            raise LLMError(redact(f"the endpoint did not answer ({type(exc).__name__}: {exc})")) from None
        except (openai.OpenAIError, ValueError) as exc:
            raise LLMError(redact(f"the endpoint's answer is not a chat completion ({exc})")) from None
        if not isinstance(resp, dict) or not isinstance(resp.get("choices"), list):
            raise LLMError(redact(f"the endpoint's answer is not a chat completion: {str(resp)[:200]}"))
        # keys sorted, as the cache stores them: a replayed answer is the same bytes as a live one
        return json.loads(json.dumps(resp, sort_keys=True)), int(getattr(raw, "retries_taken", 0)) + 1
