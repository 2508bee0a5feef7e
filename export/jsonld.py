"""`voe export`'s graph files: a task package as JSON-LD, validated with SHACL, content-hashed (export/crate.py
writes the folder and packs it as an RO-Crate 1.2).

Layout of an export folder (every file deterministic: sorted keys, nodes sorted by @id, no timestamps):
  tasks.jsonld            the package (voe:TaskPackage), its workflows (prov:Plan) and policy-visible tasks
                          (voe:Task, a prov:Entity prov:wasDerivedFrom the evidence its menu offers)
  evidence.jsonld         what each request returns (voe:Evidence, a prov:Entity) with its facts
                          (voe:ObservedFact) and each fact's source location (file path, locator, sha256)
  answers.jsonld          only with include_answers: the verifier-only TaskAnswers and the package's audit
                          (counts, release gate), each node `voe:verifierOnly true`, in their own vocabulary (voea:)
  ro-crate-metadata.json  the RO-Crate 1.2 envelope (schema.org): root Dataset, one File per .jsonld with its
                          sha256 and size, and the RDFC-1.0 content hash of the exported graph

The .jsonld files carry their context inline (ontology/export-context.jsonld, plus
ontology/export-answers-context.jsonld for the answers) so any JSON-LD tool reads them without a fetch; the
crate names the RO-Crate context by its URL, as the specification asks, and voe reads it from
ontology/ro-crate-1.2-context.jsonld. Nothing here touches the network: the JSON-LD document loader refuses
every URL it does not serve from disk.

Modelling choices (DESIGN is silent on them):
- Every number is a typed literal written as a string (xsd:integer, xsd:decimal, xsd:boolean), so the RDF, and
  so the hash, do not depend on how a JSON library prints 72.0.
- Ordered lists are JSON-LD @list (actions, answer id lists) or carry `voe:position` (tasks, menu entries,
  evidence objects, facts), so the package files can be rebuilt line for line (export/rebuild.py).
- Free-form JSON (an evidence object's `metadata`, the manifest's sources, counts and gate) is kept as a tree:
  an object is a `voe:JsonObject` node whose properties are its keys in the `voekey:` namespace
  (percent-encoded), an array a @list, null the IRI voe:null.
- Tasks, evidence objects, menu entries, facts, source locations and JSON objects get IRIs under
  https://w3id.org/voe/id/ (the percent-encoded voe id, then `/menu/E1`, `/fact/3`, `/fact/3/source`,
  `/metadata/members/4`); list cells, reference steps and binding rules are blank nodes.
"""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote

import rdflib
from pydantic import BaseModel
from pyld.canon import URDNA2015  # type: ignore[import-untyped]
from pyshacl import validate as shacl_validate

from voe.artifacts.package import EvidenceObject, Manifest, TaskAnswer, TaskView
from voe.errors import InputError, VoeError
from voe.ingest.payloads import limits
from voe.resources import data_path

VOE = "https://w3id.org/voe/ontology#"
VOEA = "https://w3id.org/voe/answer#"
ID = "https://w3id.org/voe/id/"
ACT = "https://w3id.org/voe/action#"
KEY = "https://w3id.org/voe/key#"
SCHEMA = "http://schema.org/"
PROV = "http://www.w3.org/ns/prov#"
XSD = "http://www.w3.org/2001/XMLSchema#"
NULL = VOE + "null"

TASKS, EVIDENCE, RUNS, ANSWERS = "tasks.jsonld", "evidence.jsonld", "runs.jsonld", "answers.jsonld"
CRATE = "ro-crate-metadata.json"
GRAPH_FILES = (TASKS, EVIDENCE, RUNS, ANSWERS)
PACKAGE_FILES = ("tasks.jsonl", "evidence.jsonl", "answers.jsonl")  # copied as they are, described by croissant.json

CRATE_SPEC = "https://w3id.org/ro/crate/1.2"
CRATE_CONTEXT_URL = f"{CRATE_SPEC}/context"
# the RO-Crate 1.2 context's own term for a file's digest
SHA256_TERM = "http://schema.org/sha256"
HASH_PROPERTY = VOE + "rdfc10Sha256"

