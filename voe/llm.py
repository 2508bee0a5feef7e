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
import sqlite3
import threading
import time
import typing
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from voe.config import LOOPBACK
from voe.endpoint import ReplyTooLarge, capped_client, problem, scrubbed, too_large
from voe.errors import UsageError, VoeError
from voe.jsonl import AppendLog
from voe.settings import settings as environment

CACHE_VERSION = 2  # 2: keyed by the endpoint and what it says of the model
RAW_RESPONSE = {"X-Stainless-Raw-Response": "true"}  # the openai client's switch for a response with retries_taken


class LLMError(VoeError):
    """The endpoint failed for good (after retries), or answered something that is not a chat completion."""


class ContextExhausted(LLMError):
    """The endpoint refused the conversation as longer than the model's context: the trajectory ends
    `context_exhausted` (scored), the run goes on."""


# what servers say when a prompt is past the context (OpenAI, vLLM, llama.cpp, llama-cpp-python, Ollama)
CONTEXT_WORDS = ("context_length_exceeded", "maximum context length", "context length", "context window",
                 "exceeds the context", "context size", "exceed context", "n_ctx", "too many tokens", "prompt is too long")


class BudgetExhausted(VoeError):
    """The run reached --max-requests or --max-cost; what finished is kept, `--resume` goes on from there."""


Protocol = Literal["tools", "json"]  # tools: one function per action; json: one JSON object per turn
ResponseFormat = Literal["json_schema", "json_object", "json_object_schema", "none"]  # how JSON is requested


DEFAULT_MAX_TOKENS = 2048


class Settings(BaseModel):
    """What decides a model's answer besides the conversation: part of the cache key and of run.json."""

    model: str
    temperature: float = 0.0
    max_tokens: int | None = DEFAULT_MAX_TOKENS  # bounded: a local model left alone writes until its context is full
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


def redact(text: str, *keys: str) -> str:
    """`text` without the API key (OPENAI_API_KEY, and any key given) in it."""
    secret = environment().openai_api_key
    for key in {secret.get_secret_value() if secret else "", *keys}:
        if key and len(key) >= 8:
            text = text.replace(key, "[redacted]")
    return text


def _server_of(base_url: str | None) -> str:
    """The endpoint as the cache knows it: a server on this machine without its port (a local server restarted on
    another port serves the same weights, and what it says of them keys the cache); any other by its whole URL."""
    if not base_url:
        return "api.openai.com"
    parts = urllib.parse.urlsplit(base_url)
    if parts.hostname in LOOPBACK:
        return urllib.parse.urlunsplit((parts.scheme, "local", parts.path.rstrip("/"), "", ""))
    return base_url.rstrip("/")


