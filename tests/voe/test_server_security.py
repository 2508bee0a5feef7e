"""The local server is closed to strangers (issue 30): the attack of a web page open in the user's browser, played
against the suite's own server (started by `voe db up`) and against a fresh one.

A page can send HTTP requests to 127.0.0.1 with its own Origin and Host, and open a WebSocket to the Bolt port;
it cannot know the instance's password. So: the HTTP Cypher endpoint is not served at all, what HTTP does answer
names only the Browser's own origin, Bolt without the password is refused, and `LOAD CSV` from a listener on the
machine is never fetched by an unauthenticated caller."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from neo4j import GraphDatabase
from neo4j.exceptions import AuthError, ClientError

from tests.ports import browser_http, free_ports
from voe.config import Neo4jSettings, local_password
from voe.neo4j_server import LocalNeo4j
from voe.settings import settings

EVIL = "http://evil.example"


class _Listener:
    """A local HTTP listener that counts what reaches it (the target a LOAD CSV would be aimed at)."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        hits = self.hits

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                hits.append(self.path)
                body = b"a,b\n1,2\n"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/rows.csv"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> _Listener:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _attack(bolt_uri: str, http: str | None = None) -> None:
    http = http or browser_http(bolt_uri)
    # 1. the HTTP Cypher endpoint a page would POST to with fetch(): not served
    request = urllib.request.Request(f"{http}/db/neo4j/tx/commit", method="POST", data=json.dumps(
        {"statements": [{"statement": "MATCH (n) DETACH DELETE n"}]}).encode(),
        headers={"Origin": EVIL, "Host": "evil.example", "Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code in (401, 403, 404)
    # 2. what HTTP answers names the Browser's own origin, never the page's or every origin
    with urllib.request.urlopen(urllib.request.Request(f"{http}/", headers={"Origin": EVIL}), timeout=10) as resp:
        allowed = resp.headers.get("Access-Control-Allow-Origin")
    assert allowed == http.replace("localhost", "127.0.0.1")
    # 3. Bolt (a page's WebSocket speaks it) without the password, aiming LOAD CSV at a local listener
    with _Listener() as listener:
        for auth in (None, ("neo4j", "neo4j"), ("neo4j", "guess")):
            with GraphDatabase.driver(bolt_uri, auth=auth) as driver:
                with pytest.raises((AuthError, ClientError)):
                    with driver.session() as session:
                        session.run(f"LOAD CSV FROM '{listener.url}' AS row RETURN row").consume()
        assert listener.hits == []


def test_the_suites_server_refuses_a_stranger(neo4j_settings: Neo4jSettings) -> None:
    host = urlparse(neo4j_settings.uri).hostname
    if host not in ("127.0.0.1", "localhost") or not neo4j_settings.password:
        pytest.skip("NEO4J_URI names a server voe did not start")  # an outside server's own business
    _attack(neo4j_settings.uri)
    # the owner gets in without typing anything: the password is found from the URI alone
    assert local_password(neo4j_settings.uri, settings().cache_dir) == neo4j_settings.password


def test_a_fresh_voe_db_up_is_closed_and_its_password_is_the_owners_alone(neo4j_settings: object, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    bolt, http = free_ports()
    server = LocalNeo4j("fresh-security", bolt_port=bolt, http_port=http, heap="512m", pagecache="64m")
    argvs: list[list[str]] = []  # every command voe runs while it sets up and starts the server
    for name in ("run", "Popen"):
        real = getattr(subprocess, name)

        def spy(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
            argvs.append([str(a) for a in (args[0] if args else kwargs["args"])])
            return _real(*args, **kwargs)

        monkeypatch.setattr(subprocess, name, spy)
    server.down()
    for leftover in (server.home / "data", server.password_file):  # a first start, as on a new machine
        if leftover.is_dir():
            import shutil

            shutil.rmtree(leftover)
        elif leftover.exists():
            leftover.unlink()
    try:
        status = server.up(timeout=180)
        assert status.running
        mode = stat.S_IMODE(server.password_file.stat().st_mode)
        assert mode == 0o600 and len(server.password()) >= 24 and server.password()[0].isalpha()
        # neo4j-admin got it from an argfile of the owner's, not on a command line any local user can read
        assert any(any(a.startswith("@") for a in argv) for argv in argvs), argvs
        assert not any(server.password() in a for argv in argvs for a in argv)
        assert not list(server.home.glob("*.args"))
        # the store, the logs and the folders above them are the owner's alone, what Neo4j wrote included
        written = [p for p in server.home.rglob("*") if not p.is_symlink()]
        assert any(p.is_file() for p in (server.home / "data").rglob("*")) and any((server.home / "logs").iterdir())
        loose = [p for p in [server.home, server.home.parent, *written] if stat.S_IMODE(p.stat().st_mode) & 0o077]
        assert not loose, [(str(p), oct(p.stat().st_mode)) for p in loose[:5]]
        _attack(status.bolt_uri, f"http://127.0.0.1:{http}")
        conf = (server.home / "conf" / "neo4j.conf").read_text()
        assert "dbms.security.auth_enabled=true" in conf and "server.http_enabled_modules=BROWSER" in conf
        assert "dbms.security.allow_csv_import_from_file_urls=false" in conf
        # only loopback listens
        for port in (bolt, http):
            assert f"127.0.0.1:{port}" in conf and f"0.0.0.0:{port}" not in conf
        with socket.create_connection(("127.0.0.1", bolt), timeout=5):
            pass
    finally:
        server.down()


def test_the_password_is_the_running_instances_when_two_have_used_the_port(tmp_path: Path) -> None:
    """Two local instances configured on one Bolt port (one at a time): the password of the one whose process is
    alive is the one voe's commands use, whatever the instances' names sort as."""
    port = 49999
    for name, pid, password in (("a-stopped", 2 ** 22 + 12345, "old"), ("b-running", os.getpid(), "new")):
        home = tmp_path / "instances" / name
        (home / "conf").mkdir(parents=True)
        (home / "conf" / "neo4j.conf").write_text(f"server.bolt.listen_address=127.0.0.1:{port}\n")
        (home / "password").write_text(password + "\n")
        (home / "neo4j.pid").write_text(f"{pid}\n")
    assert local_password(f"bolt://127.0.0.1:{port}", tmp_path) == "new"
    (tmp_path / "instances" / "b-running" / "neo4j.pid").write_text(f"{2 ** 22 + 12346}\n")
    assert local_password(f"bolt://127.0.0.1:{port}", tmp_path) == "old"  # none running: the first by name
    assert local_password("bolt://127.0.0.1:1", tmp_path) is None