# contexts served from disk by URL: the only documents the JSON-LD loader ever returns
LOCAL_CONTEXTS = {
    CRATE_CONTEXT_URL: "ro-crate-1.2-context.jsonld",
    "https://w3id.org/voe/export-context.jsonld": "export-context.jsonld",
    "https://w3id.org/voe/export-answers-context.jsonld": "export-answers-context.jsonld",
}


class ExportInvalid(VoeError):
    """The exported graph fails ontology/export-shapes.ttl; the message is pyshacl's report (exit 1)."""

    exit_code = 1


class ValidationReport(BaseModel):
    conforms: bool
    triples: int
    files: list[str]


# ---------------------------------------------------------------- contexts, loading


def context(name: str) -> Any:
    """The `@context` value of one of the context files shipped in ontology/."""
    return json.loads((data_path("ontology") / name).read_text(encoding="utf-8"))["@context"]


def document_loader(url: str, options: Any = None) -> dict[str, Any]:
    """A pyld document loader that serves the shipped contexts and refuses everything else, so that a JSON-LD
    operation can never reach the network."""
    name = LOCAL_CONTEXTS.get(url.rstrip("/"))
    if name is None:
        raise InputError(f"refusing to fetch the remote JSON-LD document {url}: voe works offline and ships only "
                         f"{', '.join(sorted(LOCAL_CONTEXTS))}")
    doc = json.loads((data_path("ontology") / name).read_text(encoding="utf-8"))
    return {"contextUrl": None, "documentUrl": url, "document": doc, "contentType": "application/ld+json"}


def _inline_contexts(value: Any, where: Path) -> Any:
    """Replace each context URL voe ships by the context itself; any other URL is refused (rdflib would fetch it)."""
    if isinstance(value, list):
        return [_inline_contexts(v, where) for v in value]
    if isinstance(value, str):
        if value.rstrip("/") not in LOCAL_CONTEXTS:
            raise InputError(f"the JSON-LD context {value} is not one voe ships; refusing to fetch it", path=str(where))
        return document_loader(value)["document"]["@context"]
    if isinstance(value, dict):
        if "@import" in value:  # JSON-LD 1.1: a context that loads another
            raise InputError(f"the JSON-LD context imports {value['@import']!r}; refusing to fetch it",
                             path=str(where))
        for term, definition in value.items():  # a term's own (scoped) context is loaded as well
            if isinstance(definition, dict) and "@context" in definition:
                value[term] = {**definition, "@context": _inline_contexts(definition["@context"], where)}
    return value


def _contexts_everywhere(doc: Any, where: Path) -> None:
    """Inline (or refuse) every `@context` at any depth: rdflib loads a node's own context as well as the
    document's. Iterative, and counting the values on the way (budget jsonld_values, ingest/payloads/limits.py)."""
    limit = limits.current().jsonld_values
    stack = [doc]
    seen = 0
    while stack:
        value = stack.pop()
        seen += 1
        if seen > limit:
            raise InputError(f"holds more than {limit} JSON values (budget jsonld_values); not read as a voe export",
                             path=str(where))
        if isinstance(value, dict):
            if "@context" in value:
                value["@context"] = _inline_contexts(value["@context"], where)
            stack.extend(v for k, v in value.items() if k != "@context")
        elif isinstance(value, list):
            stack.extend(value)


def read_json(path: Path) -> Any:
    try:
        size, limit = path.stat().st_size, limits.current().jsonld_bytes
        if size > limit:
            raise InputError(f"is {size} bytes, more than the budget jsonld_bytes ({limit}); not read", path=str(path))
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror or exc})", path=str(path)) from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not JSON ({exc})", path=str(path)) from exc
    except RecursionError as exc:
        raise InputError("nests arrays and objects too deeply to be JSON-LD voe reads", path=str(path)) from exc
    except ValueError as exc:  # an integer of more digits than Python converts
        raise InputError(f"holds a number voe does not read ({exc})", path=str(path)) from exc


def load_jsonld(path: Path) -> rdflib.Graph:
    """Parse one exported file (or ro-crate-metadata.json) with rdflib, contexts from disk (a context at any
    depth that voe does not ship is refused, never fetched), relative ids resolved against the file's folder."""
    doc = read_json(path)
    _contexts_everywhere(doc, path)
    g = rdflib.Graph()
    try:
        g.parse(data=json.dumps(doc), format="json-ld", base=path.parent.resolve().as_uri() + "/")
    except RecursionError as exc:
        raise InputError("nests too deeply to be JSON-LD voe reads", path=str(path)) from exc
    except Exception as exc:  # noqa: BLE001 - rdflib raises many kinds for malformed JSON-LD; one verdict
        raise InputError(f"not valid JSON-LD ({exc})", path=str(path)) from exc
    return g


