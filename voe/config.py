"""Connection settings, from the environment (NEO4J_URI, NEO4J_USER, NEO4J_PASSWORD, NEO4J_DATABASE; voe/settings.py).

A local server of `voe db up` runs with a password of its own (voe/neo4j_server.py, `<instance>/password`): when
NEO4J_PASSWORD is not set and NEO4J_URI names 127.0.0.1 or localhost, the password of the instance that listens on
that Bolt port is used, so every voe command reaches the user's own server without a password typed or exported.
"""

from __future__ import annotations

import os
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


def local_password(uri: str, cache_dir: Path) -> str | None:
    """The password of the local instance (under `cache_dir/instances/`) whose Bolt listens on `uri`'s port."""
    try:
        parts = urlsplit(uri)
        host, port = parts.hostname, parts.port or 7687
    except ValueError:
        return None
    if host not in LOOPBACK:
        return None
    wanted = f"server.bolt.listen_address=127.0.0.1:{port}"
    found: list[tuple[bool, str]] = []  # (not running, password): an instance running on the port comes first
    for conf in sorted((cache_dir / "instances").glob("*/conf/neo4j.conf")):
        try:
            if wanted not in conf.read_text().splitlines():
                continue
            password = (conf.parent.parent / "password").read_text().strip()
        except OSError:
            continue
        if password:
            found.append((not _running(conf.parent.parent / "neo4j.pid"), password))
    return sorted(found, key=lambda f: f[0])[0][1] if found else None


def _running(pid_file: Path) -> bool:
    """Whether the pid file names a live process (two instances may have used one port, one at a time)."""
    try:
        os.kill(int(pid_file.read_text().strip()), 0)
    except (OSError, ValueError):
        return False
    return True
