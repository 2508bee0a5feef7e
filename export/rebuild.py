"""`voe import-package`: rebuild a task package folder from a `voe export --include-answers` crate.

The package is rebuilt from the RDF (each .jsonld parsed with rdflib, contexts from disk), not by copying
anything: the round trip proves that the export holds the whole package. Order comes back from `voe:position`
and the JSON-LD lists; JSON types from the typed literals (export/jsonld.py). The rebuilt tasks.jsonl,
evidence.jsonl and answers.jsonl are written exactly as `voe compile` writes them, so they are byte-identical to
the exported package's files and the rebuilt manifest.json carries the same content hash: a run of the rebuilt
package scores against the graph the original was compiled into. The folder is written by the compiler's own
writer (voe.artifacts.package.write_package), schema/ included, so it is the compiled folder byte for byte.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import rdflib
from rdflib.collection import Collection
from rdflib.namespace import RDF, XSD

from voe.artifacts.package import (
    EvidenceObject,
    Manifest,
    TaskAnswer,
    TaskView,
    package_content_hash,
    write_package,
)
from voe.errors import InputError, VoeError
from voe.export.jsonld import (
    ACT,
    ANSWERS,
    CRATE,
    EVIDENCE,
    ID,
    KEY,
    NULL,
    QUDT,
    SCHEMA,
    SHA256_TERM,
    TASKS,
    UNIT_BYTE,
    VOE,
    VOEA,
    load_jsonld,
    validate,
)
from voe.jsonl import dump_models
from voe.versions import PACKAGE_VERSION, check

V = rdflib.Namespace(VOE)
A = rdflib.Namespace(VOEA)
S = rdflib.Namespace(SCHEMA)
QUANTITY_VALUE, QUDT_VALUE, QUDT_UNIT = (rdflib.URIRef(QUDT + t) for t in ("QuantityValue", "numericValue", "unit"))
SOURCE_PROPS: dict[rdflib.term.Node, str] = {V.filePath: "path", V.locator: "locator", V.sha256: "sha256"}


class RoundTripMismatch(VoeError):
    """The package rebuilt from a crate is not the package that was exported (its content hash differs)."""

    exit_code = 1


class _Reader:
    def __init__(self, g: rdflib.Graph, where: Path) -> None:
        self.g, self.where = g, where

    def fail(self, node: rdflib.term.Node, message: str) -> InputError:
        return InputError(f"{node}: {message}", path=str(self.where))

    def opt(self, s: rdflib.term.Node, p: rdflib.URIRef) -> rdflib.term.Node | None:
        values = list(self.g.objects(s, p))
        if len(values) > 1:
            raise self.fail(s, f"has {len(values)} values of {p}, expected one")
        return values[0] if values else None

    def one(self, s: rdflib.term.Node, p: rdflib.URIRef) -> rdflib.term.Node:
        value = self.opt(s, p)
        if value is None:
            raise self.fail(s, f"has no {p}")
        return value

    def text(self, s: rdflib.term.Node, p: rdflib.URIRef) -> str:
        return str(self.one(s, p))

    def opt_text(self, s: rdflib.term.Node, p: rdflib.URIRef) -> str | None:
        value = self.opt(s, p)
        return None if value is None else str(value)

    def integer(self, s: rdflib.term.Node, p: rdflib.URIRef) -> int:
        return int(str(self.one(s, p)))

    def items(self, node: rdflib.term.Node) -> list[rdflib.term.Node]:
        return [] if node == RDF.nil else list(Collection(self.g, node))

    def by_position(self, nodes: list[rdflib.term.Node]) -> list[rdflib.term.Node]:
        return sorted(nodes, key=lambda n: self.integer(n, V.position))

    def of_type(self, cls: rdflib.URIRef) -> list[rdflib.term.Node]:
        return self.by_position(list(self.g.subjects(RDF.type, cls)))

    def value(self, node: rdflib.term.Node, keys: dict[rdflib.term.Node, str] | None = None) -> Any:
        """The JSON value `export.jsonld.tree` wrote as `node`."""
        if node == rdflib.URIRef(NULL):
            return None
        if isinstance(node, rdflib.Literal):
            lexical, dt = str(node), node.datatype
            if dt == XSD.boolean:
                return lexical in ("true", "1")
            if dt == XSD.integer:
                return int(lexical)
            if dt == XSD.decimal:
                return float(lexical)
            if dt not in (None, XSD.string):
                raise self.fail(node, f"a literal of type {dt} is not one voe exports")
            return lexical
        if node == RDF.nil or (node, RDF.first, None) in self.g:
            return [self.value(x) for x in self.items(node)]
        if (node, RDF.type, QUANTITY_VALUE) in self.g:  # a size in bytes: the number itself
            if self.opt(node, QUDT_UNIT) != rdflib.URIRef(UNIT_BYTE):
                raise self.fail(node, f"a quantity in a unit other than {UNIT_BYTE}")
            return self.value(self.one(node, QUDT_VALUE))
        out: dict[str, Any] = {}
        for p, o in self.g.predicate_objects(node):
            if p == RDF.type:
                continue
            if keys and p in keys:
                out[keys[p]] = self.value(o)
            elif str(p).startswith(KEY):
                out[unquote(str(p)[len(KEY):])] = self.value(o)
            else:
                raise self.fail(node, f"unexpected property {p} in a JSON object")
        return out

    def id_of(self, node: rdflib.term.Node) -> str:
        """The voe id an IRI of the export names (inverse of export.jsonld.iri)."""
        if not str(node).startswith(ID):
            raise self.fail(node, f"is not an IRI under {ID}")
        return unquote(str(node)[len(ID):])

    def action(self, node: rdflib.term.Node) -> str:
        if not str(node).startswith(ACT):
            raise self.fail(node, f"is not an action IRI under {ACT}")
        return str(node)[len(ACT):]


def _tasks(r: _Reader) -> tuple[list[TaskView], rdflib.term.Node]:
    views = []
    for t in r.of_type(V.Task):
        wf = r.one(t, V.IN_WORKFLOW)
        menu = [{"entry_id": r.text(e, S.identifier), "evidence_id": r.id_of(r.one(e, V.offersEvidence)),
                 "kind": r.text(e, V.kind), "title": r.text(e, S.name),
                 "request_action": r.action(r.one(e, V.requestAction))}
                for e in r.by_position(list(r.g.objects(t, V.menuEntry)))]
        views.append(TaskView.model_validate({
            "task_id": r.text(t, S.identifier), "workflow_id": r.text(wf, S.identifier),
            "workflow_title": r.text(wf, S.name), "question": r.text(t, V.question), "menu": menu,
            "actions": [r.action(a) for a in r.items(r.one(t, V.actions))], "horizon": r.integer(t, V.horizon)}))
    packages = list(r.g.subjects(RDF.type, V.TaskPackage))
    if len(packages) != 1:
        raise InputError(f"expected one voe:TaskPackage, found {len(packages)}", path=str(r.where))
    return views, packages[0]


def _evidence(r: _Reader) -> list[EvidenceObject]:
    out = []
    for e in r.of_type(V.Evidence):
        facts = []
        for f in r.by_position(list(r.g.objects(e, V.fact))):
            source = r.opt(f, V.sourceLocation)
            facts.append({"statement": r.text(f, V.statement),
                          "source": None if source is None else r.value(source, SOURCE_PROPS)})
        out.append(EvidenceObject.model_validate({
            "evidence_id": r.text(e, S.identifier), "status": r.text(e, V.status), "kind": r.opt_text(e, V.kind),
            "title": r.opt_text(e, S.name), "record": r.opt_text(e, V.record),
            "provenance": r.opt_text(e, V.provenance), "metadata": r.value(r.one(e, V.metadata)), "facts": facts}))
    return out


def _answers(r: _Reader) -> tuple[list[TaskAnswer], rdflib.term.Node]:
    def ids(s: rdflib.term.Node, p: rdflib.URIRef) -> list[str]:
        return [r.id_of(x) for x in r.items(r.one(s, p))]

    def rules(s: rdflib.term.Node, p: rdflib.URIRef) -> dict[str, list[str]]:
        return {r.action(r.one(b, A.actionClass)): ids(b, A.evidenceList) for b in r.g.objects(s, p)}

    out = []
    for a in r.of_type(A.TaskAnswer):
        steps = []
        for step in r.items(r.one(a, A.reference)):
            ev, payload = r.opt(step, A.evidence), r.opt(step, A.payload)
            steps.append({"action": r.action(r.one(step, A.action)),
                          "evidence_id": None if ev is None else r.id_of(ev),
                          "payload": None if payload is None else [r.id_of(x) for x in r.items(payload)]})
        out.append(TaskAnswer.model_validate({
            "task_id": r.id_of(r.one(a, A.answerOf)), "family": r.text(a, A.family), "moment_id": r.text(a, A.momentId),
            "accepted_classes": [r.action(x) for x in r.items(r.one(a, A.acceptedClasses))],
            "binding": ids(a, A.binding), "needed": ids(a, A.needed), "useful": ids(a, A.useful), "reference": steps,
            "reference_class": r.action(r.one(a, A.referenceClass)), "reference_payload": ids(a, A.referencePayload),
            "must_bind": rules(a, A.mustBind), "may_bind": rules(a, A.mayBind), "decision": r.text(a, A.decision),
            "source_facts": [str(x) for x in r.items(r.one(a, A.sourceFacts))],
            "gold_facts": [str(x) for x in r.items(r.one(a, A.goldFacts))]}))
    audits = list(r.g.subjects(RDF.type, A.PackageAudit))
    if len(audits) != 1:
        raise InputError(f"expected one voea:PackageAudit, found {len(audits)}", path=str(r.where))
    return out, audits[0]


def _check_crate(crate: Path) -> set[str]:
    """The files the crate's metadata lists, each checked against its recorded sha256 and size."""
    g = load_jsonld(crate / CRATE)
    base = crate.resolve().as_uri() + "/"
    root = rdflib.URIRef(base)
    parts = set()
    for part in g.objects(root, S.hasPart):
        name = str(part).removeprefix(base)
        data = (crate / name).read_bytes() if (crate / name).is_file() else None
        if data is None:
            raise InputError(f"the crate lists {name} but does not hold it", path=str(crate))
        digest = g.value(part, rdflib.URIRef(SHA256_TERM))
        size = g.value(part, S.contentSize)
        if digest is None or str(digest) != hashlib.sha256(data).hexdigest() or str(size) != str(len(data)):
            raise InputError(f"{name} is not the file the crate recorded (sha256 or size differs): it changed after "
                             "the export", path=str(crate))
        parts.add(name)
    if not {TASKS, EVIDENCE} <= parts:
        raise InputError(f"{CRATE} does not list {TASKS} and {EVIDENCE}; not a voe export", path=str(crate))
    return parts


