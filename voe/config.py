"""Connection settings, from the environment (NEO4J_URI, NEO4J_USER, NEO4J_PASSWORD, NEO4J_DATABASE; voe/settings.py)."""

from __future__ import annotations

from pydantic import BaseModel

from voe.settings import DEFAULT_NEO4J_URI as DEFAULT_URI
from voe.settings import settings


class Neo4jSettings(BaseModel):
    uri: str = DEFAULT_URI
    user: str = "neo4j"
    password: str | None = None
    database: str = "neo4j"

    @classmethod
    def from_env(cls) -> Neo4jSettings:
        env = settings()
        password = env.neo4j_password.get_secret_value() if env.neo4j_password else None
        return cls(uri=env.neo4j_uri, user=env.neo4j_user, password=password, database=env.neo4j_database)

    @property
    def auth(self) -> tuple[str, str] | None:
        # The local server runs with auth disabled; a password means the user points at a secured one.
        return (self.user, self.password) if self.password else None
