"""`voe fetch` against a local PDR stand-in on 127.0.0.1 that serves the real shared record and files and
injects faults: timeouts, 5xx, truncated bodies, wrong bytes, a 404."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from tests.ingest.helpers import defects_by_kind
from voe.graph import Graph
from voe.ingest import ingest_paths
from voe.ingest.fetch import FetchError, fetch

RECORD = "mds2-2525"
CSV_A, CSV_B, CSV_C = "Al_Spot_AA_ASR_Results.csv", "Al_Spot_TDW_Results.csv", "Al_Scan_AA_MWD_ASR_Results.csv"
HELD = [CSV_A, CSV_B, CSV_C, "*.sha256"]  # what the shared folder holds of the record


class PDR:
    """Serves /od/id/<id>?format=nerdm and /od/ds/<id>/<filepath> from a shared record folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.faults: dict[str, list[str]] = {}
        self.requests: list[tuple[str, str | None]] = []
        pdr = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                url = urlparse(self.path)
                self.server_version = "pdr-test"
                pdr.requests.append((url.path, self.headers.get("Range")))
                if url.path == f"/od/id/{RECORD}":
                    return self._send((pdr.folder / "nerdm.json").read_bytes())
                prefix = f"/od/ds/{RECORD}/"
                if not url.path.startswith(prefix):
                    return self._error(404)
                fp = unquote(url.path[len(prefix):])
                fault = pdr.faults.get(fp, []).pop(0) if pdr.faults.get(fp) else None
                path = pdr.folder / fp
                if fault == "404" or not path.is_file():
                    return self._error(404)
                if fault == "500":
                    return self._error(503)
                if fault == "timeout":
                    time.sleep(1.5)
                    return self._error(503)
                body = path.read_bytes()
                if fault == "corrupt":
                    body = body[:-1] + bytes([body[-1] ^ 1])
                start = 0
                rng = self.headers.get("Range")
                if rng and rng.startswith("bytes="):
                    start = int(rng[6:].split("-")[0])
                status = 206 if start else 200
                chunk = body[start:]
                self.send_response(status)
                self.send_header("Content-Length", str(len(chunk)))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                self.end_headers()
                if fault == "truncate":
                    self.wfile.write(chunk[: len(chunk) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(chunk)

            def _send(self, body: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _error(self, code: int) -> None:
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def pdr(archives: Path) -> Iterator[PDR]:
    server = PDR(archives / RECORD)
    thread = threading.Thread(target=server.server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()


def test_complete_record_downloads_verifies_and_ingests(pdr: PDR, tmp_path: Path, graph: Graph,
                                                          archives: Path) -> None:
    into = tmp_path / RECORD
    report = fetch(RECORD, into, include=HELD, base_url=pdr.url, backoff=0)
    assert report.failed == [] and {f.status for f in report.files} == {"ok"}
    held = sorted(p.name for p in (archives / RECORD).iterdir())
    assert sorted(str(p.relative_to(into)) for p in into.rglob("*")) == held
    for name in held:
        assert (into / name).read_bytes() == (archives / RECORD / name).read_bytes()
    ingested = ingest_paths([into], graph)
    assert ingested.errors == [] and "checksum_mismatch" not in defects_by_kind(graph)
    # a second run downloads nothing
    again = fetch(RECORD, into, include=HELD, base_url=pdr.url, backoff=0)
    assert {f.status for f in again.files} == {"exists"} and again.bytes == 0


def test_faults_are_retried_resumed_or_reported(pdr: PDR, tmp_path: Path) -> None:
    pdr.faults = {CSV_A: ["500", "500"], CSV_B: ["truncate"], CSV_C: ["timeout"],
                  CSV_A + ".sha256": ["corrupt"] * 10, CSV_B + ".sha256": ["404"]}
    into = tmp_path / "r"
    report = fetch(RECORD, into, include=HELD, base_url=pdr.url, retries=3, timeout=0.5,
                   backoff=0)
    by = {f.filepath: f for f in report.files}
    assert by[CSV_A].status == "ok" and by[CSV_A].attempts == 3
    assert by[CSV_B].status == "ok" and by[CSV_B].resumed  # the second request asked for the rest only
    assert any(path.endswith(CSV_B) and rng and rng.startswith("bytes=") for path, rng in pdr.requests)
    assert by[CSV_C].status == "ok" and by[CSV_C].attempts == 2
    assert by[CSV_A + ".sha256"].status == "failed" and "sha256" in (by[CSV_A + ".sha256"].error or "")
    assert by[CSV_B + ".sha256"].status == "failed" and by[CSV_B + ".sha256"].attempts == 1
    # nothing corrupt or partial under a final name
    assert not (into / (CSV_A + ".sha256")).exists() and not (into / (CSV_B + ".sha256")).exists()
    assert not list(into.rglob("*.part"))
    assert {f.filepath for f in report.failed} == {CSV_A + ".sha256", CSV_B + ".sha256"}


def test_max_bytes_skips_what_would_overflow(pdr: PDR, tmp_path: Path) -> None:
    report = fetch(RECORD, tmp_path / "r", include=HELD[:3], max_bytes=1000, base_url=pdr.url, backoff=0)
    statuses = {f.filepath: f.status for f in report.files}
    assert statuses[CSV_B] == "skipped"  # 2169 B
    assert report.bytes <= 1000


@pytest.mark.slow
def test_unknown_record_and_cli_exit_codes(pdr: PDR, tmp_path: Path) -> None:
    with pytest.raises(FetchError, match="404"):
        fetch("mds2-0000", tmp_path / "x", base_url=pdr.url, backoff=0)
    pdr.faults = {CSV_A: ["404"]}
    proc = subprocess.run([sys.executable, "-m", "voe.cli", "fetch", RECORD, "--into", str(tmp_path / "c"),
                           "--include", CSV_A, "--base-url", pdr.url, "--json"], capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    out = json.loads(proc.stdout)
    assert out["failed"] == 1 and out["files"][0]["error"].startswith("HTTP 404")
    pdr.faults = {}
    proc = subprocess.run([sys.executable, "-m", "voe.cli", "fetch", RECORD, "--into", str(tmp_path / "d"),
                           "--include", CSV_A, "--base-url", pdr.url], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    size = (tmp_path / "d" / CSV_A).stat().st_size
    # one line per file, then the byte bar's line (not a terminal): what arrived against what was declared
    assert f"{CSV_A}: ok ({size} B" in proc.stderr
    assert re.search(r"^fetch: [\d.]+ (B|KiB|MiB)/[\d.]+ (B|KiB|MiB) in [\d.]+ s$", proc.stderr, re.M), proc.stderr


def test_a_filepath_that_escapes_into_is_refused(pdr: PDR, tmp_path: Path, archives: Path) -> None:
    doc = json.loads((archives / RECORD / "nerdm.json").read_text(encoding="utf-8-sig"))
    evil = dict(next(c for c in doc["components"] if c.get("filepath") == CSV_A), filepath="../escaped.csv")
    doc["components"] = [evil]
    served = tmp_path / "served"
    served.mkdir()
    (served / "nerdm.json").write_text(json.dumps(doc))
    pdr.folder = served
    report = fetch(RECORD, tmp_path / "into", base_url=pdr.url, backoff=0)
    assert [(f.status, f.error) for f in report.files] == [
        ("failed", "filepath escapes --into or names the record file; refused")]
    assert not (tmp_path / "escaped.csv").exists()
