"""Free TCP ports for the servers a test starts of its own: the machine is shared (another suite, a developer's
instance), so no test server takes a fixed port."""

from __future__ import annotations

import socket


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
