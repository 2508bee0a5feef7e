"""`voe export` (issue 11, first part): the compiled shared package as JSON-LD in an RO-Crate 1.2, validated with
SHACL, with an RDFC-1.0 content hash that is stable and sensitive, read back by rdflib, and a package rebuilt
from the export that runs and scores identically. Everything offline: contexts come from ontology/."""

from __future__ import annotations

import hashlib
import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import rdflib
from pyld import jsonld  # type: ignore[import-untyped]
from pyld.canon import URDNA2015  # type: ignore[import-untyped]
from rdflib.compare import isomorphic
from rdflib.namespace import RDF

from tests.conftest import REPO
from voe.artifacts.package import (
    EvidenceObject,
    MenuEntry,
    ObservedFact,
    ReferenceStep,
    TaskAnswer,
    TaskView,
    load_package,
)
from voe.artifacts.run import read_steps
from voe.errors import InputError, UsageError
from voe.export.crate import ExportSummary, export_package
from voe.export.croissant import CROISSANT
from voe.export.jsonld import (
    ANSWERS,
    CRATE,
    CRATE_SPEC,
    EVIDENCE,
    PACKAGE_FILES,
    RUNS,
    SHA256_TERM,
    TASKS,
    VOE,
    VOEA,
    ExportInvalid,
    canonical_nquads,
    content_hash,
    context,
    document_loader,
    evidence_document,
    load_jsonld,
    validate,
)
from voe.export.rebuild import _evidence, _Reader, import_package
from voe.graph import Graph
from voe.replay.runner import run_policy
from voe.verifiers.score import score_run

DATA_FILES = ("tasks.jsonl", "evidence.jsonl", "answers.jsonl", "manifest.json")


@pytest.fixture(scope="module")
def exported(package: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ExportSummary]:
    out = tmp_path_factory.mktemp("crate") / "crate"
    return out, export_package(package, out, include_answers=True, date="2026-12-01")


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
    assert sorted(p.name for p in out.iterdir()) == sorted([TASKS, EVIDENCE, ANSWERS, CRATE, CROISSANT,
                                                            *PACKAGE_FILES])
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
    qudt = rdflib.Namespace("http://qudt.org/schema/qudt/")  # sizes are QUDT quantities in bytes
    sizes = list(ev.subjects(RDF.type, qudt.QuantityValue))
    declared = sum(1 for e in evidence.values() if isinstance(e.metadata.get("declared_size"), int))
    assert len(sizes) >= declared > 0
    assert all(ev.value(q, qudt.unit) == rdflib.URIRef("http://qudt.org/vocab/unit/BYTE") for q in sizes)
    assert all(ev.value(q, qudt.numericValue).datatype == rdflib.XSD.integer for q in sizes)  # type: ignore[union-attr]


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
    assert set(parts) == {TASKS, EVIDENCE, ANSWERS, CROISSANT, *PACKAGE_FILES}
    for name, part in parts.items():
        data = (out / name).read_bytes()
        assert str(g.value(part, rdflib.URIRef(SHA256_TERM))) == hashlib.sha256(data).hexdigest()
        assert str(g.value(part, schema.contentSize)) == str(len(data))
        assert str(g.value(part, schema.encodingFormat)) == ("application/jsonlines" if name.endswith(".jsonl")
                                                             else "application/ld+json")
        if name in summary.files:
            assert summary.files[name] == hashlib.sha256(data).hexdigest()
    for name in (ANSWERS, "answers.jsonl"):
        assert g.value(parts[name], rdflib.URIRef(VOE + "verifierOnly")) == rdflib.Literal(True)
    assert str(g.value(root, schema.datePublished)) == "2026-12-01"  # the fixture's date
    assert g.value(root, schema.license) is not None
    values = {str(g.value(i, schema.propertyID)): str(g.value(i, schema.value)) for i in g.objects(root, schema.identifier)}
    assert values[VOE + "rdfc10Sha256"] == summary.content_hash == content_hash(out)[0]
    assert values[VOE + "packageContentHash"] == summary.package_content_hash


