"""tools/neo4j_lock.py: the documented command that regenerates the jar lock still resolves the locked set.

`--check` resolves the runtime closure of the lock's Neo4j version with jgo (POMs from the same repository
`voe db up` downloads from) and compares it with the lock, jar for jar; no jar is downloaded.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from voe.neo4j_jars import load_lock

REPO = Path(__file__).resolve().parent.parent.parent


@pytest.mark.slow
def test_check_resolves_exactly_the_locked_jars() -> None:
    proc = subprocess.run([sys.executable, "tools/neo4j_lock.py", "--check"], cwd=REPO, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "only in the lock" not in proc.stdout and "only resolved" not in proc.stdout
    n = len(load_lock().jars)
    assert proc.stdout.strip().endswith(f"{n} jars resolved, {n} locked")


def test_the_lock_tool_refuses_another_line_than_5_26() -> None:
    proc = subprocess.run([sys.executable, "tools/neo4j_lock.py", "--neo4j", "2025.10.1", "--check"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "voe runs Neo4j 5.26 LTS" in proc.stderr
