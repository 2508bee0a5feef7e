"""One settings object for every environment variable, and the configuration page's table says exactly which."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from voe.config import Neo4jSettings
from voe.errors import UsageError
from voe.settings import Settings, settings

CONFIGURATION = Path(__file__).resolve().parents[2] / "docs" / "reference" / "configuration.md"
SOURCE = Path(__file__).resolve().parents[2]


def _documented_variables() -> set[str]:
    text = CONFIGURATION.read_text()
    table = text[text.index("| variable | default | meaning |"):].split("\n\n", 1)[0]
    names: set[str] = set()
    for row in table.splitlines()[2:]:
        names |= set(re.findall(r"`([A-Z][A-Z0-9_<>]+)`", row.split("|")[1]))
    return names


def test_the_configuration_table_names_every_setting_and_nothing_else() -> None:
    assert _documented_variables() == set(Settings.variables()) | {"VOE_LIMIT_<NAME>"}


def test_no_module_reads_the_environment_but_the_settings() -> None:
    readers = []
    for package in ("voe", "ingest", "compiler", "replay", "verifiers", "export"):
        for path in (SOURCE / package).rglob("*.py"):
            text = path.read_text()
            if re.search(r"os\.environ(?!\s+if environ is None)|os\.getenv", text) and path.name != "settings.py":
                readers.append(str(path.relative_to(SOURCE)))
    assert readers == ["ingest/payloads/limits.py"]  # the VOE_LIMIT_<NAME> family, parsed where the budgets live


def test_settings_read_the_environment_now_and_treat_empty_as_unset(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    monkeypatch.setenv("NEO4J_URI", "")
    monkeypatch.delenv("VOE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert settings().neo4j_uri == "bolt://127.0.0.1:7687"
    assert settings().cache_dir == tmp_path / "voe"
    monkeypatch.setenv("VOE_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("NEO4J_URI", "bolt://example:1")
    monkeypatch.setenv("NEO4J_PASSWORD", "s3cret")
    assert settings().cache_dir == tmp_path / "mine"
    conn = Neo4jSettings.from_env()
    assert conn.uri == "bolt://example:1" and conn.auth == ("neo4j", "s3cret")
    assert "s3cret" not in repr(settings())  # secrets stay out of reprs and logs


def test_a_malformed_value_is_a_usage_error_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from voe.export.crate import published_date

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    with pytest.raises(UsageError, match="SOURCE_DATE_EPOCH='yesterday'"):
        published_date()
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    assert published_date() == "2026-01-01"
