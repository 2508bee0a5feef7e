"""Every environment variable voe reads, in one place (pydantic-settings). README's configuration table is
tested against this class (tests/voe/test_settings.py): a variable is added here and there, or nowhere.

Read through `settings()`, which parses the environment on each call (cheap; tests change the environment).
An empty variable counts as unset. The parser budgets (`VOE_LIMIT_<NAME>`) are a family of their own, with
their defaults and meaning in ingest/limits.py; the test hook VOE_FAULT_AT is for the fault tests only.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_NEO4J_URI = "bolt://127.0.0.1:7687"
DEFAULT_PDR_BASE_URL = "https://data.nist.gov"


def _env(name: str) -> AliasChoices:
    return AliasChoices(name)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_ignore_empty=True, extra="ignore", case_sensitive=True,
                                      populate_by_name=False)

    neo4j_uri: str = Field(default=DEFAULT_NEO4J_URI, validation_alias=_env("NEO4J_URI"),
                           description="the Neo4j every command talks to")
    neo4j_user: str = Field(default="neo4j", validation_alias=_env("NEO4J_USER"), description="Neo4j user name")
    neo4j_password: SecretStr | None = Field(default=None, validation_alias=_env("NEO4J_PASSWORD"),
                                             description="Neo4j password (the local server runs without auth)")
    neo4j_database: str = Field(default="neo4j", validation_alias=_env("NEO4J_DATABASE"), description="database name")
    voe_cache_dir: Path | None = Field(default=None, validation_alias=_env("VOE_CACHE_DIR"),
                                       description="Neo4j jars, local instances and the LLM response cache")
    xdg_cache_home: Path | None = Field(default=None, validation_alias=_env("XDG_CACHE_HOME"),
                                        description="the cache root when VOE_CACHE_DIR is unset")
    voe_schema_dir: Path | None = Field(default=None, validation_alias=_env("VOE_SCHEMA_DIR"),
                                        description="NERDm JSON schemas for offline validation")
    voe_xsd_dir: Path | None = Field(default=None, validation_alias=_env("VOE_XSD_DIR"),
                                     description="AM Bench XSDs for XML validation")
    voe_pdr_base_url: str = Field(default=DEFAULT_PDR_BASE_URL, validation_alias=_env("VOE_PDR_BASE_URL"),
                                  description="where `voe fetch` downloads from")
    java_home: Path | None = Field(default=None, validation_alias=_env("JAVA_HOME"), description="the Java that runs Neo4j")
    openai_base_url: str | None = Field(default=None, validation_alias=_env("OPENAI_BASE_URL"),
                                        description="the endpoint of `--policy openai:MODEL`, the annotator and judge")
    openai_api_key: SecretStr | None = Field(default=None, validation_alias=_env("OPENAI_API_KEY"),
                                             description="its key (never written to a run folder, cache or log)")
    voe_prices: Path | None = Field(default=None, validation_alias=_env("VOE_PRICES"),
                                    description="price table for agent runs' cost (`--prices`)")
    source_date_epoch: str | None = Field(default=None, validation_alias=_env("SOURCE_DATE_EPOCH"),
                                          description="`voe export`'s datePublished (reproducible builds)")
    voe_fault_at: str | None = Field(default=None, validation_alias=_env("VOE_FAULT_AT"),
                                     description="test hook: kill an ingest at this step")

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
