"""Offline validation of NERDm records against the NIST schemas (draft-04 + ejsonschema extensions).

NERDm's extension model: a document (or any object inside it) lists `_extensionSchemas`; a validator
checks each one it recognises and ignores the rest. We check the record against its core `_schema` and
every recognised `_extensionSchemas` URI, on the record and on each component, with all `$ref`s
resolved from the local schema folder (no network).

A schema that cannot be applied is a finding, never a crash: an `_extensionSchemas` URI of a schema we
have whose fragment names nothing in it (`...pub/v0.7#/definitions/NoSuchThing`) is a violation at that
URI's pointer, and any other failure inside the validator (a `$ref` that resolves nowhere, a schema the
validators refuse, recursion) is a violation at the object it was checking, naming what failed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import fastjsonschema
from jsonschema import Draft4Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

from voe.canonical import canonical
from voe.ingest.payloads.files import pointer_of, resolve_pointer
from voe.resources import data_path
from voe.settings import settings

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
    env = settings().voe_schema_dir
    if env is not None:
        return env
    candidate = data_path("cypher").resolve().parent.parent / "shared" / "archives" / "schemas"
    return candidate if candidate.is_dir() else None


@dataclass(frozen=True)
class Violation:
    pointer: str
    message: str
    schema: str


class NerdmSchemas:
    def __init__(self, schema_dir: Path) -> None:
        registry: Registry[Any] = Registry()
        self.known: set[str] = set()
        self._docs: dict[str, Any] = {}
        for rel in SCHEMA_FILES:
            path = schema_dir / rel
            if not path.is_file():
                continue
            doc = json.loads(path.read_text(encoding="utf-8"))
            uri = str(doc.get("id", "")).rstrip("#")
            if uri:
                self._docs[uri] = doc
                resource: Resource[Any] = DRAFT4.create_resource(doc)
                registry = registry.with_resource(uri, resource)
                self.known.add(uri)
        if not self.known:
            raise FileNotFoundError(f"no NERDm schemas under {schema_dir}")
        self.schema_dir = schema_dir
        self._registry = registry
        self._validators: dict[str, Draft4Validator] = {}
        self._fast: dict[str, Callable[[Any], Any]] = {}

    def _fast_check(self, uri: str) -> Callable[[Any], Any]:
        # fastjsonschema compiles the schema to Python (~30x faster than jsonschema here). It is the fast
        # path only: whatever it rejects is re-checked by jsonschema, whose verdict and messages count.
        if uri not in self._fast:
            self._fast[uri] = fastjsonschema.compile(
                {"$schema": "http://json-schema.org/draft-04/schema#", "$ref": uri},
                handlers={"https": self._local, "http": self._local}, use_formats=False,
            )
        return self._fast[uri]

    def _local(self, uri: str) -> Any:
        return self._docs[uri.split("#", 1)[0].rstrip("#")]

    def _validator_base(self, uri: str) -> str | None:
        base = uri.split("#", 1)[0].rstrip("#")
        return base if base in self.known else None  # NERDm: an extension we do not recognise is ignored

    def _validator(self, uri: str) -> Draft4Validator | None:
        if self._validator_base(uri) is None:
            return None
        if uri not in self._validators:
            self._validators[uri] = Draft4Validator({"$ref": uri}, registry=self._registry)
        return self._validators[uri]

    def unresolvable(self, uri: str) -> str | None:
        """Why a URI of a schema we have cannot be applied (its fragment names nothing in it), else None."""
        base, _, fragment = uri.partition("#")
        doc = self._docs.get(base.rstrip("#"))
        if doc is None or not fragment.strip("/"):
            return None
        try:  # each token percent-decoded on its own: a %2F inside one is not a separator
            resolve_pointer(doc, "/" + "/".join(unquote(raw) for raw in fragment.lstrip("/").split("/")))
        except KeyError:
            return f"names {fragment!r}, which the schema {base} does not define"
        return None

    def validate(self, record: dict[str, Any]) -> list[Violation]:
        check = self.checker()
        components = record.get("components")
        check.shell({**record, "components": []} if isinstance(components, list) else record)
        if isinstance(components, list):
            for i, comp in enumerate(components):
                check.component(i, comp)
        return check.take()

    def checker(self) -> SchemaCheck:
        """An incremental check: the record's shell first, then its components one at a time (a streamed
        record is never whole in memory)."""
        return SchemaCheck(self)


class SchemaCheck:
    """The checks of `NerdmSchemas.validate`, fed the record's shell (the record with `components: []`) and then
    each component in order. The core schema declares `components` with uniqueItems, which jsonschema checks
    pairwise (quadratic: minutes at 10k components); each component is checked against the core Component
    definition and its own extensions, and uniqueness with a set of digests: the same verdicts, in linear time
    and with 16 bytes held per component."""

    def __init__(self, schemas: NerdmSchemas) -> None:
        self.schemas = schemas
        self.found: dict[tuple[str, str], Violation] = {}
        self.core: Any = None
        self.core_component: str | None = None
        self._seen: dict[bytes, int] = {}

    def _check(self, obj: Any, uri: str, prefix: str) -> None:
        validator = self.schemas._validator(uri)
        if validator is None:
            return
        try:
            try:
                self.schemas._fast_check(uri)(obj)
                return
            except fastjsonschema.JsonSchemaException:
                pass  # fall through to the authoritative check (JsonSchemaDefinitionException included)
            for err in validator.iter_errors(obj):
                ptr = prefix + pointer_of(err.absolute_path)
                self.found.setdefault((ptr, err.message), Violation(ptr, err.message[:500], uri))
        except Exception as exc:  # noqa: BLE001 - a schema that cannot be applied is a finding, not a crash
            msg = f"the schema could not be applied ({type(exc).__name__}: {str(exc)[:300]})"
            self.found.setdefault((prefix, msg), Violation(prefix, msg, uri))

    def _extensions(self, obj: dict[str, Any], prefix: str) -> list[str]:
        """The recognised extension URIs of obj; one that names nothing in its schema is a violation."""
        out = []
        value = obj.get("_extensionSchemas")
        for j, uri in enumerate(value if isinstance(value, list) else []):
            if not isinstance(uri, str) or self.schemas._validator_base(uri) is None:
                continue
            reason = self.schemas.unresolvable(uri)
            if reason is not None:
                ptr = f"{prefix}/_extensionSchemas/{j}"
                self.found.setdefault((ptr, reason), Violation(ptr, f"extension schema {uri} {reason}", uri))
            else:
                out.append(uri)
        return out

    def shell(self, shell: dict[str, Any]) -> None:
        """The record without its components (`components: []` when it has a list of them)."""
        core = self.core = shell.get("_schema")
        if isinstance(core, str):
            reason = self.schemas.unresolvable(core) if self.schemas._validator_base(core) else None
            if reason is not None:
                self.found[("/_schema", reason)] = Violation("/_schema", f"core schema {core} {reason}", core)
            else:
                self._check(shell, core, "")
        for uri in self._extensions(shell, ""):
            self._check(shell, uri, "")
        self.core_component = f"{core.split('#', 1)[0]}#/definitions/Component" if isinstance(core, str) else None

    def component(self, i: int, comp: Any, canonical_form: bytes | None = None) -> None:
        """One component; `canonical_form`: its RFC 8785 bytes when the caller has them already."""
        prefix = f"/components/{i}"
        # NERDm extension definitions (pub DataFile, ChecksumFile, ...) include the core Component by allOf,
        # so the core definition is checked directly only where no extension applies.
        applied = self._extensions(comp, prefix) if isinstance(comp, dict) else []
        for uri in applied:
            self._check(comp, uri, prefix)
        if self.core_component and not applied:
            self._check(comp, self.core_component, prefix)
        # RFC 8785: 1 and 1.0 are one number, as uniqueItems compares them
        key = hashlib.blake2b(canonical(comp) if canonical_form is None else canonical_form, digest_size=16).digest()
        first = self._seen.setdefault(key, i)
        if first != i:
            self.found.setdefault((prefix, "uniqueItems"), Violation(
                prefix, f"duplicate of /components/{first} (components must be unique)", str(self.core)))

    def take(self) -> list[Violation]:
        """What was found since the last call, ordered by pointer and message."""
        out = sorted(self.found.values(), key=lambda v: (v.pointer, v.message))
        self.found = {}
        return out


@lru_cache(maxsize=4)
def load(schema_dir: Path) -> NerdmSchemas:
    return NerdmSchemas(schema_dir)
