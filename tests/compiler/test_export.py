"""`voe export` (issue 11, first part): the compiled shared package as JSON-LD in an RO-Crate 1.2, validated with
SHACL, with an RDFC-1.0 content hash that is stable and sensitive, read back by rdflib, and a package rebuilt
from the export that runs and scores identically. Everything offline: contexts come from ontology/."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import rdflib
from pyld import jsonld  # type: ignore[import-untyped]
from pyld.canon import URDNA2015  # type: ignore[import-untyped]
from rdflib.compare import isomorphic
from rdflib.namespace import RDF

from compiler.export import (
    ANSWERS,
    CRATE,
    CRATE_SPEC,
    EVIDENCE,
    SHA256_TERM,
    TASKS,
    VOE,
    VOEA,
    ExportInvalid,
    ExportSummary,
    canonical_nquads,
    content_hash,
    document_loader,
    evidence_document,
    export_package,
    load_jsonld,
    validate,
)
from compiler.import_package import _evidence, _Reader, import_package
from compiler.models import EvidenceObject, ObservedFact, TaskAnswer
from compiler.package import compile_package, load_package
from compiler.run import run_policy
from ingest import ingest_paths
from verifiers.score import score_run
from voe.errors import InputError
from voe.graph import Graph

SOURCES = ["mds2-4103", "mds2-2525", "mds2-2106", "amb2025-template", "ambench-releases"]
DATA_FILES = ("tasks.jsonl", "evidence.jsonl", "answers.jsonl", "manifest.json")


@pytest.fixture(scope="module")
def package(_session_graph: Graph, archives: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    graph = _session_graph
    graph.clear()
    graph.apply_schema()
    assert ingest_paths([archives / s for s in SOURCES], graph).errors == []
    pkg = tmp_path_factory.mktemp("export") / "pkg"
    compile_package(graph, pkg)
    yield pkg


@pytest.fixture(scope="module")
def exported(package: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ExportSummary]:
    out = tmp_path_factory.mktemp("crate") / "crate"
    return out, export_package(package, out, include_answers=True)


def copy_of(crate: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "copy"
    shutil.copytree(crate, dst)
    return dst


def edit(path: Path, change: Any) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def nodes(path: Path) -> list[dict[str, Any]]:
    return list(json.loads(path.read_text())["@graph"])


def test_export_validates_and_reads_back_into_the_same_triples(exported: tuple[Path, ExportSummary],
                                                                 package: Path) -> None:
    out, summary = exported
    views, evidence, answers, manifest = load_package(package)
    assert (summary.tasks, summary.evidence, summary.answers) == (len(views), len(evidence), len(answers))
    assert sorted(p.name for p in out.iterdir()) == sorted([TASKS, EVIDENCE, ANSWERS, CRATE])
    report = validate(out)
    assert report.conforms and report.triples == summary.triples > 10_000
    # two parses by rdflib, and one by pyld (another JSON-LD implementation), give the same graph; equal canonical
    # N-Quads is isomorphism (rdflib's `isomorphic` agrees on tasks.jsonld, and takes minutes on the others)
    first = load_jsonld(out / TASKS)
    assert isomorphic(first, load_jsonld(out / TASKS))
    for name in (TASKS, EVIDENCE, ANSWERS):
        canonical = canonical_nquads(load_jsonld(out / name))
        assert len(canonical) > 0 and canonical == canonical_nquads(load_jsonld(out / name))
        dataset = jsonld.to_rdf(json.loads((out / name).read_text()), {"documentLoader": document_loader})
        assert canonical == URDNA2015().main(dataset, {"format": "application/n-quads"}), name
    g = load_jsonld(out / TASKS)
    voe = rdflib.Namespace(VOE)
    tasks = set(g.subjects(RDF.type, voe.Task))
    assert len(tasks) == len(views)
    for t in tasks:  # PROV-O: each task is an entity derived from the evidence it offers
        assert (t, RDF.type, rdflib.URIRef("http://www.w3.org/ns/prov#Entity")) in g
        assert set(g.objects(t, rdflib.URIRef("http://www.w3.org/ns/prov#wasDerivedFrom")))
        horizon = g.value(t, voe.horizon)
        assert isinstance(horizon, rdflib.Literal) and horizon.datatype == rdflib.XSD.integer
    ev = load_jsonld(out / EVIDENCE)
    locations = list(ev.subjects(RDF.type, voe.SourceLocation))
    assert len(locations) == sum(1 for e in evidence.values() for f in e.facts if f.source is not None) > 0
    assert all(len(str(ev.value(s, voe.sha256))) == 64 and ev.value(s, voe.filePath) for s in locations)


def test_crate_metadata_parses_offline_and_records_files_and_hash(exported: tuple[Path, ExportSummary]) -> None:
    out, summary = exported
    meta = json.loads((out / CRATE).read_text())
    assert meta["@context"][0] == "https://w3id.org/ro/crate/1.2/context"
    g = load_jsonld(out / CRATE)  # the RO-Crate context is served from ontology/, never fetched
    schema = rdflib.Namespace("http://schema.org/")
    base = out.resolve().as_uri() + "/"
    root = rdflib.URIRef(base)
    assert (root, RDF.type, schema.Dataset) in g and g.value(root, schema.name) and g.value(root, schema.description)
    descriptor = rdflib.URIRef(base + CRATE)
    assert g.value(descriptor, rdflib.URIRef("http://purl.org/dc/terms/conformsTo")) == rdflib.URIRef(CRATE_SPEC)
    parts = {str(p).removeprefix(base): p for p in g.objects(root, schema.hasPart)}
    assert set(parts) == {TASKS, EVIDENCE, ANSWERS}
    for name, part in parts.items():
        assert str(g.value(part, rdflib.URIRef(SHA256_TERM))) == summary.files[name]
        assert str(g.value(part, schema.contentSize)) == str((out / name).stat().st_size)
        assert str(g.value(part, schema.encodingFormat)) == "application/ld+json"
    assert g.value(parts[ANSWERS], rdflib.URIRef(VOE + "verifierOnly")) == rdflib.Literal(True)
    values = {str(g.value(i, schema.propertyID)): str(g.value(i, schema.value)) for i in g.objects(root, schema.identifier)}
    assert values[VOE + "rdfc10Sha256"] == summary.content_hash == content_hash(out)[0]
    assert values[VOE + "packageContentHash"] == summary.package_content_hash


# arrays whose order is not data (the others are JSON-LD lists, by @list or by their term's @container)
UNORDERED = {"@graph", "@type", "menu", "fact", "wasDerivedFrom", "mustBind", "mayBind"}


def _reorder_and_relabel(doc: Any, counter: list[int]) -> Any:
    """The same graph written differently: keys in reverse order, unordered arrays reversed, and every blank
    node object given an explicit, arbitrary label."""
    if isinstance(doc, list):
        return [_reorder_and_relabel(v, counter) for v in doc]
    if not isinstance(doc, dict):
        return doc
    out: dict[str, Any] = {}
    for k in reversed(list(doc)):
        if k == "@context":
            out[k] = doc[k]
        elif k in UNORDERED and isinstance(doc[k], list):
            out[k] = [_reorder_and_relabel(v, counter) for v in reversed(doc[k])]
        else:
            out[k] = _reorder_and_relabel(doc[k], counter)
    if not {"@id", "@value", "@list", "@context", "@graph"} & set(doc):
        counter[0] += 1
        out["@id"] = f"_:renamed{counter[0] * 7919 % 100003}"
    return out


def test_content_hash_is_stable_across_exports_key_order_and_blank_node_labels(
        exported: tuple[Path, ExportSummary], package: Path, tmp_path: Path) -> None:
    out, summary = exported
    again = export_package(package, tmp_path / "again", include_answers=True)
    assert again.content_hash == summary.content_hash
    for name in (TASKS, EVIDENCE, ANSWERS, CRATE):
        assert (tmp_path / "again" / name).read_bytes() == (out / name).read_bytes()
    crate = copy_of(out, tmp_path)
    counter = [0]
    for name in (TASKS, EVIDENCE, ANSWERS):
        edit(crate / name, lambda d, c=counter: d.update(_reorder_and_relabel(d, c)))
        assert (crate / name).read_bytes() != (out / name).read_bytes()
    assert counter[0] > 100  # reference steps, binding rules: there were blank nodes to relabel
    assert content_hash(crate)[0] == summary.content_hash
    validate(crate)


def test_content_hash_changes_when_one_value_changes(exported: tuple[Path, ExportSummary], tmp_path: Path) -> None:
    out, summary = exported
    crate = copy_of(out, tmp_path)

    def bump_horizon(doc: dict[str, Any]) -> None:
        task = next(n for n in doc["@graph"] if "Task" in n["@type"])
        task["horizon"] = str(int(task["horizon"]) + 1)

    edit(crate / TASKS, bump_horizon)
    validate(crate)  # still a valid export, of another package
    changed = content_hash(crate)[0]
    assert changed != summary.content_hash
    # a change of JSON number form alone (the integer as a string either way) would not have moved it; one
    # character of one fact's statement does
    crate2 = copy_of(out, tmp_path / "b")

    def touch_statement(doc: dict[str, Any]) -> None:
        ev = next(n for n in doc["@graph"] if n.get("fact"))
        ev["fact"][0]["statement"] += "."

    edit(crate2 / EVIDENCE, touch_statement)
    assert content_hash(crate2)[0] not in (summary.content_hash, changed)


def test_broken_export_fails_with_a_readable_report(exported: tuple[Path, ExportSummary], tmp_path: Path) -> None:
    out, _ = exported

    def drop_question(doc: dict[str, Any]) -> None:
        del next(n for n in doc["@graph"] if "Task" in n["@type"])["question"]

    def bad_status(doc: dict[str, Any]) -> None:
        next(n for n in doc["@graph"] if "Evidence" in n["@type"])["status"] = "lost"

    def bad_sha(doc: dict[str, Any]) -> None:
        ev = next(n for n in doc["@graph"] if n.get("fact") and n["fact"][0].get("source"))
        ev["fact"][0]["source"]["voe:sha256"] = {"@value": "not-a-digest"}

    def leak_answer(doc: dict[str, Any]) -> None:  # a verifier-only statement on a task, in tasks.jsonld
        task = next(n for n in doc["@graph"] if "Task" in n["@type"])
        task["https://w3id.org/voe/answer#family"] = "source_integrity"

    cases = [(TASKS, drop_question, ["voesh:TaskQuestion", "exactly one non-empty question"]),
             (EVIDENCE, bad_status, ["voesh:EvidenceStatus", "archived, referenced or unavailable"]),
             (EVIDENCE, bad_sha, ["voesh:SourceSha256", "64 lowercase hex"]),
             (TASKS, leak_answer, ["voesh:NoAnswersOutsideShape", "tasks.jsonld"])]
    for i, (name, change, expected) in enumerate(cases):
        crate = copy_of(out, tmp_path / str(i))
        edit(crate / name, change)
        with pytest.raises(ExportInvalid) as info:
            validate(crate)
        text = str(info.value)
        assert "Constraint Violation" in text and all(e in text for e in expected), text
        assert info.value.exit_code == 1


def test_export_of_an_invalid_package_fails_and_writes_no_crate(package: Path, tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    shutil.copytree(package, pkg)
    lines = (pkg / "evidence.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["status"] = "misplaced"
    (pkg / "evidence.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    with pytest.raises(ExportInvalid, match="EvidenceStatus"):
        export_package(pkg, tmp_path / "out")
    assert not (tmp_path / "out" / CRATE).exists()


def _keys(doc: Any) -> set[str]:
    if isinstance(doc, list):
        return set().union(*(_keys(v) for v in doc)) if doc else set()
    if isinstance(doc, dict):
        return set(doc) | set().union(*(_keys(v) for v in doc.values()))
    return set()


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


def test_export_without_answers_holds_nothing_verifier_only(package: Path, tmp_path: Path) -> None:
    out = tmp_path / "public"
    (out).mkdir()
    (out / ANSWERS).write_text("{}")  # a stale answers file from an earlier export must not survive
    summary = export_package(package, out)
    assert not summary.include_answers and summary.answers == 0
    assert sorted(p.name for p in out.iterdir()) == sorted([TASKS, EVIDENCE, CRATE])
    forbidden = set(TaskAnswer.model_fields) - {"task_id"}
    forbidden |= {_camel(f) for f in forbidden}
    _, _, answers, _ = load_package(package)
    for name in (TASKS, EVIDENCE, CRATE):
        text = (out / name).read_text()
        keys = _keys(json.loads(text))  # node keys and the inline context's term names
        assert not keys & forbidden, (name, keys & forbidden)
        assert VOEA not in text and "verifierOnly\": true" not in text and "answers.jsonld" not in text
        for a in answers.values():  # no answer value either: the moment behind a task, its decision hash
            assert a.moment_id not in text and a.decision not in text
        g = load_jsonld(out / name)
        used = {str(p) for p in g.predicates()} | {str(c) for c in g.objects(None, RDF.type)}
        assert not any(u.startswith(VOEA) for u in used)
        assert not {u.rsplit("#", 1)[-1].rsplit("/", 1)[-1] for u in used} & forbidden
        assert (None, rdflib.URIRef(VOE + "verifierOnly"), None) not in g
    with pytest.raises(InputError, match="without its verifier-only answers"):
        import_package(out, tmp_path / "rebuilt")
    assert not (tmp_path / "rebuilt").exists()


def test_rebuilt_package_is_identical_and_scores_identically(exported: tuple[Path, ExportSummary], package: Path,
                                                              _session_graph: Graph, tmp_path: Path) -> None:
    out, _ = exported
    rebuilt = import_package(out, tmp_path / "rebuilt")
    for name in DATA_FILES:  # byte for byte, so the manifest's content hash is the original's
        assert (rebuilt / name).read_bytes() == (package / name).read_bytes(), name
    assert load_package(rebuilt) == load_package(package)
    for policy, passes, seed in (("reference", 1, 0), ("random", 2, 3)):
        results = []
        for pkg, tag in ((package, "orig"), (rebuilt, "rebuilt")):
            run_policy(pkg, policy, passes, seed, tmp_path / f"{policy}-{tag}")
            summary, scores = score_run(_session_graph, tmp_path / f"{policy}-{tag}")
            results.append((summary, [s.model_dump() for s in scores]))
        assert results[0] == results[1], policy
        if policy == "reference":  # not vacuous: every task scored, and the reference valid on each
            assert results[0][0]["tasks"] == len(load_package(package)[0])
            assert all(s["valid"] for s in results[0][1])


def test_import_refuses_a_crate_whose_files_changed(exported: tuple[Path, ExportSummary], tmp_path: Path) -> None:
    crate = copy_of(exported[0], tmp_path)
    data = (crate / TASKS).read_bytes()
    (crate / TASKS).write_bytes(data.replace(b'"horizon": "', b'"horizon": "1', 1))
    with pytest.raises(InputError, match="changed after the export"):
        import_package(crate, tmp_path / "rebuilt")
    (crate / CRATE).unlink()
    with pytest.raises(InputError, match="not an RO-Crate"):
        import_package(crate, tmp_path / "rebuilt")


def test_json_values_round_trip_through_rdf(tmp_path: Path) -> None:
    """Free-form metadata keeps every JSON type, nesting and order through the RDF (no Neo4j needed)."""
    metadata: dict[str, Any] = {
        "int": 2222, "neg": -3, "float": 0.0345, "one": 1.0, "tiny": 1e-05, "huge": 1.5e20, "yes": True, "no": False,
        "none": None, "empty_list": [], "empty_obj": {}, "nested": [[1, "a"], [], [{"k": None}]],
        "key with space/and:colon#": "v", "ünï": "çödé ✓", "": "empty key",
        "members": [{"path": f"f{i}", "valid": i % 2 == 0} for i in range(5)] * 2}
    ev = EvidenceObject(evidence_id="ev:odd id/with#hash and space", status="referenced", metadata=metadata,
                        facts=[ObservedFact(statement="s", source={"path": "p", "locator": None, "sha256": "0" * 64,
                                                                    "page": 3, "bbox": [1.5, 2.0, 3, 4]}),
                               ObservedFact(statement="no source")])
    path = tmp_path / EVIDENCE
    path.write_text(json.dumps(evidence_document([ev])))
    back = _evidence(_Reader(load_jsonld(path), path))
    assert back == [ev]
    assert json.dumps(back[0].model_dump(mode="json"), sort_keys=True) == json.dumps(ev.model_dump(mode="json"),
                                                                                     sort_keys=True)


def test_no_remote_context_is_ever_fetched(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="refusing to fetch"):
        document_loader("https://schema.org/docs/jsonldcontext.jsonld")
    doc = tmp_path / "remote.jsonld"
    doc.write_text(json.dumps({"@context": "https://schema.org/", "@id": "x", "name": "y"}))
    with pytest.raises(InputError, match="not one voe ships"):
        load_jsonld(doc)
