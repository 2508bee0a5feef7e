"""Offline validation of NERDm records against the NIST schemas (draft-04 + ejsonschema extensions).

NERDm's extension model: a document (or any object inside it) lists `_extensionSchemas`; a validator
checks each one it recognises and ignores the rest. We check the record against its core `_schema` and
every recognised `_extensionSchemas` URI, on the record and on each component, with all `$ref`s
resolved from the local schema folder (no network).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from jsonschema import Draft4Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

from voe.resources import data_path

SCHEMA_FILES = (
    "nerdm/nerdm-schema.json",
    "nerdm/nerdm-pub-schema.json",
    "nerdm/nerdm-rls-schema.json",
    "nerdm/nerdm-bib-schema.json",
    "nerdm/simple-taxonomy-schema.json",
    "ejsonschema/enhanced-json-schema.json",
)


def default_schema_dir() -> Path | None:
    """VOE_SCHEMA_DIR, else the shared archive set beside the checkout (../shared/archives/schemas)."""
    env = os.environ.get("VOE_SCHEMA_DIR")
    if env:
        return Path(env)
    candidate = data_path("cypher").resolve().parent.parent / "shared" / "archives" / "schemas"
    return candidate if candidate.is_dir() else None


@dataclass(frozen=True)
class Violation:
    pointer: str
    message: str
    schema: str


def _pointer(path: Iterator[Any] | Any) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


class NerdmSchemas:
    def __init__(self, schema_dir: Path) -> None:
        registry: Registry[Any] = Registry()
        self.known: set[str] = set()
        for rel in SCHEMA_FILES:
            path = schema_dir / rel
            if not path.is_file():
                continue
            doc = json.loads(path.read_text(encoding="utf-8"))
            uri = str(doc.get("id", "")).rstrip("#")
            if uri:
                registry = registry.with_resource(uri, Resource(doc, specification=DRAFT4))
                self.known.add(uri)
        if not self.known:
            raise FileNotFoundError(f"no NERDm schemas under {schema_dir}")
        self.schema_dir = schema_dir
        self._registry = registry
        self._validators: dict[str, Draft4Validator] = {}

    def _validator(self, uri: str) -> Draft4Validator | None:
        base = uri.split("#", 1)[0].rstrip("#")
        if base not in self.known:
            return None  # NERDm: an extension we do not recognise is ignored, not an error
        if uri not in self._validators:
            self._validators[uri] = Draft4Validator({"$ref": uri}, registry=self._registry)
        return self._validators[uri]

    def validate(self, record: dict[str, Any]) -> list[Violation]:
        found: dict[tuple[str, str], Violation] = {}

        def check(obj: Any, uri: str, prefix: str) -> None:
            validator = self._validator(uri)
            if validator is None:
                return
            for err in validator.iter_errors(obj):
                ptr = prefix + _pointer(err.absolute_path)
                found.setdefault((ptr, err.message), Violation(ptr, err.message[:500], uri))

        core = record.get("_schema")
        if isinstance(core, str):
            check(record, core, "")
        for uri in _uris(record):
            check(record, uri, "")
        components = record.get("components")
        if isinstance(components, list):
            for i, comp in enumerate(components):
                if isinstance(comp, dict):
                    for uri in _uris(comp):
                        check(comp, uri, f"/components/{i}")
        return sorted(found.values(), key=lambda v: (v.pointer, v.message))


def _uris(obj: dict[str, Any]) -> list[str]:
    value = obj.get("_extensionSchemas")
    return [u for u in value if isinstance(u, str)] if isinstance(value, list) else []


@lru_cache(maxsize=4)
def load(schema_dir: Path) -> NerdmSchemas:
    return NerdmSchemas(schema_dir)
