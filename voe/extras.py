"""The optional extras of voe-evidence and the check a command makes before it starts: a command that needs an
extra the install lacks says which and how to get it (exit 2, nothing written), never a ModuleNotFoundError.

The check looks the modules up without importing them (importlib.util.find_spec), so it costs nothing when the
extra is there; a module that is present but fails to import still surfaces at its import as the library's error.
"""

from __future__ import annotations

import importlib.util

from voe.errors import UsageError

# extra -> the top-level modules it brings (pyproject.toml [project.optional-dependencies])
EXTRAS: dict[str, tuple[str, ...]] = {
    "mcp": ("mcp",),
    "inspect": ("inspect_ai",),
    "validate": ("rocrate_validator", "mlcroissant"),
    "dataframes": ("pandas",),
    "report": ("matplotlib",),
}


class MissingExtra(UsageError):
    """A command needs an optional extra that is not installed."""

    def __init__(self, what: str, extra: str, missing: list[str]) -> None:
        self.extra = extra
        self.missing = missing
        super().__init__(f"{what} needs the {extra} extra ({', '.join(missing)} not installed): "
                         f"pip install 'voe-evidence[{extra}]'")


def missing(extra: str) -> list[str]:
    """The modules of `extra` this install lacks."""
    out = []
    for module in EXTRAS[extra]:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a broken parent package or a half-removed install
            found = False
        if not found:
            out.append(module)
    return out


def require(extra: str, what: str) -> None:
    """Raise MissingExtra naming `what` (the command) unless every module of `extra` is installed."""
    gone = missing(extra)
    if gone:
        raise MissingExtra(what, extra, gone)