def cache_key(settings: Settings, request: dict[str, Any], salt: str, endpoint: dict[str, Any] | None = None) -> str:
    """The conversation and everything that shapes the answer; `salt` separates replicate passes (a pass at
    temperature > 0 is its own sample); `endpoint` is the server and what it says of the model (another server, or
    other weights under the same alias, is another answer)."""
    blob = json.dumps({"v": CACHE_VERSION, "settings": settings.model_dump(), "request": request, "salt": salt,
                       "endpoint": endpoint or {}}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


class Responses(typing.Protocol):
    """Where answers are kept by cache key: the shared ResponseCache or a run's own ResponseLog."""

    def get(self, key: str) -> dict[str, Any] | None: ...

    def put(self, key: str, response: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


def _entry(response: dict[str, Any]) -> str:
    return json.dumps({"v": CACHE_VERSION, "response": response}, sort_keys=True)


def _response_of(entry: Any) -> dict[str, Any] | None:
    response = entry.get("response") if isinstance(entry, dict) else None
    return response if isinstance(response, dict) else None


def _legacy_path(root: Path, key: str) -> Path:
    return root / key[:2] / f"{key}.json"


def _read_legacy(root: Path, key: str) -> dict[str, Any] | None:
    """An answer from the layout of one JSON file per response (ROOT/ab/KEY.json), read as before; nothing
    is written there any more: creating a file costs 0.2-1 ms of CPU on ext4 (docs/results/benchmarks.md),
    more than the rest of a call."""
    try:
        return _response_of(json.loads(_legacy_path(root, key).read_text()))
    except (OSError, ValueError):
        return None


def _has_legacy(root: Path) -> bool:
    try:
        return any(len(p.name) == 2 and p.is_dir() for p in root.iterdir())
    except OSError:
        return False


class ResponseCache:
    """The shared cache (VOE_CACHE_DIR/llm): one SQLite table of answers by key, in WAL mode so that runs in
    other processes read and write it at once (each answer committed when it arrives; a lock held by another
    writer is waited for). Answers kept by earlier versions as one file each under `root` are still read.
    Like the rest of VOE_CACHE_DIR (Neo4j's stores), it wants a local disk: SQLite's WAL does not work on a
    network filesystem."""

    FILE = "responses.sqlite3"

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self._db: sqlite3.Connection | None = None
        self._legacy = False
        self._lock = threading.Lock()  # the client is used from one event loop, the cache possibly from others

    def _open(self) -> sqlite3.Connection:
        if self._db is None:
            assert self.root is not None
            self.root.mkdir(parents=True, exist_ok=True)
            self._legacy = _has_legacy(self.root)
            db = sqlite3.connect(self.root / self.FILE, timeout=60.0, isolation_level=None, check_same_thread=False)
            try:
                db.execute("PRAGMA journal_mode=WAL")
                # a commit is not flushed to the disk: an answer lost to a crash of the machine is asked again
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, entry TEXT NOT NULL) "
                           "WITHOUT ROWID")
            except BaseException:
                db.close()
                raise
            self._db = db
        return self._db

    def get(self, key: str) -> dict[str, Any] | None:
        if self.root is None:
            return None
        with self._lock:
            row = self._open().execute("SELECT entry FROM responses WHERE key = ?", (key,)).fetchone()
            legacy = self._legacy
        if row is not None:
            try:
                return _response_of(json.loads(row[0]))
            except ValueError:
                return None
        return _read_legacy(self.root, key) if legacy else None

    def put(self, key: str, response: dict[str, Any]) -> None:
        if self.root is None:
            return
        entry = _entry(response)
        with self._lock:
            self._open().execute("INSERT OR REPLACE INTO responses (key, entry) VALUES (?, ?)", (key, entry))

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


class ResponseLog:
    """A run's own record of its answers (RUN/responses/log.jsonl), always read, so a resumed trajectory
    replays exactly what it was answered: a JSON line per answer, appended as it arrives (voe.jsonl.AppendLog:
    it survives a kill), read whole when first asked. Records of earlier versions (one file per answer under
    RUN/responses) are still read."""

    NAME = "log.jsonl"

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self._log = AppendLog(root / self.NAME) if root is not None else None
        self._held: dict[str, dict[str, Any]] | None = None
        self._legacy = False

    def _load(self) -> dict[str, dict[str, Any]]:
        if self._held is None:
            assert self.root is not None and self._log is not None
            held: dict[str, dict[str, Any]] = {}
            self._legacy = _has_legacy(self.root)
            for line in self._log.lines():
                try:
                    row = json.loads(line)
                except ValueError:
                    continue  # cut short by a kill: that call is made again
                response = _response_of(row)
                if response is not None and isinstance(row.get("key"), str):
                    held[row["key"]] = response
            self._held = held
        return self._held

    def get(self, key: str) -> dict[str, Any] | None:
        if self.root is None:
            return None
        hit = self._load().get(key)
        if hit is None and self._legacy:
            hit = _read_legacy(self.root, key)
        return hit

    def put(self, key: str, response: dict[str, Any]) -> None:
        if self._log is None:
            return
        held = self._load()
        self._log.append(json.dumps({"key": key, "v": CACHE_VERSION, "response": response}, sort_keys=True))
        held[key] = response

    def close(self) -> None:
        if self._log is not None:
            self._log.close()


def default_cache_dir() -> Path:
    return environment().cache_dir / "llm"


