"""The local Neo4j: a full up/status/down cycle with Browser, a tampered jar refused, stale pid files and ports."""

from __future__ import annotations

import os
import shutil
import urllib.request
from pathlib import Path

import pytest
from neo4j import GraphDatabase

from tests.conftest import _unavailable
from tests.ports import free_ports
from voe.errors import ServerError
from voe.neo4j_server import LocalNeo4j


def test_a_tampered_jar_in_the_cache_stops_voe_db_up(neo4j_settings: object, tmp_path: Path) -> None:
    """The suite's own jars, linked into a new cache, one of them changed by a byte: nothing starts."""
    import subprocess
    import sys

    real = LocalNeo4j().lib
    if not (real / ".complete").exists():  # NEO4J_URI named an outside server: no local jars to tamper with
        _unavailable(f"no local Neo4j jars in {real}")
    lib = tmp_path / "cache" / real.parent.name / "lib"
    lib.mkdir(parents=True)
    for jar in real.iterdir():
        (lib / jar.name).symlink_to(jar)
    victim = lib / f"neo4j-kernel-{real.parent.name.removeprefix('neo4j-')}.jar"
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.unlink()
    victim.write_bytes(bytes(data))
    bolt, http = free_ports()
    env = {**os.environ, "VOE_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-m", "voe.cli", "db", "up", "--instance", "tampered",
                           "--bolt-port", str(bolt), "--http-port", str(http)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert f"{victim.name} (org.neo4j:neo4j-kernel:" in proc.stderr and "does not match its sha256" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "cache" / "instances" / "tampered" / "neo4j.pid").exists()


def test_up_status_browser_down(neo4j_settings: object) -> None:
    # A second, throw-away instance on its own ports: the suite's database is not touched.
    bolt, http = free_ports()
    server = LocalNeo4j("lifecycle", bolt_port=bolt, http_port=http, heap="512m", pagecache="64m")
    server.down()
    # a first start whose stored password begins with `-`: neo4j-admin once took such a word for an option and
    # `voe db up` failed (CI, stop 38); voe's own words start with a letter, older ones must still work
    shutil.rmtree(server.home / "data", ignore_errors=True)
    server.password_file.unlink(missing_ok=True)
    server.home.mkdir(parents=True, exist_ok=True)
    server.password_file.write_text("-" + "x" * 31 + "\n")
    try:
        status = server.up(timeout=180)
        assert status.running and status.version and status.version.startswith("5.26")
        with GraphDatabase.driver(server.bolt_uri, auth=server.auth) as driver:
            driver.verify_connectivity()
        assert status.browser_url == f"http://127.0.0.1:{http}/browser/"
        with urllib.request.urlopen(status.browser_url, timeout=10) as resp:
            assert resp.status == 200
            assert b"Neo4j Browser" in resp.read()
        again = server.up()  # idempotent: the running server is reused
        assert again.pid == status.pid
        conf = (Path(status.home) / "conf" / "neo4j.conf").read_text()
        assert f"server.bolt.listen_address=127.0.0.1:{bolt}" in conf
    finally:
        assert server.down()
    assert not server.status().running
    assert not server.pid_file.exists()
    assert os.path.exists(server.log_file)


def test_a_stale_pid_file_never_names_an_unrelated_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOE_CACHE_DIR", str(tmp_path))
    server = LocalNeo4j("stale", bolt_port=9, http_port=9)
    server.pid_file.parent.mkdir(parents=True)
    server.pid_file.write_text(str(os.getpid()))  # alive, but this pytest process is not Neo4j
    assert server.pid() is None
    assert server.down() is False  # and nothing was signalled: we are still here


def test_up_refuses_a_port_another_process_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An earlier server whose pid file was lost must not be mistaken for the one just started."""
    import socket

    monkeypatch.setenv("VOE_CACHE_DIR", str(tmp_path / "cache"))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(ServerError, match=f"127.0.0.1:{port} is in use by a process this instance"):
            LocalNeo4j("orphaned", port, port + 1).up(timeout=5)
