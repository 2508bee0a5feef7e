"""voe/llm.py without a package or Neo4j: one kept-alive client for every call, and the two response stores (the
shared SQLite cache, a run's append-only log) as other processes and earlier versions see them."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LLM_SECRET as SECRET
from tests.llm_server import LocalLLMServer, Reply
from voe.llm import Budget, ChatClient, ResponseCache, ResponseLog, Settings

pytestmark = pytest.mark.usefixtures("llm_env")  # tests/conftest.py: a known key, a cache of its own


def answer(body: dict[str, Any], index: int) -> Reply:
    return Reply.text(f"answer to {body['messages'][-1]['content']}")


def client(server: LocalLLMServer, tmp_path: Path, concurrency: int | None) -> ChatClient:
    return ChatClient(Settings(model="scripted"), server.base_url, cache=ResponseCache(tmp_path / "shared"),
                      run_cache=ResponseLog(tmp_path / "run"), budget=Budget(), prices={}, concurrency=concurrency)


@pytest.mark.parametrize("concurrency", [1, 4])
def test_every_call_goes_over_the_connections_kept_alive(tmp_path: Path, concurrency: int) -> None:
    """Waves of `concurrency` calls at once, 40 calls in all: the server sees at most one connection per call in
    flight, not one per call or per wave."""
    async def run(chat: ChatClient) -> None:
        try:
            for wave in range(40 // concurrency):
                await asyncio.gather(*(chat.complete([{"role": "user", "content": f"{wave}.{k}"}], use_cache=False)
                                       for k in range(concurrency)))
        finally:
            await chat.close()

    with LocalLLMServer(answer) as server:
        asyncio.run(run(client(server, tmp_path, concurrency)))
        assert server.calls == 40
        assert 1 <= server.connections_opened <= concurrency


def test_answers_are_recorded_once_per_call_and_replayed_from_the_run_log(tmp_path: Path) -> None:
    messages = [{"role": "user", "content": "what is the yield strength?"}]

    async def ask(chat: ChatClient, use_cache: bool) -> Any:
        try:
            return await chat.complete(messages, salt="t0", use_cache=use_cache)
        finally:
            await chat.close()

    with LocalLLMServer(answer) as server:
        first = asyncio.run(ask(client(server, tmp_path, 1), use_cache=False))
        again = asyncio.run(ask(client(server, tmp_path, 1), use_cache=False))  # the run log answers
        assert server.calls == 1
    assert not first.cached and first.attempts == 1 and again.cached and again.response == first.response
    lines = (tmp_path / "run" / ResponseLog.NAME).read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["response"] == first.response
    with LocalLLMServer(answer) as server:  # another run, against the same server: the shared cache answers
        shared = asyncio.run(ask(ChatClient(Settings(model="scripted"), server.base_url,
                                            cache=ResponseCache(tmp_path / "shared"),
                                            run_cache=ResponseLog(tmp_path / "other"), budget=Budget(), prices={}),
                                 use_cache=True))
        assert server.calls == 0 and shared.cached and shared.response == first.response
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert not [p for p in written if SECRET.encode() in p.read_bytes()]


def test_a_line_cut_short_by_a_kill_is_skipped_and_the_next_stands_on_its_own(tmp_path: Path) -> None:
    log = ResponseLog(tmp_path)
    log.put("a" * 64, {"choices": [{"n": 1}]})
    log.close()
    with (tmp_path / ResponseLog.NAME).open("a") as f:
        f.write('{"key": "' + "b" * 64 + '", "response": {"cho')  # the kill came mid-write
    resumed = ResponseLog(tmp_path)
    assert resumed.get("a" * 64) == {"choices": [{"n": 1}]} and resumed.get("b" * 64) is None
    resumed.put("c" * 64, {"choices": [{"n": 3}]})
    resumed.close()
    again = ResponseLog(tmp_path)
    assert again.get("c" * 64) == {"choices": [{"n": 3}]} and again.get("a" * 64) == {"choices": [{"n": 1}]}


def test_answers_kept_one_file_each_by_earlier_versions_are_still_read(tmp_path: Path) -> None:
    key = "ab" + "0" * 62
    for root in (tmp_path / "shared", tmp_path / "run"):
        (root / "ab").mkdir(parents=True)
        (root / "ab" / f"{key}.json").write_text(json.dumps({"v": 1, "response": {"choices": [], "old": True}}))
    assert ResponseCache(tmp_path / "shared").get(key) == {"choices": [], "old": True}
    assert ResponseLog(tmp_path / "run").get(key) == {"choices": [], "old": True}
    assert ResponseCache(tmp_path / "shared").get("cd" + "0" * 62) is None


def _fill(root: str, prefix: str, count: int) -> None:
    cache = ResponseCache(Path(root))
    for k in range(count):
        cache.put(f"{prefix}{k:063d}", {"choices": [{"k": k}], "by": prefix})
    cache.close()


def test_processes_share_the_cache_while_they_write_it(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    writers = [ctx.Process(target=_fill, args=(str(tmp_path), prefix, 300)) for prefix in "xy"]
    for w in writers:
        w.start()
    for w in writers:
        w.join(60)
        assert w.exitcode == 0
    cache = ResponseCache(tmp_path)
    assert all(cache.get(f"{p}{k:063d}") == {"choices": [{"k": k}], "by": p} for p in "xy" for k in range(300))
    cache.close()