class ChatClient:
    """The async client with the run's cache and budget rules; retries are the openai client's (`max_attempts`
    tries a call at most). One openai client serves every call until close(), its connections kept alive:
    `concurrency` (the calls in flight at most) sizes the pool. close() also closes the caches it was given."""

    def __init__(self, settings: Settings, base_url: str | None, *, cache: Responses, run_cache: Responses,
                 budget: Budget, prices: dict[str, Price], timeout: float = 120.0, max_attempts: int = 8,
                 concurrency: int | None = None) -> None:
        import openai

        self.settings, self.cache, self.run_cache, self.budget, self.prices = settings, cache, run_cache, budget, prices
        self.max_attempts = max(1, max_attempts)
        env = environment()
        base = base_url or env.openai_base_url
        key = (env.openai_api_key.get_secret_value() if env.openai_api_key else None) or ("local" if base else None)
        if key is None:
            raise UsageError("no API key: set OPENAI_API_KEY (or give --base-url for a local server that needs none)")
        self._base, self._key, self._timeout, self._concurrency = base, key, timeout, concurrency
        self._async: Any = None  # made inside the event loop that uses it; close() ends it
        self._openai = openai
        self._endpoint: dict[str, Any] | None = None  # what the server says of the model (endpoint_identity)
        self.tool_choice = "required"  # "auto" once the server refuses "required" (llama-cpp-python)
        self._tool_choice_known = False
        self.retries = 0  # tries beyond the first, every call together (progress says them)

    async def endpoint_identity(self) -> dict[str, Any]:
        """The endpoint and its description of the model (`GET /models`: id, and for local servers the weights'
        file, size and context), read once; part of every cache key."""
        if self._endpoint is None:
            described: Any = None
            try:
                listed = await self._client.get("/models", cast_to=dict, options={"max_retries": 0, "timeout": 10})
                models = listed.get("data") if isinstance(listed, dict) else None
                mine = [m for m in models or [] if isinstance(m, dict) and m.get("id") == self.settings.model]
                described = {k: v for k, v in (mine or [{}])[0].items() if k not in ("created", "object")} or None
            except Exception:  # noqa: BLE001 - a server without /models is still a server; it is keyed by its URL
                described = None
            self._endpoint = {"base_url": _server_of(self._base), "model": described}
        return self._endpoint

    @property
    def _client(self) -> Any:
        if self._async is None:
            openai = self._openai
            limits = openai.DEFAULT_CONNECTION_LIMITS
            if self._concurrency is not None:
                # a kept-alive connection for every call in flight: past the default pool's 100, each call
                # would open (and for a real API, TLS-handshake) a connection of its own
                limits = type(limits)(max_connections=max(self._concurrency, limits.max_connections or 0),
                                      max_keepalive_connections=max(1, self._concurrency))
            # every reply body is refused past voe.endpoint.MAX_REPLY_BYTES as it arrives (voe/endpoint.py)
            http = capped_client(openai, limits)
            self._async = openai.AsyncOpenAI(base_url=self._base, api_key=self._key, max_retries=self.max_attempts - 1,
                                             timeout=self._timeout, http_client=http)
        return self._async

    async def close(self) -> None:
        if self._async is not None:
            await self._async.close()
            self._async = None
        self.cache.close()
        self.run_cache.close()

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
            req["tool_choice"] = self.tool_choice
        if response_format is not None:
            req["response_format"] = response_format
        return req

    async def complete(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
                       response_format: dict[str, Any] | None = None, salt: str = "",
                       use_cache: bool = True) -> Call:
        req = self._request(messages, tools, response_format)
        asked = {**req, "tool_choice": "required"} if tools else req
        # the run's own record answers this run's conversations whatever server it resumes against; the shared
        # cache is keyed by the endpoint too (another server, or other weights under one alias, answers anew)
        key = cache_key(self.settings, asked, salt)
        shared = cache_key(self.settings, asked, salt, await self.endpoint_identity())
        hit = self.run_cache.get(key)
        if hit is None and use_cache:
            hit = self.cache.get(shared)
            if hit is not None and problem(hit) is None:
                self.run_cache.put(key, hit)
        if hit is not None and problem(hit) is not None:
            hit = None  # an entry of an older voe that would not be accepted now: asked again
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
        self.cache.put(shared, response)  # a --no-cache run does not read the shared cache, but feeds it
        return call

    def _call(self, req: dict[str, Any], response: dict[str, Any], *, cached: bool, attempts: int,
              latency: float) -> Call:
        usage = response.get("usage") or {}
        tokens_in, tokens_out = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        choices = response.get("choices") or [{}]
        return Call(request=req, response=response, finish_reason=choices[0].get("finish_reason"),
                    tokens_in=tokens_in, tokens_out=tokens_out, cost=self._cost(tokens_in, tokens_out),
                    attempts=attempts, cached=cached, latency_s=round(latency, 4))

    async def _refuses_required(self, req: dict[str, Any], said: bool) -> tuple[dict[str, Any], int] | None:
        """After the first tools call failed: the answer with "auto" if the server refuses "required" (it says so,
        or "auto" is answered where "required" fails a second time), else None. Three quick tries at most."""
        try:
            answer, tries = await self._with_retries({**req, "tool_choice": "auto"}, retries=False)
        except ContextExhausted:
            raise
        except LLMError:
            return None  # "auto" fails too: not what the server refuses
        if not said:
            try:  # a passing server error answers "required" now: keep it
                return await self._with_retries(req, retries=False)
            except ContextExhausted:
                raise
            except LLMError:
                pass
        self.tool_choice = "auto"
        return answer, tries

    async def _with_retries(self, req: dict[str, Any], *, retries: bool = True) -> tuple[dict[str, Any], int]:
        """The answer and how many tries it took (the client retries; an error here is final). The first call
        with tools is tried once as it is: when a server refuses `tool_choice: "required"` (llama-cpp-python
        answers 500), the same call is tried once with "auto", and if that is answered the client asks with "auto"
        from then on, rather than retrying "required" for minutes."""
        openai = self._openai
        probe = retries and req.get("tool_choice") == "required" and not self._tool_choice_known
        try:
            # the request is plain JSON already: posted as it is, it skips the client's per-call transform of the
            # whole conversation (3-4 ms of CPU a call); the raw response says how many retries it took
            once = probe or not retries
            options: dict[str, Any] = {"headers": RAW_RESPONSE, **({"max_retries": 0} if once else {})}
            tries = 1 if once else self.max_attempts
            # each try ends at --timeout, its body dripped a byte at a time included (voe/endpoint.py), and is
            # retried as a timeout: the call lasts at most `tries` × --timeout plus the client's sleeps between
            raw = await self._client.post("/chat/completions", body=req, cast_to=dict, options=options)
            resp = raw.parse()
            self._tool_choice_known = self._tool_choice_known or "tools" in req
        except openai.APIStatusError as exc:
            text = f"{exc.message} {getattr(exc, 'body', '')}".lower()
            if exc.status_code in (400, 413) and any(w in text for w in CONTEXT_WORDS):
                raise ContextExhausted(redact(f"the endpoint refused the conversation as too long "
                                              f"({exc.status_code}: {exc.message})")) from None
            if probe:
                self._tool_choice_known = True
                if "tool" in text or exc.status_code >= 500:
                    auto = await self._refuses_required(req, said="tool" in text)
                    if auto is not None:
                        return auto
                # as any call, with the client's retries (a rate limit, a restart); the probe was one try
                response, tries = await self._with_retries(req)
                self.retries += 1
                return response, tries + 1
            raise LLMError(redact(f"the endpoint answered {exc.status_code}: {exc.message}")) from None
        except openai.APITimeoutError:
            raise LLMError(f"the endpoint did not finish its answer within {self._timeout:g} s a try (--timeout), "
                           f"{tries} {'try' if tries == 1 else 'tries'}") from None
        except openai.APIConnectionError as exc:
            if (big := too_large(exc)) is not None:
                raise LLMError(str(big)) from None
            raise LLMError(redact(f"the endpoint did not answer ({type(exc).__name__}: {exc})", self._key)) from None
        except ReplyTooLarge as exc:
            raise LLMError(str(exc)) from None
        except RecursionError:
            raise LLMError("the endpoint's answer is not a chat completion voe can read (nested too deeply)") from None
        except (openai.OpenAIError, ValueError) as exc:
            raise LLMError(redact(f"the endpoint's answer is not a chat completion ({exc})", self._key)) from None
        if (why := problem(resp)) is not None:
            raise LLMError(redact(f"the endpoint's answer is not a chat completion voe can read ({why})", self._key))
        tries = int(getattr(raw, "retries_taken", 0)) + 1
        self.retries += tries - 1
        # keys sorted, as the cache stores them (a replayed answer is the same bytes as a live one); a secret the
        # server echoed (the Authorization header) is replaced before the answer is kept anywhere
        return scrubbed(resp, self._secrets()), tries

    def _secrets(self) -> list[str]:
        secret = environment().openai_api_key
        return [k for k in {self._key, secret.get_secret_value() if secret else ""} if k]
