"""`voe fetch` against a hostile PDR stand-in on 127.0.0.1: bodies past the declared size, endless NERDm,
drips (body and headers), lying 206 answers, redirects elsewhere, missing or non-sha256 checksums, and
filepaths that clash or are not names. Every server loop is bounded in bytes and time; no database."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

from voe.errors import InputError
from voe.ingest.fetch import PART_DIR, FetchError, FetchReport, FileResult, _part_name, fetch

REC = "mds2-9999"
BODY = bytes(range(128))  # a declared 128-byte file
BIG = bytes((i * 7) % 251 for i in range(10_000))
SERVER_LIMIT_S = 5.0  # no handler runs longer than this
SERVER_LIMIT_B = 32 << 20  # nor sends more than this


def comp(fp: str, body: bytes, *, size: bool = True, algo: str | None = "sha256", digest: str | None = None,
         kind: str = "nrdp:DataFile") -> dict[str, Any]:
    c: dict[str, Any] = {"@type": [kind, "nrdp:DownloadableFile"], "filepath": fp}
    if size:
        c["size"] = len(body)
    if algo is not None:
        value = digest or (hashlib.new(algo, body).hexdigest() if algo in hashlib.algorithms_available else "00")
        c["checksum"] = {"algorithm": {"@type": "Thing", "tag": algo}, "hash": value}
    return c


class Hostile:
    """/od/id/REC and /od/ds/REC/<fp>; `modes[fp]` is consumed one per request (then "ok")."""

    def __init__(self) -> None:
        self.components: list[dict[str, Any]] = []
        self.files: dict[str, bytes] = {}
        self.modes: dict[str, list[str]] = {}
        self.record_mode = "ok"
        self.record_body: bytes | None = None  # served as the record instead of the components, when set
        self.requests: list[tuple[str, str | None]] = []
        self.times: list[tuple[str, float]] = []
        self.lock = threading.Lock()
        hostile = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                url = urlparse(self.path)
                with hostile.lock:
                    hostile.requests.append((url.path, self.headers.get("Range")))
                    hostile.times.append((unquote(url.path), time.monotonic()))
                try:
                    self._answer(url.path)
                except (BrokenPipeError, ConnectionResetError, TimeoutError):
                    pass  # the client hung up: that is what the limits are for

            def _answer(self, path: str) -> None:
                if path == f"/od/id/{REC}":
                    body = json.dumps({"@id": f"ark:/88434/{REC}", "components": hostile.components}).encode()
                    if hostile.record_mode == "endless":
                        return self._flood(None)
                    if hostile.record_mode.startswith("redirect:"):
                        return self._redirect(hostile.record_mode[len("redirect:"):])
                    return self._send(200, hostile.record_body if hostile.record_body is not None else body)
                prefix = f"/od/ds/{REC}/"
                fp = unquote(path[len(prefix):]) if path.startswith(prefix) else ""
                if path.startswith("/moved/"):
                    fp = unquote(path[len("/moved/"):])
                with hostile.lock:
                    queue = hostile.modes.get(fp) or []
                    mode = queue.pop(0) if queue else "ok"
                if fp not in hostile.files:
                    return self._send(404, b"")
                body = hostile.files[fp]
                start = int(self.headers.get("Range", "bytes=0-")[6:].split("-")[0] or 0)
                if mode == "flood":
                    return self._flood(None)
                if mode == "flood-cl":
                    return self._flood(300_000_000)
                if mode == "drip":
                    self._head(200, {"Content-Length": str(len(body))})
                    return self._drip(body)
                if mode == "drip-headers":
                    self.wfile.write(b"HTTP/1.0 200 OK\r\nX-Drip: ")
                    return self._drip(b"a" * 200)
                if mode.startswith("redirect:"):
                    return self._redirect(mode[len("redirect:"):])
                if mode.startswith("busy:"):  # 429 asking for a wait of the given seconds
                    return self._send(429, b"", {"Retry-After": mode[len("busy:"):]})
                if mode == "corrupt":
                    body = body[:-1] + bytes([body[-1] ^ 1])
                if mode == "range-from-zero" and start:
                    # a 206 that ignores the requested start: appending it would duplicate the head
                    return self._send(206, body, {"Content-Range": f"bytes 0-{len(body) - 1}/{len(body)}"})
                if mode == "range-wrong-total" and start:
                    return self._send(206, body[start:], {"Content-Range": f"bytes {start}-{len(body)}/{len(body) + 1}"})
                if start:
                    chunk = body[start:]
                    return self._send(206, chunk, {"Content-Range": f"bytes {start}-{len(body) - 1}/{len(body)}"},
                                      half=mode == "half")
                return self._send(200, body, half=mode == "half")

            def _head(self, code: int, headers: dict[str, str]) -> None:
                self.send_response(code)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()

            def _send(self, code: int, body: bytes, extra: dict[str, str] | None = None, half: bool = False) -> None:
                self._head(code, {"Content-Length": str(len(body))} | (extra or {}))
                self.wfile.write(body[: len(body) // 2] if half else body)
                self.wfile.flush()

            def _redirect(self, location: str) -> None:
                self._head(302, {"Location": location, "Content-Length": "0"})

            def _flood(self, length: int | None) -> None:
                self._head(200, {"Content-Length": str(length)} if length is not None else {})
                chunk, sent, until = b"x" * 65536, 0, time.monotonic() + SERVER_LIMIT_S
                while sent < SERVER_LIMIT_B and time.monotonic() < until:
                    self.wfile.write(chunk)
                    sent += len(chunk)

            def _drip(self, data: bytes) -> None:
                until = time.monotonic() + SERVER_LIMIT_S
                for i in range(len(data)):
                    if time.monotonic() > until:
                        return
                    self.wfile.write(data[i:i + 1])
                    self.wfile.flush()
                    time.sleep(0.05)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def add(self, c: dict[str, Any], body: bytes, *modes: str) -> None:
        self.components.append(c)
        self.files[c["filepath"]] = body
        if modes:
            self.modes[c["filepath"]] = list(modes)

    def ranges(self, fp: str) -> list[str | None]:
        return [r for p, r in self.requests if unquote(p).endswith("/" + fp)]


def _serve(server: Hostile) -> Iterator[Hostile]:
    thread = threading.Thread(target=server.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()
    thread.join(timeout=2)


@pytest.fixture
def pdr() -> Iterator[Hostile]:
    yield from _serve(Hostile())


@pytest.fixture
def other() -> Iterator[Hostile]:
    yield from _serve(Hostile())


def run(pdr: Hostile, into: Path, **kw: Any) -> FetchReport:
    opts: dict[str, Any] = {"base_url": pdr.url, "backoff": 0, "retries": 2, "timeout": 2.0} | kw
    return fetch(REC, into, **opts)


def by_path(report: FetchReport) -> dict[str, FileResult]:
    return {f.filepath: f for f in report.files}


def on_disk(into: Path) -> set[str]:
    return {str(p.relative_to(into)) for p in into.rglob("*") if p.is_file()}


# ------------------------------------------------------------------------------------ byte limits
def test_a_body_past_its_declared_size_is_cut_off_and_dropped(pdr: Hostile, tmp_path: Path) -> None:
    pdr.add(comp("flood.bin", BODY), BODY, "flood", "flood", "flood")  # no Content-Length, endless
    pdr.add(comp("liar.bin", BODY), BODY, "flood-cl", "flood-cl", "flood-cl")  # announces 300 MB
    pdr.add(comp("once.bin", BODY), BODY, "flood")  # floods once, then serves the file
    pdr.add(comp("fine.bin", BIG), BIG)
    into = tmp_path / "r"
    started = time.monotonic()
    report = run(pdr, into)
    assert time.monotonic() - started < 5
    by = by_path(report)
    assert by["flood.bin"].status == "failed" and "runs past the 128 B" in (by["flood.bin"].error or "")
    assert by["flood.bin"].received <= 3 * 129 and by["flood.bin"].attempts == 3
    assert by["liar.bin"].status == "failed" and "announces 300000000 B" in (by["liar.bin"].error or "")
    assert by["liar.bin"].received == 0
    assert by["once.bin"].status == "ok" and by["once.bin"].attempts == 2
    assert by["fine.bin"].status == "ok"
    assert on_disk(into) == {"nerdm.json", "once.bin", "fine.bin"}  # nothing partial, no temp folder left
    assert (into / "once.bin").read_bytes() == BODY


def test_a_file_without_a_declared_size_is_capped(pdr: Hostile, tmp_path: Path) -> None:
    pdr.add(comp("unsized.bin", BODY, size=False), BODY, "flood")
    pdr.add(comp("small.bin", BODY, size=False), BODY)
    report = run(pdr, tmp_path / "r", unsized_cap=4096)
    by = by_path(report)
    assert by["unsized.bin"].status == "failed" and "past the 4096 B cap" in (by["unsized.bin"].error or "")
    assert by["unsized.bin"].attempts == 1 and by["unsized.bin"].received <= 4097
    assert by["small.bin"].status == "ok" and (tmp_path / "r" / "small.bin").read_bytes() == BODY
    assert on_disk(tmp_path / "r") == {"nerdm.json", "small.bin"}


def test_an_endless_nerdm_answer_is_capped(pdr: Hostile, tmp_path: Path) -> None:
    pdr.record_mode = "endless"
    started = time.monotonic()
    with pytest.raises(FetchError, match="runs past the 65536 B cap"):
        run(pdr, tmp_path / "r", record_cap=65536)
    assert time.monotonic() - started < 3
    assert len(pdr.requests) == 1  # a cap is not retried
    assert on_disk(tmp_path / "r") == set()


def test_max_bytes_counts_the_bytes_that_arrive(pdr: Hostile, tmp_path: Path) -> None:
    for name in ("one.bin", "two.bin", "three.bin"):  # no declared size: only the arriving bytes tell
        pdr.add(comp(name, BIG, size=False), BIG)
    into = tmp_path / "r"
    report = run(pdr, into, max_bytes=15_000)
    by = by_path(report)
    assert by["one.bin"].status == "ok"
    assert by["two.bin"].status == "skipped" and by["two.bin"].error == "--max-bytes reached after 5000 B"
    assert by["two.bin"].partial == 5000  # verifiable, so kept for a resume
    assert by["three.bin"].status == "skipped" and by["three.bin"].error == "--max-bytes used up"
    assert report.received == 15_000 and report.failed == []
    assert not (into / "two.bin").exists() and len(list((into / PART_DIR).iterdir())) == 1
    again = run(pdr, into)
    by = by_path(again)
    assert [by[n].status for n in ("one.bin", "two.bin", "three.bin")] == ["exists", "ok", "ok"]
    assert by["two.bin"].resumed and pdr.ranges("two.bin")[-1] == "bytes=5000-"
    assert (into / "two.bin").read_bytes() == BIG and not (into / PART_DIR).exists()


# --------------------------------------------------------------------------------------- deadlines
def test_a_dripping_body_ends_at_the_file_deadline_and_resumes_later(pdr: Hostile, tmp_path: Path) -> None:
    pdr.add(comp("drip.bin", BODY), BODY, "drip", "drip")
    pdr.add(comp("fine.bin", BIG), BIG)
    into = tmp_path / "r"
    started = time.monotonic()
    report = run(pdr, into, timeout=0.5, file_deadline=0.6)  # each byte comes well within the read timeout
    assert time.monotonic() - started < 3
    by = by_path(report)
    assert by["drip.bin"].status == "failed" and "file deadline (0.6 s) passed" in (by["drip.bin"].error or "")
    assert 0 < by["drip.bin"].partial < len(BODY) and by["fine.bin"].status == "ok"
    assert not (into / "drip.bin").exists()
    pdr.modes["drip.bin"] = []
    again = by_path(run(pdr, into))["drip.bin"]
    assert again.status == "ok" and again.resumed and (into / "drip.bin").read_bytes() == BODY
    assert not (into / PART_DIR).exists()


def test_dripping_headers_end_at_the_file_deadline(pdr: Hostile, tmp_path: Path) -> None:
    pdr.add(comp("slow-head.bin", BODY), BODY, "drip-headers", "drip-headers")
    started = time.monotonic()
    result = by_path(run(pdr, tmp_path / "r", timeout=0.5, file_deadline=0.7))["slow-head.bin"]
    assert time.monotonic() - started < 3
    assert result.status == "failed" and "file deadline (0.7 s) passed" in (result.error or "")
    assert on_disk(tmp_path / "r") == {"nerdm.json"}


def test_the_run_deadline_stops_the_run(pdr: Hostile, tmp_path: Path) -> None:
    pdr.add(comp("a.bin", BODY), BODY, "drip")
    pdr.add(comp("b.bin", BODY), BODY)
    started = time.monotonic()
    report = run(pdr, tmp_path / "r", timeout=0.5, deadline=0.8, file_deadline=30)
    assert time.monotonic() - started < 3
    by = by_path(report)
    assert by["a.bin"].status == "failed" and "run deadline (0.8 s) passed" in (by["a.bin"].error or "")
    assert by["b.bin"].status == "failed" and by["b.bin"].error == "not attempted: run deadline (0.8 s) passed"
    assert pdr.ranges("b.bin") == []


# ------------------------------------------------------------------------------------ 206 answers
def test_a_206_that_does_not_match_the_range_restarts_from_zero(pdr: Hostile, tmp_path: Path) -> None:
    pdr.add(comp("head.bin", BIG), BIG, "half", "range-from-zero")
    pdr.add(comp("total.bin", BIG), BIG, "half", "range-wrong-total", "half", "range-wrong-total")
    into = tmp_path / "r"
    by = by_path(run(pdr, into, retries=3))
    assert by["head.bin"].status == "ok" and (into / "head.bin").read_bytes() == BIG
    assert pdr.ranges("head.bin") == [None, "bytes=5000-", None]  # the refused 206 was not appended
    assert by["total.bin"].status == "failed" and "HTTP 206 refused" in (by["total.bin"].error or "")
    assert "bytes 5000-10000/10001" in (by["total.bin"].error or "")
    assert by["total.bin"].partial == 0 and not (into / "total.bin").exists()
    assert on_disk(into) == {"nerdm.json", "head.bin"}


# ------------------------------------------------------------------------------------- checksums
def test_the_declared_algorithm_is_honoured(pdr: Hostile, tmp_path: Path) -> None:
    for algo in ("md5", "sha1", "sha512", "SHA-256"):
        name = f"{algo}.bin"
        pdr.add(comp(name, BIG, algo="sha256" if algo == "SHA-256" else algo), BIG)
        if algo == "SHA-256":
            pdr.components[-1]["checksum"]["algorithm"]["tag"] = algo
    bad = comp("bad-md5.bin", BIG, algo="md5", digest=hashlib.md5(b"other").hexdigest())
    pdr.add(bad, BIG)
    into = tmp_path / "r"
    by = by_path(run(pdr, into))
    assert {n: (by[n].status, by[n].checksum) for n in ("md5.bin", "sha1.bin", "sha512.bin", "SHA-256.bin")} == {
        "md5.bin": ("ok", "md5"), "sha1.bin": ("ok", "sha1"), "sha512.bin": ("ok", "sha512"),
        "SHA-256.bin": ("ok", "sha256")}
    assert by["bad-md5.bin"].status == "failed" and "md5 " in (by["bad-md5.bin"].error or "")
    assert by["bad-md5.bin"].attempts == 3 and not (into / "bad-md5.bin").exists()
    again = by_path(run(pdr, into))
    assert again["md5.bin"].status == "exists" and again["sha512.bin"].status == "exists"


def test_a_file_nobody_can_verify_is_unverified_and_never_resumed(pdr: Hostile, tmp_path: Path) -> None:
    pdr.add(comp("nosum.bin", BIG, algo=None), BIG, "half")
    pdr.add(comp("crc.bin", BIG, algo="crc32", digest="1234abcd"), BIG, "corrupt")
    pdr.add(comp("noalg.bin", BIG), BIG)
    del pdr.components[-1]["checksum"]["algorithm"]
    pdr.add(comp("fine.bin", BIG), BIG)
    into = tmp_path / "r"
    report = run(pdr, into)
    by = by_path(report)
    assert (by["nosum.bin"].status, by["nosum.bin"].note) == ("unverified", "no checksum declared")
    assert pdr.ranges("nosum.bin") == [None, None]  # the cut download restarted from zero
    assert (by["crc.bin"].status, by["crc.bin"].note) == ("unverified", "unknown checksum algorithm 'crc32'")
    assert (into / "crc.bin").read_bytes() != BIG  # wrong bytes, but reported as unverified, not ok
    assert by["noalg.bin"].status == "unverified" and by["fine.bin"].status == "ok"
    assert [f.filepath for f in report.unverified] == ["nosum.bin", "crc.bin", "noalg.bin"] and report.failed == []
    assert not (into / PART_DIR).exists()


def test_a_partial_of_an_unverifiable_file_is_never_resumed(pdr: Hostile, tmp_path: Path) -> None:
    pdr.add(comp("nosum.bin", BIG, algo=None), BIG, "half")
    into = tmp_path / "r"
    first = by_path(run(pdr, into, retries=0))["nosum.bin"]
    assert first.status == "failed" and first.partial == 0 and not (into / PART_DIR).exists()
    (into / PART_DIR).mkdir()  # a leftover under the very name a resume would use
    (into / PART_DIR / _part_name("nosum.bin", len(BIG), None)).write_bytes(b"\0" * 5000)
    assert by_path(run(pdr, into))["nosum.bin"].status == "unverified"
    assert pdr.ranges("nosum.bin") == [None, None] and (into / "nosum.bin").read_bytes() == BIG
    assert not (into / PART_DIR).exists()


# ------------------------------------------------------------------------------------- redirects
def test_redirects_go_only_to_the_same_origin(pdr: Hostile, other: Hostile, tmp_path: Path) -> None:
    port = pdr.url.rsplit(":", 1)[1]
    pdr.add(comp("same.bin", BIG), BIG, "redirect:/moved/same.bin")
    pdr.add(comp("host.bin", BIG), BIG, f"redirect:http://localhost:{port}/moved/host.bin")
    other.files["port.bin"] = BIG
    pdr.add(comp("port.bin", BIG), BIG, f"redirect:{other.url}/moved/port.bin")
    pdr.add(comp("file.bin", BIG), BIG, "redirect:file:///etc/passwd")
    into = tmp_path / "r"
    by = by_path(run(pdr, into))
    assert by["same.bin"].status == "ok" and (into / "same.bin").read_bytes() == BIG
    for name, target in (("host.bin", f"http://localhost:{port}/moved/host.bin"),
                         ("port.bin", f"{other.url}/moved/port.bin"), ("file.bin", "file:///etc/passwd")):
        assert by[name].status == "failed" and target in (by[name].error or ""), by[name]
        assert by[name].attempts == 1
    assert other.requests == []
    assert on_disk(into) == {"nerdm.json", "same.bin"}


def test_a_redirected_record_elsewhere_is_refused(pdr: Hostile, other: Hostile, tmp_path: Path) -> None:
    pdr.record_mode = f"redirect:{other.url}/od/id/{REC}"
    with pytest.raises(FetchError, match=f"redirect \\(HTTP 302\\) to {other.url}/od/id/{REC} refused"):
        run(pdr, tmp_path / "r")
    assert other.requests == []


# ----------------------------------------------------------------------------------------- paths
def test_bad_and_clashing_filepaths_fail_alone(pdr: Hostile, tmp_path: Path) -> None:
    bodies = {"a": b"file a", "a/b": b"file a/b", "x": b"file x", "x.part": b"the real x.part",
              "nerdm.json.part": b"a real component", "nul\x00name": b"n", "../up": b"u", "/abs": b"s",
              "dup": b"d", ".voe-part/evil": b"e", "c//d": b"c", "ctrl\nname": b"c", "ok.csv": b"k,v\n"}
    for fp, body in bodies.items():
        pdr.add(comp(fp, body), body)
    pdr.add(comp("dup", b"d"), b"d")
    into = tmp_path / "r"
    report = run(pdr, into)
    errors = {f.filepath: (f.status, f.error) for f in report.files}
    assert errors["a"] == errors["a/b"] == ("failed", "filepath 'a' is a file and also the folder of 'a/b'; both refused")
    assert errors["nul\x00name"] == ("failed", "filepath contains a NUL byte; refused")
    assert errors["ctrl\nname"] == ("failed", "filepath contains a control character; refused")
    assert errors["../up"] == errors["/abs"] == ("failed", "filepath escapes --into or names the record file; refused")
    assert errors["dup"] == ("failed", "filepath appears 2 times in the record; refused")
    assert errors[".voe-part/evil"][1] == "filepath is inside .voe-part/, which voe fetch keeps for temporary files; refused"
    assert errors["c//d"] == ("failed", "filepath has an empty or '.' segment; refused")
    for fp in ("x", "x.part", "nerdm.json.part", "ok.csv"):
        assert errors[fp] == ("ok", None)
        assert (into / fp).read_bytes() == bodies[fp]  # x.part is a component, not a leftover
    assert on_disk(into) == {"nerdm.json", "x", "x.part", "nerdm.json.part", "ok.csv"}
    assert not (tmp_path / "up").exists()
    requested = {unquote(p) for p, _ in pdr.requests}
    assert requested == {f"/od/id/{REC}"} | {f"/od/ds/{REC}/{fp}" for fp in ("x", "x.part", "nerdm.json.part", "ok.csv")}


def test_something_in_the_way_on_disk_fails_that_file(pdr: Hostile, tmp_path: Path) -> None:
    pdr.add(comp("a/b", BODY), BODY)
    pdr.add(comp("d", BODY), BODY)
    pdr.add(comp("ok.bin", BODY), BODY)
    into = tmp_path / "r"
    into.mkdir()
    (into / "a").write_bytes(b"an older file")
    (into / "d").mkdir()
    by = by_path(run(pdr, into))
    assert by["a/b"].status == "failed" and (by["a/b"].error or "").startswith("cannot put the file in place")
    assert by["d"].status == "failed" and by["d"].error == "a folder 'd' is in the way of the file"
    assert by["ok.bin"].status == "ok" and (into / "a").read_bytes() == b"an older file"
    assert not (into / PART_DIR).exists()


# ------------------------------------------------------------------------------------------- CLI
@pytest.mark.slow
def test_cli_deadline_options_summary_and_exit_code(pdr: Hostile, tmp_path: Path) -> None:
    pdr.add(comp("drip.bin", BODY), BODY, "drip")
    pdr.add(comp("nosum.bin", BIG, algo=None), BIG)
    pdr.add(comp("ok.bin", BIG), BIG)
    args = [sys.executable, "-m", "voe.cli", "fetch", REC, "--into", str(tmp_path / "c"), "--base-url", pdr.url,
            "--timeout", "0.5", "--file-deadline", "0.6", "--deadline", "20", "--retries", "0"]
    started = time.monotonic()
    proc = subprocess.run([*args, "--json"], capture_output=True, text=True, timeout=60)
    assert time.monotonic() - started < 15
    assert proc.returncode == 1, proc.stderr
    out = json.loads(proc.stdout)
    assert out["failed"] == 1 and out["unverified"] == 1
    assert {f["filepath"]: f["status"] for f in out["files"]} == {"drip.bin": "failed", "nosum.bin": "unverified",
                                                                   "ok.bin": "ok"}
    pdr.modes["drip.bin"] = []
    proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "3 of 3 files in place (1 unverified)" in proc.stdout
    assert "unverified: nosum.bin: no checksum declared" in proc.stderr


# ------------------------------------------------------------------------------------ hostile records (issue 30)
@pytest.mark.parametrize("body,why", [
    (b'{"@id": "x", "components": [{"size": ' + b"9" * 6000 + b"}]}", "not a JSON record voe can read"),
    (b'{"@id": "x", "components": ' + b"[" * 200_000 + b"]" * 200_000 + b"}", "deeper than 512 levels"),
    (b'{"@id": "x", "components": ' + b"[" * 600 + b"]" * 600 + b"}", "deeper than 512 levels"),
])
def test_a_hostile_record_answer_is_an_input_error(pdr: Hostile, tmp_path: Path, body: bytes, why: str) -> None:
    pdr.record_body = body
    with pytest.raises(InputError, match=why) as caught:
        run(pdr, tmp_path / "r")
    assert caught.value.exit_code == 2 and not (tmp_path / "r" / "nerdm.json").exists()


def test_a_lone_surrogate_in_a_filepath_fails_that_file_alone(pdr: Hostile, tmp_path: Path) -> None:
    pdr.add(comp("fine.bin", BODY), BODY)
    bad = comp("bad-\udc80.bin", BODY)
    pdr.components.append(bad)  # json.dumps writes the escape: the record holds a lone surrogate
    report = run(pdr, tmp_path / "r")
    by = by_path(report)
    assert by["fine.bin"].status == "ok"
    assert by["bad-\udc80.bin"].status == "failed" and "lone surrogate" in (by["bad-\udc80.bin"].error or "")


def test_retry_after_is_honoured_within_the_deadline(pdr: Hostile, tmp_path: Path) -> None:
    pdr.add(comp("busy.bin", BODY), BODY, "busy:1")
    pdr.add(comp("away.bin", BIG), BIG, "busy:3600", "busy:3600", "busy:3600")
    started = time.monotonic()
    report = run(pdr, tmp_path / "r", file_deadline=2.0)
    by = by_path(report)
    assert by["busy.bin"].status == "ok" and by["busy.bin"].attempts == 2
    asked = [t for p, t in pdr.times if p.endswith("/busy.bin")]
    assert asked[1] - asked[0] >= 0.95  # backoff is 0 here: the wait is the server's Retry-After
    # an hour asked for: the file's deadline (2 s) ends the wait, not the server
    assert by["away.bin"].status == "failed" and "file deadline (2 s) passed" in (by["away.bin"].error or "")
    assert by["away.bin"].attempts == 2
    assert time.monotonic() - started < 20
