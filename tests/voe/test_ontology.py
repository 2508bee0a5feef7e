"""The Python side and ontology/ agree, and nothing outside ontology/ invents a label or type."""

from __future__ import annotations

import json
import re

import pytest
from rdflib import Graph as RDFGraph
from rdflib import Namespace
from rdflib.namespace import RDF, SH

from voe import ontology, queries
from voe.errors import OntologyViolation
from voe.ontology import Label, Rel
from voe.resources import data_path

VOE = Namespace(ontology.VOE_NS)


def test_label_enum_matches_turtle() -> None:
    assert {label.value for label in Label} == set(ontology.load().labels)


def test_rel_enum_matches_turtle() -> None:
    assert {rel.value for rel in Rel} == set(ontology.load().rel_types)


def test_every_rel_type_declares_endpoints() -> None:
    onto = ontology.load()
    for rel in Rel:
        assert onto.allowed[rel.value], f"{rel} has no allowed endpoints"


def test_jsonld_context_names_every_label_and_type_in_the_voe_namespace() -> None:
    ctx = json.loads((data_path("ontology") / "context.jsonld").read_text())["@context"]
    for name in [*Label, *Rel]:
        if name is Label.NODE:
            continue
        term = ctx[name.value]
        iri = term["@id"] if isinstance(term, dict) else term
        assert iri == f"voe:{name.value}", name


def test_subclass_endpoints_are_accepted_and_others_refused() -> None:
    onto = ontology.load()
    onto.check_edge(Rel.DESCRIBES, Label.CHECKSUM_FILE, Label.DATA_FILE)
    onto.check_edge(Rel.HAS_COMPONENT, Label.RECORD, Label.SUBCOLLECTION)
    with pytest.raises(OntologyViolation, match="not allowed"):
        onto.check_edge(Rel.DESCRIBES, Label.DATA_FILE, Label.DATA_FILE)
    with pytest.raises(OntologyViolation, match="not defined"):
        onto.check_edge("LINKS_TO", Label.RECORD, Label.RECORD)
    with pytest.raises(OntologyViolation, match="label 'Sample'"):
        onto.check_edge(Rel.PART_OF, "Sample", Label.SUBCOLLECTION)


def _cypher_identifiers(text: str) -> tuple[set[str], set[str]]:
    code = "\n".join(line.split("//", 1)[0] for line in text.splitlines())
    labels = set(re.findall(r"\(\s*\w*\s*:\s*([A-Z]\w*)", code))
    labels |= set(re.findall(r"\bFOR\s*\(\w+:([A-Z]\w*)\)", code))
    labels |= set(re.findall(r"\bSET\s+\w+:([A-Z]\w*)", code))
    types = set()
    for group in re.findall(r"\[\s*\w*\s*:\s*([A-Z_|]+)", code):
        types |= set(group.split("|"))
    return labels, types


def test_cypher_files_use_only_ontology_labels_and_types() -> None:
    onto = ontology.load()
    seen_labels: set[str] = set()
    for name in queries.all_names():
        labels, types = _cypher_identifiers(queries.load(name))
        assert labels <= onto.labels, f"{name}: unknown labels {labels - onto.labels}"
        assert types <= onto.rel_types, f"{name}: unknown relationship types {types - onto.rel_types}"
        seen_labels |= labels
    assert Label.COMPONENT.value in seen_labels  # the scan does find labels


def test_every_relationship_type_has_its_edge_writer() -> None:
    for rel in Rel:
        text = queries.load(f"write/edge_{rel.value}")
        assert f"MERGE (a)-[r:{rel.value}]->(b)" in text
    assert "FOR (n:Node) REQUIRE n.id IS UNIQUE" in queries.load("schema")


def test_shacl_shapes_refer_only_to_ontology_classes_and_types() -> None:
    shapes = RDFGraph().parse(data_path("ontology") / "shapes.ttl", format="turtle")
    onto = ontology.load()
    targets = {str(o).removeprefix(ontology.VOE_NS) for o in shapes.objects(None, SH.targetClass)}
    classes = {str(o).removeprefix(ontology.VOE_NS) for o in shapes.objects(None, SH["class"])}
    paths = {str(o).removeprefix(ontology.VOE_NS) for o in shapes.objects(None, SH.path)}
    assert targets and targets <= onto.labels
    assert classes <= onto.labels
    rel_paths = {p for p in paths if p.isupper()}
    assert rel_paths and rel_paths <= onto.rel_types
    assert len(list(shapes.subjects(RDF.type, SH.NodeShape))) == len(targets)


def test_every_export_term_in_the_voe_namespace_is_declared_in_the_vocabulary() -> None:
    """The export's contexts and shapes use only voe: terms that ontology/voe.ttl declares; the export-only ones
    are not Neo4j labels or relationship types."""
    onto_graph = RDFGraph().parse(data_path("ontology") / "voe.ttl", format="turtle")
    declared = {str(s).removeprefix(ontology.VOE_NS) for s in onto_graph.subjects() if str(s).startswith(ontology.VOE_NS)}
    used: set[str] = set()
    for name in ("export-context.jsonld", "export-answers-context.jsonld"):
        for term in json.loads((data_path("ontology") / name).read_text())["@context"].values():
            iri = term.get("@id") if isinstance(term, dict) else term
            if isinstance(iri, str) and iri.startswith("voe:"):
                used.add(iri.removeprefix("voe:"))
    shapes = RDFGraph().parse(data_path("ontology") / "export-shapes.ttl", format="turtle")
    for o in [*shapes.objects(None, SH.path), *shapes.objects(None, SH.targetClass), *shapes.objects(None, SH["class"])]:
        if str(o).startswith(ontology.VOE_NS):
            used.add(str(o).removeprefix(ontology.VOE_NS))
    assert {"Task", "Run", "Step", "MenuEntry", "position", "verifierOnly"} <= used
    assert used - declared == set()
    onto = ontology.load()
    for name in used - onto.labels - onto.rel_types:
        assert (VOE[name], VOE.label, None) not in onto_graph and (VOE[name], VOE.relType, None) not in onto_graph