# ---------------------------------------------------------------- IRIs and values


def iri(voe_id: str) -> str:
    return ID + quote(voe_id, safe="")


def action_iri(action: str) -> str:
    return ACT + action


def _decimal(x: float) -> str:
    if x != x or x in (float("inf"), float("-inf")):
        raise InputError(f"{x} has no JSON or xsd:decimal form")
    text = format(Decimal(repr(x)), "f")  # plain notation: 1e-05 is not an xsd:decimal lexical form
    return text if "." in text else text + ".0"


def tree(value: Any, at: str, keys: dict[str, str] | None = None, node_type: str = "JsonObject") -> Any:
    """JSON as JSON-LD values that keep its types (see the module docstring). An object gets the IRI `at` (its
    parent's IRI, then `/key` or `/index`): blank objects inside long lists all look alike to URDNA2015, whose
    canonicalization of a real package's metadata then took minutes. `keys` maps known object keys to properties
    of their own (e.g. a source location's `path` to voe:filePath)."""
    if value is None:
        return {"@id": NULL}
    if isinstance(value, bool):  # before int: a bool is an int in Python
        return {"@value": "true" if value else "false", "@type": "xsd:boolean"}
    if isinstance(value, int):
        return {"@value": str(value), "@type": "xsd:integer"}
    if isinstance(value, float):
        return {"@value": _decimal(value), "@type": "xsd:decimal"}
    if isinstance(value, str):
        return {"@value": value}
    if isinstance(value, list):
        return {"@list": [tree(v, f"{at}/{i}") for i, v in enumerate(value)]}
    if isinstance(value, dict):
        node: dict[str, Any] = {"@id": at, "@type": node_type}
        for k, v in value.items():
            step = quote(str(k), safe="")
            prop = (keys or {}).get(k) or "voekey:" + step
            if k in BYTE_KEYS and isinstance(v, int) and not isinstance(v, bool):
                node[prop] = quantity(v, f"{at}/{step}", UNIT_BYTE)
            else:
                node[prop] = tree(v, f"{at}/{step}")
        return node
    raise InputError(f"a {type(value).__name__} is not JSON")


SOURCE_KEYS = {"path": "voe:filePath", "locator": "voe:locator", "sha256": "voe:sha256"}

# quantities that carry a unit, as QUDT quantity values: the sizes of files (in bytes) are the only ones an
# exported value holds; every measured quantity stays inside the statement of its fact
QUDT, UNIT = "http://qudt.org/schema/qudt/", "http://qudt.org/vocab/unit/"
UNIT_BYTE = UNIT + "BYTE"
BYTE_KEYS = frozenset({"declared_size", "local_size", "release_size", "size", "bytes"})


def quantity(value: int | float, at: str, unit: str) -> dict[str, Any]:
    return {"@id": at, "@type": "qudt:QuantityValue", "qudt:numericValue": tree(value, at), "qudt:unit": {"@id": unit}}


# ---------------------------------------------------------------- the documents


def package_iri(manifest: Manifest) -> str:
    return ID + "package/" + manifest.content_hash


