"""One root exception with a subclass per kind of failure the CLI maps to an exit code."""

from __future__ import annotations


class VoeError(Exception):
    """Root of every error voe raises on purpose. The CLI prints it without a traceback."""

    exit_code = 1


class InputError(VoeError):
    """Input voe cannot read: a missing path, malformed JSON, a file that is not a NERDm record."""

    exit_code = 2

    def __init__(self, message: str, *, path: str | None = None, pointer: str | None = None) -> None:
        self.path = path
        self.pointer = pointer
        where = path or ""
        if pointer is not None:
            where = f"{where}#{pointer}" if where else f"#{pointer}"
        super().__init__(f"{where}: {message}" if where else message)
        self.message = message


class UsageError(VoeError):
    """The command was called wrongly (bad option values, contradictory flags)."""

    exit_code = 2


class OntologyViolation(VoeError):
    """A write named a label, relationship type or endpoint pair that ontology/ does not allow."""


class GraphUnavailable(VoeError):
    """Neo4j cannot be reached at the configured URI."""


class GraphSettingsError(UsageError):
    """NEO4J_URI is not a Neo4j URI, or NEO4J_DATABASE names a database the server does not have."""


class GraphBusy(VoeError):
    """Another live ingest is writing the same record; this one leaves it alone (retry when it has finished)."""


class ServerError(VoeError):
    """The local Neo4j could not be resolved, started or stopped."""


class EmptyRun(VoeError):
    """A run (or a log to import as one) holds no trajectory: there is nothing to score."""
