"""A local Neo4j Community server assembled from Maven Central jars (no Docker engine needed).

`tools/neo4j/pom.xml` names neo4j-server, neo4j and neo4j-browser; the first `up` copies their
runtime dependencies into `<cache>/neo4j-<version>/lib` (into a temporary folder first, renamed when
complete, so an interrupted resolve never looks finished). Each instance has its own home
(`<cache>/instances/<name>`: conf/, data/, logs/, neo4j.pid) so the test suite's server never touches
a user's data.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from voe.errors import ServerError
from voe.resources import data_path
from voe.settings import settings

NEO4J_VERSION = "5.26.30"
ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"
MIN_JAVA = 17
JVM_OPENS = [
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--enable-native-access=ALL-UNNAMED",
]


class ServerStatus(BaseModel):
    instance: str
    running: bool
    pid: int | None = None
    bolt_uri: str
    browser_url: str | None = None
    version: str | None = None
    home: str
    log: str


def _port_in_use(port: int) -> bool:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def cache_dir() -> Path:
    return settings().cache_dir


class LocalNeo4j:
    def __init__(
        self,
        instance: str = "default",
        bolt_port: int = 7687,
        http_port: int = 7474,
        heap: str = "2g",
        pagecache: str = "512m",
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.instance = instance
        self.bolt_port = bolt_port
        self.http_port = http_port
        self.heap = heap
        self.pagecache = pagecache
        self.home = cache_dir() / "instances" / instance
        self.lib = cache_dir() / f"neo4j-{NEO4J_VERSION}" / "lib"
        self.pid_file = self.home / "neo4j.pid"
        self.log_file = self.home / "logs" / "console.log"
        self._log = log or (lambda _msg: None)

    @property
    def bolt_uri(self) -> str:
        return f"bolt://127.0.0.1:{self.bolt_port}"

    @property
    def browser_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/browser/"

    # ------------------------------------------------------------------ tools
    @staticmethod
    def java() -> str:
        home = settings().java_home
        candidate = os.path.join(home, "bin", "java") if home else shutil.which("java")
        if not candidate or not os.path.exists(candidate):
            raise ServerError(
                f"Java {MIN_JAVA}+ is needed to run the local Neo4j {NEO4J_VERSION} and none was found "
                "(set JAVA_HOME or put `java` on PATH; Debian: apt-get install openjdk-17-jre-headless)."
            )
        out = subprocess.run([candidate, "-version"], capture_output=True, text=True).stderr
        match = re.search(r'version "(\d+)', out)
        if not match or int(match.group(1)) < MIN_JAVA:
            raise ServerError(f"{candidate} is not Java {MIN_JAVA}+ ({out.splitlines()[0] if out else '?'})")
        return candidate

    @staticmethod
    def maven() -> str:
        mvn = shutil.which("mvn")
        if not mvn:
            raise ServerError(
                "Maven (`mvn`) is needed once to fetch the Neo4j jars from Maven Central and was not found "
                "(Debian: apt-get install maven). Or point NEO4J_URI at a running Neo4j."
            )
        return mvn

    def resolve(self) -> Path:
        """Copy the server's jars into the cache once; later calls return at once."""
        if (self.lib / ".complete").exists():
            return self.lib
        self._log(f"resolving Neo4j {NEO4J_VERSION} jars from Maven Central (once, ~140 MB)...")
        tmp = self.lib.with_name(f"lib.partial-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        cmd = [
            self.maven(), "-B", "-q", "-f", str(data_path("neo4j/pom.xml")),
            "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies",
            f"-DoutputDirectory={tmp}", "-DincludeScope=runtime", f"-Dneo4j.version={NEO4J_VERSION}",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 or not any(tmp.glob("neo4j-server-*.jar")):
            shutil.rmtree(tmp, ignore_errors=True)
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
            raise ServerError(f"could not resolve the Neo4j jars with Maven:\n{tail}")
        (tmp / ".complete").write_text(NEO4J_VERSION)
        shutil.rmtree(self.lib, ignore_errors=True)
        tmp.rename(self.lib)
        return self.lib

    # ------------------------------------------------------------------ lifecycle
    def _write_conf(self) -> Path:
        conf = self.home / "conf"
        for sub in ("conf", "data", "logs", "plugins", "import"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        (conf / "neo4j.conf").write_text(
            "\n".join(
                [
                    "# written by `voe db up`; edit the flags of `voe db up` instead",
                    f"server.directories.data={self.home / 'data'}",
                    f"server.directories.logs={self.home / 'logs'}",
                    f"server.directories.plugins={self.home / 'plugins'}",
                    f"server.directories.import={self.home / 'import'}",
                    f"server.bolt.listen_address=127.0.0.1:{self.bolt_port}",
                    f"server.bolt.advertised_address=127.0.0.1:{self.bolt_port}",
                    f"server.http.listen_address=127.0.0.1:{self.http_port}",
                    f"server.http.advertised_address=127.0.0.1:{self.http_port}",
                    "server.https.enabled=false",
                    "dbms.security.auth_enabled=false",
                    f"server.memory.pagecache.size={self.pagecache}",
                    "dbms.usage_report.enabled=false",
                    # the Browser asks no usage-data question (5.26 has no server setting for its outgoing
                    # connections: browser.allow_outgoing_connections is refused by strict validation)
                    "client.allow_telemetry=false",
                    *self._browser_conf(),
                    "db.tx_log.rotation.retention_policy=1 files",
                    "",
                ]
            )
        )
        return conf

    def _browser_conf(self) -> list[str]:
        """Serve the Browser from a copy that holds voe's style and guide, and load both on connect."""
        from voe.browse import browser_bundle, post_connect_cmd

        bundle = browser_bundle(self.lib, self.home / "web")
        if bundle is None:
            return []
        return [f"internal.dbms.web_dir_path={bundle.parent}", f"browser.post_connect_cmd={post_connect_cmd(self.http_port)}"]

    def pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass  # someone else's process: the command line below decides
        # A pid file can outlive its server and the number be reused: only a Neo4j of this instance counts,
        # so `down` never signals an unrelated process.
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            return pid  # no /proc (not Linux): trust the pid file
        if ENTRY_POINT not in args or f"--home-dir={self.home}" not in args:
            return None
        return pid

    def _bolt_version(self, timeout: float = 2.0) -> str | None:
        from neo4j import GraphDatabase
        from neo4j.exceptions import Neo4jError, ServiceUnavailable

        try:
            with GraphDatabase.driver(self.bolt_uri, auth=None, connection_timeout=timeout) as driver:
                # A plain session run: execute_query would retry for 30 s on a closed port.
                with driver.session() as session:
                    record = session.run("CALL dbms.components() YIELD versions RETURN versions[0] AS v").single()
                    return str(record["v"]) if record else None
        except (ServiceUnavailable, Neo4jError, OSError):
            return None

    def status(self) -> ServerStatus:
        pid = self.pid()
        version = self._bolt_version() if pid else None
        return ServerStatus(
            instance=self.instance, running=bool(pid and version), pid=pid, bolt_uri=self.bolt_uri,
            browser_url=self.browser_url if pid and version else None, version=version,
            home=str(self.home), log=str(self.log_file),
        )

    def up(self, timeout: float = 180.0) -> ServerStatus:
        if self.pid() is not None:
            status = self.status()
            if status.running:
                return status
        # a port someone else holds: the new server would die on it while the other one answered our wait
        # (seen with an earlier server of this instance whose pid file was lost)
        for port in (self.bolt_port, self.http_port):
            if _port_in_use(port):
                raise ServerError(f"127.0.0.1:{port} is in use by a process this instance ({self.instance}) did not "
                                  "start; stop it, or choose other ports (--bolt-port, --http-port)")
        java = self.java()
        lib = self.resolve()
        conf = self._write_conf()
        cmd = [
            java, f"-Xms{self.heap}", f"-Xmx{self.heap}", "-XX:+UseG1GC", *JVM_OPENS,
            "-cp", f"{lib}/*", ENTRY_POINT,
            f"--home-dir={self.home}", f"--config-dir={conf}", "--console-mode",
        ]
        self._log(f"starting Neo4j {NEO4J_VERSION} ({self.instance}) on {self.bolt_uri} ...")
        with open(self.log_file, "ab") as log:
            proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                cwd=self.home,
            )
        self.pid_file.write_text(str(proc.pid))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self.pid_file.unlink(missing_ok=True)
                raise ServerError(
                    f"Neo4j exited with code {proc.returncode} while starting; last lines of {self.log_file}:\n"
                    + self._log_tail()
                )
            if self._bolt_version(timeout=1.0):
                return self.status()
            time.sleep(0.5)
        self.down()
        raise ServerError(f"Neo4j did not answer on {self.bolt_uri} within {timeout:.0f}s:\n{self._log_tail()}")

    def down(self, timeout: float = 60.0) -> bool:
        """Stop cleanly (SIGTERM lets Neo4j checkpoint); SIGKILL only after the timeout. True if it ran."""
        pid = self.pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                waited, _ = os.waitpid(pid, os.WNOHANG)
                if waited == pid:
                    break
            except ChildProcessError:
                pass
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.3)
        else:
            os.kill(pid, signal.SIGKILL)
        self.pid_file.unlink(missing_ok=True)
        return True

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"
