"""Labels, relationship types and allowed endpoints, read from ontology/voe.ttl.

The enums below are how Python code names labels and types (so mypy checks the spelling); the Turtle
file is the authority on which exist and which endpoints each type allows. `tests/voe/test_ontology.py`
proves the two agree, and `Ontology.check_edge` runs before every relationship write.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache

from voe.errors import OntologyViolation
from voe.resources import data_path

VOE_NS = "https://w3id.org/voe/ontology#"


class Label(StrEnum):
    NODE = "Node"
    ARCHIVE = "Archive"
    RECORD = "Record"
    COMPONENT = "Component"
    DATA_FILE = "DataFile"
    CHECKSUM_FILE = "ChecksumFile"
    SUBCOLLECTION = "Subcollection"
    HIDDEN_COMPONENT = "HiddenComponent"
    FILE = "File"
    EVIDENCE = "Evidence"
    SOURCE_LOCATION = "SourceLocation"
    DEFECT = "Defect"
    WORKFLOW = "Workflow"
    DECISION_MOMENT = "DecisionMoment"
    TASK = "Task"
    ANSWER = "Answer"  # verifier-only, unlinked: joined by id (ANSWER_PREFIX + task or moment id)
    ANNOTATION = "Annotation"
    JUDGE_VERDICT = "JudgeVerdict"
    CALIBRATION = "Calibration"
    RUN = "Run"
    TRAJECTORY = "Trajectory"


class Rel(StrEnum):
    CONTAINS = "CONTAINS"
    HAS_COMPONENT = "HAS_COMPONENT"
    PART_OF = "PART_OF"
    STORED_AS = "STORED_AS"
    DESCRIBES = "DESCRIBES"
    IN_FILE = "IN_FILE"
    EVIDENCED_BY = "EVIDENCED_BY"
    LOCATED_AT = "LOCATED_AT"
    HAS_DEFECT = "HAS_DEFECT"
    DERIVED_FROM = "DERIVED_FROM"
    IN_WORKFLOW = "IN_WORKFLOW"
    OFFERS = "OFFERS"
    ANNOTATES = "ANNOTATES"
    FRAMED_BY = "FRAMED_BY"
    JUDGES = "JUDGES"
    CALIBRATED_BY = "CALIBRATED_BY"
    BINDS = "BINDS"
    REQUESTED = "REQUESTED"
    ATTEMPTS = "ATTEMPTS"
    IN_RUN = "IN_RUN"


@dataclass(frozen=True)
class Ontology:
    labels: frozenset[str]
    # label -> the label itself and every label it is a subclass of (transitively)
    ancestors: dict[str, frozenset[str]]
    allowed: dict[str, frozenset[tuple[str, str]]]
    comments: dict[str, str] = field(default_factory=dict)

    @property
    def rel_types(self) -> frozenset[str]:
        return frozenset(self.allowed)

    def is_a(self, label: str, ancestor: str) -> bool:
        return ancestor in self.ancestors.get(label, frozenset())

    def check_label(self, label: str) -> None:
        if label not in self.labels:
            raise OntologyViolation(f"label {label!r} is not defined in ontology/voe.ttl")

    def check_edge(self, rel: str, src_label: str, dst_label: str) -> None:
        pairs = self.allowed.get(rel)
        if pairs is None:
            raise OntologyViolation(f"relationship type {rel!r} is not defined in ontology/voe.ttl")
        self.check_label(src_label)
        self.check_label(dst_label)
        for frm, to in pairs:
            if self.is_a(src_label, frm) and self.is_a(dst_label, to):
                return
        allowed = ", ".join(f"({a})-[:{rel}]->({b})" for a, b in sorted(pairs))
        raise OntologyViolation(
            f"(:{src_label})-[:{rel}]->(:{dst_label}) is not allowed by ontology/voe.ttl; allowed: {allowed}"
        )


ANSWER_PREFIX = "answer:"  # cypher/verifiers/verdict.cypher's callers join an Answer by this id


def answer_id(task_or_moment_id: str) -> str:
    """The id of the verifier-only Answer node of a task (or of a rejected candidate's moment)."""
    return ANSWER_PREFIX + task_or_moment_id


def _local(uri: object) -> str:
    text = str(uri)
    if not text.startswith(VOE_NS):
        raise OntologyViolation(f"{text} is outside the voe namespace")
    return text[len(VOE_NS):]


@lru_cache(maxsize=1)
def load() -> Ontology:
    """Parse ontology/voe.ttl once per process."""
    from rdflib import Graph, Namespace, URIRef
    from rdflib.namespace import RDFS

    voe = Namespace(VOE_NS)
    g = Graph()
    g.parse(data_path("ontology") / "voe.ttl", format="turtle")

    class_of: dict[str, str] = {}
    for subject, label in g.subject_objects(voe.label):
        class_of[str(subject)] = str(label)
    parents: dict[str, set[str]] = {lab: set() for lab in class_of.values()}
    for iri, lab in class_of.items():
        for parent in g.objects(URIRef(iri), RDFS.subClassOf):
            if str(parent) in class_of:
                parents[lab].add(class_of[str(parent)])

    def closure(lab: str) -> frozenset[str]:
        seen = {lab}
        todo = [lab]
        while todo:
            for p in parents[todo.pop()]:
                if p not in seen:
                    seen.add(p)
                    todo.append(p)
        return frozenset(seen)

    allowed: dict[str, frozenset[tuple[str, str]]] = {}
    comments: dict[str, str] = {}
    for prop, rel in g.subject_objects(voe.relType):
        pairs = set()
        for pair in g.objects(prop, voe.allows):
            frm = g.value(pair, voe["from"])
            to = g.value(pair, voe.to)
            pairs.add((class_of[str(frm)], class_of[str(to)]))
        allowed[str(rel)] = frozenset(pairs)
        comment = g.value(prop, RDFS.comment)
        if comment is not None:
            comments[str(rel)] = str(comment)
    return Ontology(
        labels=frozenset(class_of.values()),
        ancestors={lab: closure(lab) for lab in class_of.values()},
        allowed=allowed,
        comments=comments,
    )
