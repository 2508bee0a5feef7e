"""Schema versions of the files voe writes, and the one check every reader makes (dbt-core style: a versioned
artifact, refused with a clear message when this voe does not read its version).

  package (manifest.json `package_version`)        tasks.jsonl, evidence.jsonl, answers.jsonl, manifest.json
  run     (run.json `schema_version`)              run.json, steps.jsonl, trajectories.jsonl
  scores  (summary.json `schema_version`)          summary.json, scores.jsonl

The JSON Schema of each file is in the package's schema/ folder (written by `voe compile`).
"""

from __future__ import annotations

from typing import Any

from voe.errors import InputError

PACKAGE_VERSION = 2
RUN_SCHEMA_VERSION = 1
SCORES_SCHEMA_VERSION = 1

_MAKE = {"package": "voe compile", "run": "voe run", "scores": "voe score"}


def check(kind: str, found: Any, expected: int, path: str) -> None:
    if found == expected:
        return
    if found is None:
        why = "has no schema version (written by a voe older than versioned artifacts)"
    elif isinstance(found, int) and found > expected:
        why = f"is schema version {found}, newer than this voe reads ({expected}); upgrade voe"
    else:
        why = f"is schema version {found!r}; this voe reads {expected}"
    raise InputError(f"this {kind} file {why}; write it again with `{_MAKE[kind]}`", path=path)
