"""Connection settings, from the environment (NEO4J_URI, NEO4J_USER, NEO4J_PASSWORD, NEO4J_DATABASE; voe/settings.py).

A local server of `voe db up` runs with a password of its own (voe/neo4j_server.py, `<instance>/password`): when
NEO4J_PASSWORD is not set and NEO4J_URI names 127.0.0.1 or localhost, the password of the instance that listens on
that Bolt port is used, so every voe command reaches the user's own server without a password typed or exported.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import BaseModel

from voe.settings import DEFAULT_NEO4J_URI as DEFAULT_URI
from voe.settings import settings


class Neo4jSettings(BaseModel):
    uri: str = DEFAULT_URI
    user: str = "neo4j"
    password: str | None = None
    database: str = "neo4j"

    @classmethod
    def from_env(cls) -> Neo4jSettings:
        env = settings()
        password = env.neo4j_password.get_secret_value() if env.neo4j_password else None
        if password is None:
            password = local_password(env.neo4j_uri, env.cache_dir)
        return cls(uri=env.neo4j_uri, user=env.neo4j_user, password=password, database=env.neo4j_database)

    @property
    def auth(self) -> tuple[str, str] | None:
        return (self.user, self.password) if self.password else None


LOOPBACK = {"127.0.0.1", "localhost", "::1"}


@dataclass(frozen=True)
class LocalInstance:
    """A local server of `voe db up` as its folder records it."""

    name: str
    bolt_port: int
    http_port: int
    password: str
    running: bool

    @property
    def up_command(self) -> str:
        return up_command(self.name, self.bolt_port, self.http_port)


def up_command(instance: str, bolt_port: int, http_port: int) -> str:
    """`voe db up` with the flags not at their defaults, for a hint the user can paste."""
    flags = [f"--instance {instance}" if instance != "default" else "",
             f"--bolt-port {bolt_port}" if bolt_port != 7687 else "",
             f"--http-port {http_port}" if http_port != 7474 else ""]
    return " ".join(["voe db up", *(f for f in flags if f)])


def local_instance(uri: str, cache_dir: Path) -> LocalInstance | None:
    """The local instance (under `cache_dir/instances/`) whose Bolt listens on `uri`'s port; one running on it
    first (two instances may have used one port, one at a time), else the first by name."""
    try:
        parts = urlsplit(uri)
        host, port = parts.hostname, parts.port or 7687
    except ValueError:
        return None
    if host not in LOOPBACK:
        return None
    wanted = f"server.bolt.listen_address=127.0.0.1:{port}"
    found: list[LocalInstance] = []
    for conf in sorted((cache_dir / "instances").glob("*/conf/neo4j.conf")):
        home = conf.parent.parent
        try:
            lines = conf.read_text().splitlines()
            if wanted not in lines:
                continue
            password = (home / "password").read_text().strip()
        except OSError:
            continue
        http = next((ln.rsplit(":", 1)[1] for ln in lines if ln.startswith("server.http.listen_address=")), "7474")
        if password:
            found.append(LocalInstance(home.name, port, int(http) if http.isdigit() else 7474, password,
                                       _running(home / "neo4j.pid")))
    return sorted(found, key=lambda f: not f.running)[0] if found else None


def local_password(uri: str, cache_dir: Path) -> str | None:
    """The password of the local instance whose Bolt listens on `uri`'s port."""
    found = local_instance(uri, cache_dir)
    return found.password if found is not None else None


def _running(pid_file: Path) -> bool:
    """Whether the pid file names a live process (two instances may have used one port, one at a time)."""
    try:
        os.kill(int(pid_file.read_text().strip()), 0)
    except (OSError, ValueError):
        return False
    return True


def remembered_ports(instance: str, cache_dir: Path) -> tuple[int, int] | None:
    """The Bolt and HTTP ports the instance was last set up with (its conf/neo4j.conf), or None for a new one."""
    try:
        lines = (cache_dir / "instances" / instance / "conf" / "neo4j.conf").read_text().splitlines()
    except OSError:
        return None
    ports = {}
    for key in ("bolt", "http"):
        value = next((ln.rsplit(":", 1)[1] for ln in lines if ln.startswith(f"server.{key}.listen_address=")), "")
        if not value.isdigit():
            return None
        ports[key] = int(value)
    return ports["bolt"], ports["http"]


@dataclass(frozen=True)
class Target:
    """The local instance a `voe db` command acts on, and why that one."""

    instance: str
    bolt_port: int
    http_port: int
    because: str


def db_target(instance: str | None, bolt_port: int | None, http_port: int | None, cache_dir: Path,
              uri: str | None) -> Target:
    """Which local instance a `voe db` command means. Flags given win; `--instance NAME` alone is NAME with the
    ports it remembers; with no `--instance`, NEO4J_URI (when set, on this machine) names the instance listening
    on its port (else the default instance on that port); else the default instance with its remembered ports,
    else 7687/7474. So status, password and the hints are of the server the other commands talk to."""
    given = instance is not None or bolt_port is not None or http_port is not None
    because = "the flags" if given else "the defaults"
    if instance is None and uri:
        try:
            parts = urlsplit(uri)
            host, port = parts.hostname, parts.port or 7687
        except ValueError:
            host, port = None, 7687
        if host in LOOPBACK:
            found = local_instance(uri, cache_dir)
            if found is not None:
                instance, because = found.name, f"NEO4J_URI={uri}"
                bolt_port = bolt_port if bolt_port is not None else found.bolt_port
                http_port = http_port if http_port is not None else found.http_port
            else:
                instance, because = "default", f"NEO4J_URI={uri} (no local instance on port {port} yet)"
                bolt_port = bolt_port if bolt_port is not None else port
    name = instance or "default"
    remembered = remembered_ports(name, cache_dir)
    if remembered is not None and because in ("the flags", "the defaults") and (bolt_port is None or http_port is None):
        because = f"instance {name}'s remembered ports"
    bolt = bolt_port if bolt_port is not None else (remembered[0] if remembered else 7687)
    http = http_port if http_port is not None else (remembered[1] if remembered else 7474)
    return Target(name, bolt, http, because)