def tasks_document(views: list[TaskView], manifest: Manifest) -> dict[str, Any]:
    package = package_iri(manifest)
    nodes: list[dict[str, Any]] = [{
        "@id": package, "@type": ["TaskPackage", "Entity"], "packageVersion": str(manifest.package_version),
        "compilerVersion": manifest.compiler_version, "packageContentHash": manifest.content_hash,
        "graphHash": manifest.graph_hash, "annotator": manifest.annotator,
        "sources": tree(manifest.sources, package + "/sources"), "files": tree(manifest.files, package + "/files")}]
    workflows: dict[str, str] = {}
    for n, v in enumerate(views):
        if workflows.setdefault(v.workflow_id, v.workflow_title) != v.workflow_title:
            raise InputError(f"workflow {v.workflow_id} has two titles in the package ({workflows[v.workflow_id]!r}, "
                             f"{v.workflow_title!r}); it cannot be one prov:Plan")
        task = iri(v.task_id)
        nodes.append({
            "@id": task, "@type": ["Task", "Entity"], "identifier": v.task_id, "position": str(n),
            "question": v.question, "horizon": str(v.horizon), "workflow": iri(v.workflow_id), "isPartOf": package,
            "actions": [action_iri(a.value) for a in v.actions],
            "wasDerivedFrom": sorted({iri(e.evidence_id) for e in v.menu}),
            "menu": [{"@id": f"{task}/menu/{quote(e.entry_id, safe='')}", "@type": "MenuEntry",
                      "identifier": e.entry_id, "position": str(i), "offers": iri(e.evidence_id), "kind": e.kind,
                      "name": e.title, "requestAction": action_iri(e.request_action.value)}
                     for i, e in enumerate(v.menu)]})
    nodes += [{"@id": iri(w), "@type": ["Workflow", "Plan"], "identifier": w, "name": t} for w, t in workflows.items()]
    return {"@context": context("export-context.jsonld"), "@graph": sorted(nodes, key=lambda x: str(x["@id"]))}


def evidence_document(evidence: list[EvidenceObject]) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = []
    for n, e in enumerate(evidence):
        ev = iri(e.evidence_id)
        node: dict[str, Any] = {"@id": ev, "@type": ["Evidence", "Entity"], "identifier": e.evidence_id,
                                "position": str(n), "status": e.status, "metadata": tree(e.metadata, ev + "/metadata")}
        for field, term in (("kind", "kind"), ("title", "name"), ("record", "record"), ("provenance", "provenance")):
            if getattr(e, field) is not None:  # absent reads back as None, the models' default
                node[term] = getattr(e, field)
        facts = []
        for i, f in enumerate(e.facts):
            fact: dict[str, Any] = {"@id": f"{ev}/fact/{i}", "@type": ["ObservedFact", "Entity"], "position": str(i),
                                    "statement": f.statement}
            if f.source is not None:
                fact["source"] = tree(f.source, f"{ev}/fact/{i}/source", SOURCE_KEYS, "SourceLocation")
            facts.append(fact)
        if facts:
            node["fact"] = facts
        nodes.append(node)
    return {"@context": context("export-context.jsonld"), "@graph": sorted(nodes, key=lambda x: str(x["@id"]))}


