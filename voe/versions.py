"""Schema versions of the files voe writes, and the one check every reader makes (dbt-core style: a versioned
artifact, refused with a clear message when this voe does not read its version).

  package (manifest.json `package_version`)        tasks.jsonl, evidence.jsonl, answers.jsonl, manifest.json
  run     (run.json `schema_version`)              run.json, steps.jsonl, observations.jsonl, trajectories.jsonl
  scores  (summary.json `schema_version`)          summary.json, scores.jsonl
  labels  (labels.json `schema_version`)           labels.json, states.jsonl; a run's step_labels.jsonl
  training (training.json `schema_version`)        sft/, preference/, value/ (<split>.jsonl each), README.md

A JSON Lines file carries no version of its own: its lines are read only together with the header file
beside them (manifest.json, run.json, summary.json), and that file's version is theirs. The JSON Schema of
each file is in the folder's schema/ (written by the command that writes the folder), with `$id`
`urn:voe:schema:<kind>:<version>:<name>` and the version as `x-voe-schema-version`, so a schema taken out of its
folder still says which version it describes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from voe.errors import InputError

PACKAGE_VERSION = 3  # 3: answers carry gold_facts; families rest on stated facts (issue 29)
RUN_SCHEMA_VERSION = 2  # 2: observations in their own file (steps.jsonl is what the verifier reads)
SCORES_SCHEMA_VERSION = 2  # 2: the headline interval is the clustered one (ci95), per-pass beside it
LABELS_SCHEMA_VERSION = 1  # DESIGN §10: value and sufficiency labels (verifiers/labels.py)
TRAINING_SCHEMA_VERSION = 2  # 2: identical rows merged (count, sources); warnings on empty splits

_MAKE = {"package": "voe compile", "run": "voe run", "scores": "voe score", "labels": "voe label",
         "training": "voe export-training"}
VERSION = {"package": PACKAGE_VERSION, "run": RUN_SCHEMA_VERSION, "scores": SCORES_SCHEMA_VERSION,
           "labels": LABELS_SCHEMA_VERSION, "training": TRAINING_SCHEMA_VERSION}


def write_schemas(folder: Path, kind: str, models: Iterable[tuple[str, type[BaseModel]]]) -> None:
    """schema/<name>.schema.json for each model, stamped with the kind's version."""
    (folder / "schema").mkdir(parents=True, exist_ok=True)
    for name, model in models:
        schema = {"$id": f"urn:voe:schema:{kind}:{VERSION[kind]}:{name}", "x-voe-schema-version": VERSION[kind],
                  **model.model_json_schema()}
        (folder / "schema" / f"{name}.schema.json").write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n")


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