def recomputed_by_the_docs_recipe(crate: Path, tmp_path: Path) -> str:
    """The crate's content hash as a third party recomputes it: the Python block of docs/guide/export.md's
    'Recomputing the content hash', run as it is (PyLD's public API on the raw files; no voe code) in a fresh
    interpreter. The block itself asserts that it agrees with the crate's recorded value; this returns it."""
    section = (REPO / "docs" / "guide" / "export.md").read_text().split("## Recomputing the content hash", 1)[1]
    recipe = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert '"out/crate"' in recipe and "import voe" not in recipe and "from voe" not in recipe
    script = tmp_path / "recompute.py"
    script.write_text(recipe.replace('"out/crate"', repr(str(crate))))
    proc = subprocess.run([sys.executable, "-I", str(script)], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_recorded_content_hash_is_an_independent_rdfc10_hash_of_the_graph_files(
        exported: tuple[Path, ExportSummary], tmp_path: Path) -> None:
    out, summary = exported
    meta = {n["@id"]: n for n in json.loads((out / CRATE).read_text())["@graph"]}
    recorded = meta["#content-hash"]["value"]
    assert recomputed_by_the_docs_recipe(out, tmp_path) == recorded == summary.content_hash
    # the files it covers are the crate's graph files, named in the description a reader of the crate sees
    graph_parts = sorted(p["@id"] for p in meta["./"]["hasPart"] if p["@id"].endswith(".jsonld"))
    assert graph_parts == [ANSWERS, EVIDENCE, TASKS]
    assert ", ".join(graph_parts) in meta["#content-hash"]["description"]
    # the quads it counts are every quad of every file: each file's canonical N-Quads whole, nothing merged or cut
    quads = sum(len(jsonld.normalize(json.loads((out / n).read_text()),
                                     {"algorithm": "URDNA2015", "format": "application/n-quads"}).splitlines())
                for n in graph_parts)
    assert content_hash(out) == (recorded, quads)


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
    again = export_package(package, tmp_path / "again", include_answers=True, date="2026-12-01")
    assert again.content_hash == summary.content_hash
    for name in (TASKS, EVIDENCE, ANSWERS, CRATE):
        assert (tmp_path / "again" / name).read_bytes() == (out / name).read_bytes()
    crate = copy_of(out, tmp_path)
    counter = [0]
    for name in (TASKS, EVIDENCE, ANSWERS):
        edit(crate / name, lambda d, c=counter: d.update(_reorder_and_relabel(d, c)))
        assert (crate / name).read_bytes() != (out / name).read_bytes()
    assert counter[0] > 50  # reference steps, binding rules: there were blank nodes to relabel
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
    def broken(name: str, field: str, value: object) -> Path:
        pkg = tmp_path / f"pkg-{field}"
        shutil.copytree(package, pkg)
        lines = (pkg / name).read_text().splitlines()
        first = json.loads(lines[0])
        first[field] = value
        (pkg / name).write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
        return pkg

    # what the package's own schema refuses is refused as the package is read, before any JSON-LD is made
    with pytest.raises(InputError, match="do not match the package schema.*EvidenceObject"):
        export_package(broken("evidence.jsonl", "status", "misplaced"), tmp_path / "out")
    assert not (tmp_path / "out" / CRATE).exists()
    # what only the export's shapes say (a horizon is at least 1) fails the SHACL validation
    with pytest.raises(ExportInvalid, match="TaskHorizon"):
        export_package(broken("tasks.jsonl", "horizon", 0), tmp_path / "out")
    assert not (tmp_path / "out").exists()  # a failed export leaves nothing, not even its staging folder
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]