def answers_document(views: list[TaskView], answers: dict[str, TaskAnswer], manifest: Manifest,
                     verdicts: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    package = package_iri(manifest)
    nodes: list[dict[str, Any]] = [*(verdicts or []), {
        "@id": package + "/audit", "@type": "PackageAudit", "verifierOnly": "true", "auditOf": package,
        "counts": tree(manifest.counts, package + "/audit/counts"),
        "gate": tree(manifest.gate, package + "/audit/gate")}]

    def rules(by_class: dict[str, list[str]]) -> list[dict[str, Any]]:
        return [{"@type": "BindingRule", "actionClass": action_iri(c), "evidenceIds": [iri(e) for e in ids]}
                for c, ids in sorted(by_class.items())]

    for n, v in enumerate(views):
        a = answers[v.task_id]
        steps = []
        for s in a.reference:
            step: dict[str, Any] = {"@type": "ReferenceStep", "action": action_iri(s.action.value)}
            if s.evidence_id is not None:
                step["evidence"] = iri(s.evidence_id)
            if s.payload is not None:
                step["payload"] = [iri(e) for e in s.payload]
            steps.append(step)
        nodes.append({
            "@id": ID + "answer/" + quote(a.task_id, safe=""), "@type": "TaskAnswer", "verifierOnly": "true",
            "position": str(n), "answerOf": iri(a.task_id), "family": a.family.value, "momentId": a.moment_id,
            "acceptedClasses": [action_iri(c.value) for c in a.accepted_classes],
            "binding": [iri(e) for e in a.binding], "needed": [iri(e) for e in a.needed],
            "useful": [iri(e) for e in a.useful], "reference": steps, "referenceClass": action_iri(a.reference_class.value),
            "referencePayload": [iri(e) for e in a.reference_payload], "mustBind": rules(a.must_bind),
            "mayBind": rules(a.may_bind), "decision": a.decision, "sourceFacts": list(a.source_facts),
            "goldFacts": list(a.gold_facts)})
    return {"@context": [context("export-context.jsonld"), context("export-answers-context.jsonld")],
            "@graph": sorted(nodes, key=lambda x: str(x["@id"]))}


def dump(doc: Any) -> bytes:
    return (json.dumps(doc, sort_keys=True, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


# ---------------------------------------------------------------- hash and validation


def hashed_files(out: Path) -> list[str]:
    """The graph files the crate's content hash covers: the package's .jsonld documents the export holds, in the
    order of their names (answers, evidence, runs, tasks)."""
    return sorted(n for n in GRAPH_FILES if (out / n).is_file())


def content_hash(out: Path) -> tuple[str, int]:
    """sha256 over the RDFC-1.0 (URDNA2015) canonical N-Quads of each graph file (`hashed_files`), concatenated in
    that order, and the number of quads.

    Each file is canonicalized on its own, so the blank nodes of two files stay apart with no relabelling: a
    blank-node label is local to its document, and relabelling the quads of a parser in place once renamed terms
    it shares between quads two or three times, cutting RDF lists apart. The definition is the one a third party
    recomputes from the files with PyLD's public `jsonld.normalize` (docs/guide/export.md); the files are read
    here with rdflib, another JSON-LD processor, so the two paths meet only at the canonical N-Quads."""
    digest = hashlib.sha256()
    quads = 0
    for name in hashed_files(out):
        canonical = canonical_nquads(load_jsonld(out / name))
        digest.update(canonical.encode("utf-8"))
        quads += canonical.count("\n")
    return digest.hexdigest(), quads


def _term(node: rdflib.term.Node) -> dict[str, str]:
    if isinstance(node, rdflib.BNode):  # never `_:c14n…`: pyld's URDNA2015 takes such a label as already canonical
        return {"type": "blank node", "value": f"_:x{node}"}
    if isinstance(node, rdflib.URIRef):
        return {"type": "IRI", "value": str(node)}
    if isinstance(node, rdflib.Literal):
        if node.language:
            return {"type": "literal", "value": str(node), "datatype": RDF_LANG_STRING, "language": node.language}
        return {"type": "literal", "value": str(node), "datatype": str(node.datatype or XSD + "string")}
    raise InputError(f"{node!r} is not an RDF term")


RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"


def canonical_nquads(graph: rdflib.Graph) -> str:
    """RDFC-1.0 (URDNA2015) canonical N-Quads of an rdflib graph: two graphs are isomorphic exactly when these
    are equal (rdflib's own `isomorphic` takes minutes on an export's blank-node lists). Every term gets a dict of
    its own: URDNA2015 relabels blank nodes in the dicts it is given."""
    triples = [{"subject": _term(s), "predicate": _term(p), "object": _term(o)} for s, p, o in graph]
    return str(URDNA2015().main({"@default": triples}, {"format": "application/n-quads"}))


def validate(out: Path) -> ValidationReport:
    """Check the exported .jsonld files in `out` against ontology/export-shapes.ttl. Raises ExportInvalid with
    pyshacl's readable report (each failed rule by its shape IRI and message) when they do not conform."""
    names = [n for n in GRAPH_FILES if (out / n).is_file()]
    if TASKS not in names or EVIDENCE not in names:
        raise InputError(f"not a voe export (needs {TASKS} and {EVIDENCE})", path=str(out))
    data = rdflib.Graph()
    exported_in = rdflib.URIRef(VOE + "exportedIn")
    for name in names:
        g = load_jsonld(out / name)
        # which file described each node: the shapes keep verifier-only data to answers.jsonld with it
        for s in set(g.subjects()):
            data.add((s, exported_in, rdflib.Literal(name)))
        data += g
    shapes = rdflib.Graph().parse(data_path("ontology") / "export-shapes.ttl", format="turtle")
    conforms, _, text = shacl_validate(data, shacl_graph=shapes, inference="none", allow_warnings=False)
    if not conforms:
        raise ExportInvalid(f"the export in {out} does not conform to ontology/export-shapes.ttl:\n{text}")
    return ValidationReport(conforms=True, triples=len(data) - sum(1 for _ in data.triples((None, exported_in, None))),
                            files=names)
