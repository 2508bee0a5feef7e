"""Connection settings, read from the environment (NEO4J_URI, NEO4J_USER, NEO4J_PASSWORD, NEO4J_DATABASE)."""

from __future__ import annotations

import os

from pydantic import BaseModel

DEFAULT_URI = "bolt://127.0.0.1:7687"


class Neo4jSettings(BaseModel):
    uri: str = DEFAULT_URI
    user: str = "neo4j"
    password: str | None = None
    database: str = "neo4j"

    @classmethod
    def from_env(cls) -> Neo4jSettings:
        return cls(
            uri=os.environ.get("NEO4J_URI") or DEFAULT_URI,
            user=os.environ.get("NEO4J_USER") or "neo4j",
            password=os.environ.get("NEO4J_PASSWORD") or None,
            database=os.environ.get("NEO4J_DATABASE") or "neo4j",
        )

    @property
    def auth(self) -> tuple[str, str] | None:
        # The local server runs with auth disabled; a password means the user points at a secured one.
        return (self.user, self.password) if self.password else None