def test_export_refuses_a_symlinked_or_non_empty_out_and_replaces_only_with_force(package: Path,
                                                                                   tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(InputError, match="symbolic link"):
        export_package(package, link)
    assert list(target.iterdir()) == []  # nothing written through the link
    full = tmp_path / "full"
    full.mkdir()
    (full / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="not empty.*--force"):
        export_package(package, full)
    with pytest.raises(InputError, match="replaces an earlier export only"):  # not a folder of an export's
        export_package(package, full, force=True)
    assert [p.name for p in full.iterdir()] == ["notes.txt"]
    (full / CRATE).write_text("{}")  # an earlier export's folder: replaced whole
    summary = export_package(package, full, force=True)
    assert summary.tasks > 0 and json.loads((full / CRATE).read_text()) and not (full / "notes.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "full", "link"]  # no staging left behind


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
    for stale in (ANSWERS, "answers.jsonl", CRATE):  # stale answers from an earlier export must not survive
        (out / stale).write_text("{}")
    summary = export_package(package, out, force=True)
    assert not summary.include_answers and summary.answers == 0
    assert sorted(p.name for p in out.iterdir()) == sorted([TASKS, EVIDENCE, CRATE, CROISSANT, "tasks.jsonl",
                                                            "evidence.jsonl"])
    forbidden = set(TaskAnswer.model_fields) - {"task_id"}
    forbidden |= {_camel(f) for f in forbidden}
    _, _, answers, _ = load_package(package)
    for name in ("tasks.jsonl", "evidence.jsonl"):
        text = (out / name).read_text()
        assert not any(a.moment_id in text or a.decision in text for a in answers.values()), name
    for name in (TASKS, EVIDENCE, CRATE, CROISSANT):
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


def files_of(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` by its relative path."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_rebuilt_package_is_identical_and_scores_identically(exported: tuple[Path, ExportSummary], package: Path,
                                                              _session_graph: Graph, tmp_path: Path) -> None:
    out, _ = exported
    rebuilt = import_package(out, tmp_path / "rebuilt")
    # every file of the folder byte for byte, schema/ included (their $id, x-voe-schema-version, last newline)
    original, again = files_of(package), files_of(rebuilt)
    assert sorted(again) == sorted(original)
    assert {*DATA_FILES, *(f"schema/{n}.schema.json" for n in ("task", "evidence", "answer", "manifest"))} <= set(original)
    for name, data in original.items():
        assert again[name] == data, name
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
        "declared_size": 2222, "release_size": 0, "size": True,  # sizes as QUDT quantities, a bool left alone
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


def test_a_context_at_any_depth_is_inlined_or_refused_and_no_socket_opens(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """rdflib loads a node's own @context too (issue 30): one inside @graph, or a context that @imports another,
    is refused before any parser sees it, and nothing opens a socket."""
    import socket

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("a socket was opened")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    nested = tmp_path / "nested.jsonld"
    nested.write_text(json.dumps({"@context": context("export-context.jsonld"), "@graph": [
        {"@id": "a", "@context": "http://127.0.0.1:9/evil.jsonld", "name": "x"}]}))
    with pytest.raises(InputError, match="not one voe ships"):
        load_jsonld(nested)
    scoped = tmp_path / "scoped.jsonld"  # a term's own context, inside the document's context object
    scoped.write_text(json.dumps({"@context": {"t": {"@id": "http://x/t", "@context": "http://127.0.0.1:9/s.jsonld"}},
                                  "@id": "a", "t": {"@id": "b"}}))
    with pytest.raises(InputError, match="not one voe ships"):
        load_jsonld(scoped)
    imports = tmp_path / "imports.jsonld"
    imports.write_text(json.dumps({"@context": {"@version": 1.1, "@import": "http://127.0.0.1:9/c.jsonld"},
                                   "@id": "a"}))
    with pytest.raises(InputError, match="imports"):
        load_jsonld(imports)


@pytest.mark.parametrize("text,why", [
    ('{"@graph": ' + "[" * 100_000 + "]" * 100_000 + "}", "nests"),
    ('{"@id": "a", "n": ' + "7" * 6000 + "}", "number voe does not read"),
    ('{"@graph": [' + ",".join(['{"@id": "x"}'] * 3000) + "]}", "budget jsonld_values"),
])
def test_a_hostile_crate_file_is_an_input_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str,
                                                why: str) -> None:
    monkeypatch.setenv("VOE_LIMIT_JSONLD_VALUES", "5000")
    path = tmp_path / "hostile.jsonld"
    path.write_text(text)
    with pytest.raises(InputError, match=why):
        load_jsonld(path)
    monkeypatch.setenv("VOE_LIMIT_JSONLD_BYTES", "1000")
    path.write_text(json.dumps({"@id": "a", "name": "x" * 2000}))
    with pytest.raises(InputError, match="budget jsonld_bytes"):
        load_jsonld(path)


@pytest.mark.slow
def test_cli_import_package_with_the_network_blocked_refuses_a_nested_remote_context(
        exported: tuple[Path, ExportSummary], tmp_path: Path) -> None:
    from voe.replay.sealed import namespaces_available

    crate = copy_of(exported[0], tmp_path)
    doc = json.loads((crate / EVIDENCE).read_text())
    doc["@graph"][0]["@context"] = "https://example.org/remote-context.jsonld"
    data = json.dumps(doc).encode()
    (crate / EVIDENCE).write_bytes(data)

    def reseal(meta: dict[str, Any]) -> None:  # the crate records the edited file, as a forger would
        for node in meta["@graph"]:
            if node.get("@id") == EVIDENCE:
                node["sha256"], node["contentSize"] = hashlib.sha256(data).hexdigest(), str(len(data))

    edit(crate / CRATE, reseal)
    cmd = [sys.executable, "-m", "voe.cli", "import-package", str(crate), "--out", str(tmp_path / "pkg")]
    if namespaces_available():  # no network at all: a fetch would fail with a traceback of its own
        cmd = ["unshare", "--user", "--map-root-user", "--net", *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "not one voe ships" in proc.stderr and not (tmp_path / "pkg").exists()


# ---------------------------------------------------------------- generic research-data tools, offline


def test_crate_passes_the_ro_crate_validator_offline(exported: tuple[Path, ExportSummary], package: Path,
                                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """roc-validator's RO-Crate 1.2 profile with the network closed (voe/export/validate.py serves the one remote
    document it needs, the RO-Crate context, from its cache, seeded from ontology/): no REQUIRED finding; of the
    RECOMMENDED ones only the publisher, which voe names only when told (`--publisher`), and with one given (a ROR
    id, a name, a contact point) none at all."""
    from voe.export.crate import Publisher
    from voe.export.validate import ro_crate_findings

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OSError("the network is closed in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    assert ro_crate_findings(exported[0], "REQUIRED") == []
    recommended = ro_crate_findings(exported[0], "RECOMMENDED")
    assert [f.check for f in recommended] == ["ro-crate-1.2_56.1"], recommended  # publisher
    published = tmp_path / "published"
    export_package(package, published, include_answers=True, date="2026-12-01",
                   publisher=Publisher(id="https://ror.org/05xpvk416", name="a publisher", contact="mailto:d@example.org"))
    assert ro_crate_findings(published, "RECOMMENDED") == []
    root = next(n for n in json.loads((published / CRATE).read_text())["@graph"] if n["@id"] == "./")
    assert root["publisher"] == {"@id": "https://ror.org/05xpvk416"}
    broken = copy_of(exported[0], tmp_path)  # not vacuous: the validator does see a crate break the profile
    edit(broken / CRATE, lambda d: [n.pop("datePublished", None) for n in d["@graph"]])
    issues = ro_crate_findings(broken, "REQUIRED")
    assert any("datePublished" in f.message for f in issues), issues


def test_voe_validate_reports_by_tool_and_severity_and_exits_1_on_a_finding(
        exported: tuple[Path, ExportSummary], tmp_path: Path) -> None:
    def validate(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "voe.cli", "validate", *args], capture_output=True, text=True,
                              timeout=300)

    clean = validate(str(exported[0]), "--severity", "REQUIRED")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert clean.stdout.splitlines() == ["roc-validator: 0 finding(s)", "mlcroissant: 0 finding(s)"]
    broken = copy_of(exported[0], tmp_path)
    edit(broken / CRATE, lambda d: [n.pop("datePublished", None) for n in d["@graph"]])
    edit(broken / CROISSANT, lambda d: d["recordSet"][0]["field"][0]["source"].update(fileObject={"@id": "nope"}))
    found = validate(str(broken), "--json")
    assert found.returncode == 1, found.stderr
    rows = json.loads(found.stdout)
    assert any(r["tool"] == "roc-validator" and r["severity"] == "REQUIRED" and "datePublished" in r["message"]
               for r in rows), rows
    assert any(r["tool"] == "mlcroissant" and r["severity"] == "ERROR" and '"nope"' in r["message"] for r in rows), rows
    missing = validate(str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "not an RO-Crate" in missing.stderr and "Traceback" not in missing.stderr


def _field_names(fields: list[dict[str, Any]], prefix: str = "") -> set[str]:
    """The names of croissant.json's fields, a nested one as its path (menu/entry_id)."""
    out: set[str] = set()
    for f in fields:
        out.add(prefix + f["name"])
        out |= _field_names(f.get("subField", []), prefix + f["name"] + "/")
    return out


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode()


def test_croissant_validates_and_its_record_sets_load_offline(exported: tuple[Path, ExportSummary], package: Path,
                                                              tmp_path: Path) -> None:
    import mlcroissant as mlc  # type: ignore[import-untyped,unused-ignore]

    out, _ = exported
    views, evidence, answers, _ = load_package(package)
    ds = mlc.Dataset(str(out / CROISSANT))  # raises on any validation error
    tasks = list(ds.records("tasks"))
    assert [r["tasks/task_id"].decode() for r in tasks] == [v.task_id for v in views]
    assert [r["tasks/horizon"] for r in tasks] == [v.horizon for v in views]
    assert [r["tasks/question"].decode() for r in tasks] == [v.question for v in views]
    assert len(list(ds.records("evidence"))) == len(evidence)
    assert [r["answers/family"].decode() for r in ds.records("answers")] == [answers[v.task_id].family.value
                                                                             for v in views]
    meta = json.loads((out / CROISSANT).read_text())
    assert meta["conformsTo"] == "http://mlcommons.org/croissant/1.1" and meta["license"]  # the terms of the sources
    # every field of every line is described, nested ones included
    described = {rs["name"]: _field_names(rs["field"]) for rs in meta["recordSet"]}
    for rs, models in (("tasks", {"": TaskView, "menu/": MenuEntry}), ("evidence", {"": EvidenceObject}),
                       ("answers", {"": TaskAnswer, "reference/": ReferenceStep})):
        for prefix, model in models.items():
            assert {prefix + f for f in model.model_fields} <= described[rs], (rs, model)
    assert {"facts/statement", "facts/source/sha256", "metadata/declared_size", "metadata/checksum_files/valid",
            "metadata/members/local_sha256"} <= described["evidence"]
    # and reads back as the package holds it: menu entries, facts with their sources, reference payloads
    for r, v in zip(tasks, views, strict=True):
        assert [e["tasks/menu/evidence_id"].decode() for e in r["tasks/menu"]] == [e.evidence_id for e in v.menu]
        assert [a.decode() for a in r["tasks/actions"]] == [a.value for a in v.actions]
    for r in ds.records("evidence"):
        e = evidence[r["evidence/evidence_id"].decode()]
        if e.facts:
            got = [(f["evidence/facts/statement"].decode(), _text(f["evidence/facts/source/sha256"]))
                   for f in r["evidence/facts"]]
            assert got == [(f.statement, f.source and f.source["sha256"]) for f in e.facts]
        assert r["evidence/metadata"]["evidence/metadata/declared_size"] == e.metadata.get("declared_size")
    for r in ds.records("answers"):
        a = answers[r["answers/task_id"].decode()]
        steps = [(s["answers/reference/action"].decode(), _text(s["answers/reference/evidence_id"]),
                  None if s["answers/reference/payload"] is None else [x.decode() for x in s["answers/reference/payload"]])
                 for s in r["answers/reference"]]
        assert steps == [(s.action.value, s.evidence_id, s.payload) for s in a.reference]
    for name in PACKAGE_FILES:  # the package's own bytes
        assert (out / name).read_bytes() == (package / name).read_bytes()
    policy_only = tmp_path / "policy-only"
    export_package(package, policy_only)
    meta = json.loads((policy_only / CROISSANT).read_text())
    assert [r["name"] for r in meta["recordSet"]] == ["tasks", "evidence"]
    assert not (policy_only / "answers.jsonl").exists()
    assert "answers" not in (policy_only / CROISSANT).read_text()


# ---------------------------------------------------------------- runs as PROV activities


@pytest.fixture(scope="module")
def scored_runs(package: Path, _session_graph: Graph, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("runs")
    runs = {}
    for policy, passes in (("random", 2), ("reference", 1)):
        run_policy(package, policy, passes, 7, base / policy)
        score_run(_session_graph, base / policy)
        runs[policy] = base / policy
    return runs


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_runs_export_as_prov_activities_with_verdicts_verifier_only(package: Path, scored_runs: dict[str, Path],
                                                                   tmp_path: Path) -> None:
    out = tmp_path / "crate"
    summary = export_package(package, out, include_answers=True, runs=[scored_runs["random"], scored_runs["reference"]])
    steps = {p: [rec.model_dump(mode="json") for rec in read_steps(r)] for p, r in scored_runs.items()}
    trajectories = {p: _rows(r / "trajectories.jsonl") for p, r in scored_runs.items()}
    assert (summary.runs, summary.trajectories) == (2, sum(len(t) for t in trajectories.values()))
    assert summary.verdicts == summary.trajectories
    prov, voe, voea = (rdflib.Namespace(x) for x in ("http://www.w3.org/ns/prov#", VOE, VOEA))
    g = load_jsonld(out / RUNS)
    runs = set(g.subjects(RDF.type, voe.Run))
    assert len(runs) == 2 and all((r, RDF.type, prov.Activity) in g for r in runs)
    by_id = {str(g.value(t, rdflib.URIRef("http://schema.org/identifier"))): t
             for t in g.subjects(RDF.type, voe.Trajectory)}
    assert set(by_id) == {t["trajectory_id"] for rows in trajectories.values() for t in rows}
    tasks = load_jsonld(out / TASKS)
    task_iris = set(tasks.subjects(RDF.type, voe.Task))
    for rows in steps.values():
        for rec in rows:
            tr = by_id[rec["trajectory_id"]]
            step = rdflib.URIRef(f"{tr}/step/{rec['t']}")
            assert (step, RDF.type, prov.Activity) in g and g.value(step, rdflib.URIRef("http://schema.org/isPartOf")) == tr
            assert str(g.value(step, voe.outcome)) == rec["outcome"]
            observation = g.value(step, voe.observation)
            assert g.value(observation, prov.wasGeneratedBy) == step
            assert json.loads(str(g.value(observation, voe.jsonContent))) == rec["observation"]
            used = set(g.objects(step, prov.used))
            assert len(used) == (1 if rec["outcome"] == "revealed" else 0)
            assert g.value(tr, prov.used) in task_iris
    assert validate(out).conforms
    answers = load_jsonld(out / ANSWERS)
    for run in scored_runs.values():  # each verdict is `voe score`'s, and lives in answers.jsonld only
        for score in _rows(run / "scores.jsonl"):
            verdict = rdflib.URIRef(str(by_id[score["trajectory_id"]]) + "/verdict")
            assert answers.value(verdict, voea.valid) == rdflib.Literal(score["valid"])
            assert answers.value(verdict, rdflib.URIRef(VOE + "verifierOnly")) == rdflib.Literal(True)
            assert str(answers.value(verdict, voea.label)) == score["label"]
    assert not any(str(p).startswith(VOEA) for p in g.predicates())
    assert (out / "ro-crate-metadata.json").is_file()
    assert recomputed_by_the_docs_recipe(out, tmp_path) == summary.content_hash  # runs.jsonld hashed too


def test_runs_without_answers_keep_verdicts_out_and_refuse_the_reference_run(
        package: Path, scored_runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "crate"
    summary = export_package(package, out, runs=[scored_runs["random"]])
    assert summary.verdicts == 0 and not (out / ANSWERS).exists()
    text = (out / RUNS).read_text()
    assert "Verdict" not in text and VOEA not in text
    with pytest.raises(InputError, match="replays the verifier-only answers"):
        export_package(package, tmp_path / "ref", runs=[scored_runs["reference"]])
    other = tmp_path / "other-run"
    shutil.copytree(scored_runs["random"], other)
    edit(other / "run.json", lambda d: d.update(content_hash="0" * 64))
    with pytest.raises(InputError, match="of another package"):
        export_package(package, tmp_path / "other", runs=[other])
    unscored = tmp_path / "unscored"
    shutil.copytree(scored_runs["random"], unscored)
    (unscored / "scores.jsonl").unlink()
    with pytest.raises(InputError, match="no verdicts yet"):
        export_package(package, tmp_path / "unscored-crate", include_answers=True, runs=[unscored])


# ---------------------------------------------------------------- the command line


def _voe(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "voe.cli", *args], capture_output=True, text=True, env=env, timeout=600)


def test_cli_export_then_import_package_and_exit_codes(package: Path, scored_runs: dict[str, Path], tmp_path: Path,
                                                       cli_env: dict[str, str]) -> None:
    env = {**cli_env, "SOURCE_DATE_EPOCH": "1767225600"}  # 2026-01-01T00:00:00Z
    crate = tmp_path / "crate"
    done = _voe(["export", str(package), "--out", str(crate), "--include-answers", "--runs",
                 str(scored_runs["random"])], env)
    assert done.returncode == 0, done.stderr
    views = load_package(package)[0]
    assert done.stdout.startswith(f"exported {len(views)} tasks, ") and "1 runs (" in done.stdout
    assert "content hash " in done.stdout and "Traceback" not in done.stderr
    assert "names no publisher" in done.stderr and "--publisher" in done.stderr  # RO-Crate recommends one
    meta = json.loads((crate / CRATE).read_text())
    assert {n["@id"]: n for n in meta["@graph"]}["./"]["datePublished"] == "2026-01-01"
    again = _voe(["export", str(package), "--out", str(tmp_path / "again"), "--include-answers", "--runs",
                  str(scored_runs["random"]), "--json"], env)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["content_hash"] in done.stdout
    names = [p.relative_to(crate) for p in crate.rglob("*") if p.is_file()]
    assert {Path(n).parts[0] for n in names} >= {"training", CRATE}  # the training sets too, with runs and answers
    for name in names:  # the same export twice is the same bytes, the crate's metadata included
        assert (crate / name).read_bytes() == (tmp_path / "again" / name).read_bytes(), name

    rebuilt = _voe(["import-package", str(crate), "--out", str(tmp_path / "pkg")], env)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert rebuilt.stdout.startswith(f"rebuilt package {tmp_path / 'pkg'} from {crate}: {len(views)} tasks")
    assert (tmp_path / "pkg" / "manifest.json").read_bytes() == (package / "manifest.json").read_bytes()

    edit(crate / TASKS, lambda d: [n.pop("question", None) for n in d["@graph"]])  # fails the shapes: exit 1
    (crate / CRATE).unlink()
    bad = _voe(["import-package", str(crate), "--out", str(tmp_path / "pkg2")], env)
    assert bad.returncode == 2 and "not an RO-Crate" in bad.stderr and "Traceback" not in bad.stderr
    missing = _voe(["export", str(tmp_path / "nowhere"), "--out", str(tmp_path / "x")], env)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr, missing.stderr
    date = _voe(["export", str(package), "--out", str(tmp_path / "x"), "--date", "yesterday"], env)
    assert date.returncode == 2 and "--date 'yesterday'" in date.stderr
    for bad_flags in (["--publisher", "ror.org/05xpvk416"], ["--publisher-name", "a lab"],
                      ["--publisher", "https://ror.org/05xpvk416", "--contact", "lab@example.org"]):
        refused = _voe(["export", str(package), "--out", str(tmp_path / "x"), *bad_flags], env)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr, (bad_flags, refused.stderr)
        assert not (tmp_path / "x").exists()
