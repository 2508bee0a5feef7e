"""The `voe` command line, on top of every stage: a thin layer of click commands over the library (ingest,
compiler, replay, verifiers, export, and voe's server and graph). Each module registers its commands on the group
of `cli.app`; nothing heavy is imported until a command runs.

Exit codes (DESIGN §8): 0 ok, 1 the work found a problem, 2 bad usage or bad input.
"""

from voe.cli import archive, browse, db, evaluate, package  # noqa: F401 - each registers its commands
from voe.cli.app import cli, main

__all__ = ["cli", "main"]
