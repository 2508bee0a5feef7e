"""Free TCP ports for the servers a test starts of its own: the machine is shared (another suite, a developer's
instance), so no test server takes a fixed port."""

from __future__ import annotations

import os
import socket
from urllib.parse import urlparse


def free_ports(n: int = 2) -> list[int]:
    """`n` distinct ports free on 127.0.0.1 at this moment (each bound at once, then released for the server)."""
    holders = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(n)]
    try:
        for s in holders:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in holders]
    finally:
        for s in holders:
            s.close()


def browser_http(bolt_uri: str) -> str:
    """The HTTP address (Neo4j Browser) of the server at `bolt_uri`: VOE_BROWSER_URL, else the HTTP port of the local
    instance of `voe db up` listening there, else voe's convention (HTTP = Bolt - 213, as 7474/7687)."""
    from voe.config import local_instance
    from voe.settings import settings

    if url := os.environ.get("VOE_BROWSER_URL"):
        return url.rstrip("/")
    parsed = urlparse(bolt_uri)
    found = local_instance(bolt_uri, settings().cache_dir)
    port = found.http_port if found is not None else (parsed.port or 7687) - 213
    return f"http://{parsed.hostname}:{port}"