def import_package(crate: Path, out: Path) -> Path:
    """Rebuild the package folder `out` (tasks.jsonl, evidence.jsonl, answers.jsonl, manifest.json, schema/) from
    the export in `crate`, which must have been made with include_answers: a package cannot be scored without
    its answers. The crate's files are checked against the sha256 its metadata records and validated with SHACL
    first; nothing is written unless the rebuilt data files give the exported package's content hash.

    Raises InputError (exit 2) for a crate that is not a whole voe export with answers or whose files changed,
    ExportInvalid (exit 1) when it fails the shapes, RoundTripMismatch (exit 1) when the rebuilt package differs
    from the exported one. The CLI (`voe import-package CRATE --out PKG`) prints
    `rebuilt package PKG from CRATE: T tasks, E evidence objects, A answers (content hash H)`."""
    if not (crate / CRATE).is_file():
        raise InputError(f"not an RO-Crate (no {CRATE}); create one with `voe export`", path=str(crate))
    parts = _check_crate(crate)
    if ANSWERS not in parts:
        raise InputError("the crate has no answers.jsonld (exported without --include-answers); a package cannot be "
                         "scored without its verifier-only answers", path=str(crate))
    validate(crate)
    tasks = _Reader(load_jsonld(crate / TASKS), crate / TASKS)
    views, package = _tasks(tasks)
    evidence = _evidence(_Reader(load_jsonld(crate / EVIDENCE), crate / EVIDENCE))
    answer_reader = _Reader(load_jsonld(crate / ANSWERS), crate / ANSWERS)
    answers, audit = _answers(answer_reader)
    if [a.task_id for a in answers] != [v.task_id for v in views]:
        raise InputError("answers.jsonld does not answer the tasks of tasks.jsonld one for one, in order",
                         path=str(crate))

    # written exactly as compiler.package.compile_package writes them
    files = {"tasks.jsonl": dump_models(views), "evidence.jsonl": dump_models(evidence),
             "answers.jsonl": dump_models(answers)}
    digest = package_content_hash(files)
    manifest = Manifest(package_version=tasks.integer(package, V.packageVersion),
                        compiler_version=tasks.text(package, V.compilerVersion),
                        content_hash=tasks.text(package, V.packageContentHash), graph_hash=tasks.text(package, V.graphHash),
                        sources=tasks.value(tasks.one(package, V.sources)), files=tasks.value(tasks.one(package, V.files)),
                        annotator=tasks.text(package, V.annotator),
                        counts=answer_reader.value(answer_reader.one(audit, A.counts)),
                        gate=answer_reader.value(answer_reader.one(audit, A.gate)))
    # schema/ is written in this voe's package version: a crate of another one is refused, as load_package would
    check("package", manifest.package_version, PACKAGE_VERSION, str(crate / TASKS))
    rebuilt = {n: hashlib.sha256(d).hexdigest() for n, d in sorted(files.items())}
    if digest != manifest.content_hash or rebuilt != manifest.files:
        differ = sorted(n for n in rebuilt if manifest.files.get(n) != rebuilt[n])
        raise RoundTripMismatch(f"the package rebuilt from {crate} is not the exported one: content hash {digest} "
                                f"instead of {manifest.content_hash} ({', '.join(differ) or 'file list'} differ)")

    write_package(out, files, manifest)  # the compiler's own writer: schema/ and manifest.json byte for byte
    return out
