"""compile -> run (all five baselines, 3 passes) -> score -> report, against the real Neo4j and the shared
archives; leakage over every task; Cypher and Python verdicts agree on every trajectory."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from voe.artifacts.package import TaskAnswer, TaskView, load_package
from voe.artifacts.run import read_steps
from voe.artifacts.verdict import verdict
from voe.graph import Graph
from voe.ingest import ingest_paths
from voe.ingest.rules.defects import RULES, DefectKind
from voe.jsonl import read_jsonl
from voe.replay.admission import compile_package
from voe.replay.registry import specs
from voe.replay.runner import run_policy
from voe.verifiers.graph_verify import verdicts as graph_verdicts
from voe.verifiers.graph_verify import verify_run
from voe.verifiers.score import score_run

SOURCES = ["mds2-4103", "mds2-3842", "mds2-2525", "mds2-2106", "amb2025-template", "FACTS.md", "ambench-releases"]
BASELINES = ["reference", "request_everything", "submit_all", "refuse_all", "random"]
PROBE_RUNS = [s.name for s in specs("probe")]
VERIFIER_ONLY = {"family", "binding", "needed", "useful", "reference", "reference_class", "reference_payload",
                 "accepted_classes", "moment_id", "source_facts", "gold_facts", "must_bind", "may_bind", "decision",
                 "gold", "label", "variant", "answer", "split", "is_useful", "usefulness", "defects", "defect", "rule",
                 "kind_rule"}


@pytest.fixture(scope="module")
def compiled(_session_graph: Graph, archives: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    graph = _session_graph
    graph.clear()
    graph.apply_schema()
    report = ingest_paths([archives / s for s in SOURCES], graph)
    assert report.errors == []
    root = tmp_path_factory.mktemp("pipeline")
    summary = compile_package(graph, root / "pkg")
    runs = {}
    for policy in BASELINES:
        run_policy(root / "pkg", policy, 3, 11, root / policy)
        runs[policy] = score_run(graph, root / policy)
    for policy in PROBE_RUNS:
        run_policy(root / "pkg", policy, 1, 0, root / policy)
        runs[policy] = score_run(graph, root / policy)
    yield {"graph": graph, "root": root, "summary": summary, "runs": runs}


def test_package_has_every_family_and_one_task_per_decision(compiled: dict[str, Any]) -> None:
    s = compiled["summary"]
    assert s.tasks >= 12 and s.workflows >= 5
    assert set(s.families) == {"source_integrity", "missing_evidence", "calibration_sufficiency", "packet_submission",
                               "packet_escalation"} and all(v > 0 for v in s.families.values())
    pkg = compiled["root"] / "pkg"
    views, evidence, answers, manifest = load_package(pkg)
    assert len(views) == len(answers) == s.tasks and manifest.content_hash == s.content_hash
    assert s.evidence_entries == sum(len(v.menu) for v in views)
    assert s.canonical_evidence == len({e.evidence_id for v in views for e in v.menu}) == len(evidence)
    assert {src["ark"] for src in manifest.sources} >= {"ark:/88434/mds2-4103", "ark:/88434/mds2-2525"}
    for name in ("task", "evidence", "answer", "manifest"):
        assert json.loads((pkg / "schema" / f"{name}.schema.json").read_text())["type"] == "object"
    # one decision, one task: no two tasks share a visible question and a gold answer, and no two tasks are
    # about the same subject (the first binding item)
    assert manifest.counts["decisions"] == s.decisions == s.tasks
    assert len({a.binding[0] for a in answers.values()}) == s.tasks
    shared = Counter(e for a in answers.values() for e in set(a.binding))
    assert manifest.counts["largest_item_group"] == max(shared.values())
    # independent decisions (DESIGN §7): every task names the facts its gold rests on, at most two tasks rest
    # on one fact, and the distinct facts are at least half the tasks
    per_fact = Counter(f for a in answers.values() for f in set(a.gold_facts))
    assert all(a.gold_facts for a in answers.values())
    assert manifest.counts["gold_facts"] == s.gold_facts == len(per_fact) >= 0.5 * s.tasks
    assert manifest.counts["largest_fact_group"] == max(per_fact.values()) <= 2
    assert sum(n for fams in s.by_archive.values() for n in fams.values()) == s.tasks and s.families_absent == {}
    # packet_escalation asks something source_integrity does not: its subject is clean and its gold differs
    for a in answers.values():
        if a.family.value == "packet_escalation":
            assert a.accepted_classes == ["abstain_or_escalate"] and a.binding[0] not in a.may_bind["flag_source_defect"]


def test_missing_evidence_comes_only_from_real_gaps(compiled: dict[str, Any]) -> None:
    """Every gap is one the archive states: a calibration a measurement row names that nothing holds (located at
    the cells that name it), a removal a changelog states with nothing named to replace it, or a file a checksum
    file attests; nothing of the reconstructed catalog or a record reference. A removal whose statement names
    its replacement is a submission of the replacement (L7/L8/L9 -> L7-L8-L9-O1)."""
    _, evidence, answers, _ = load_package(compiled["root"] / "pkg")
    gaps = [a for a in answers.values() if a.family.value == "missing_evidence"]
    assert gaps
    for a in gaps:
        for g in a.reference_payload:
            obj = evidence[g]
            assert obj.status == "unavailable" and obj.provenance in ("release_notes", "named", "attested"), g
            if obj.provenance == "named":  # located at the workbook cells that name it, the subject's row among them
                assert obj.facts and all(f.source and f.source["path"].endswith(".xlsx") for f in obj.facts)
            if obj.provenance == "release_notes":
                assert any("changelog" in (f.source or {}).get("path", "") for f in obj.facts), g
    assert not any(o.provenance == "reconstructed" for o in evidence.values())
    assert all(o.status == "referenced" for o in evidence.values() if o.provenance == "referenced")
    replaced = [a for a in answers.values() if (evidence[a.binding[0]].title or "").startswith(
        ("AMB2022-718-AMMT-B6-P2-L7.xml", "AMB2022-718-AMMT-B6-P2-L8.xml", "AMB2022-718-AMMT-B6-P2-L9.xml"))]
    assert replaced
    for a in replaced:
        assert a.family.value == "packet_submission" and a.reference_class.value == "submit_risk_packet"
        assert any((evidence[x].title or "").startswith("AMB2022-718-AMMT-B6-P2-L7-L8-L9-O1.xml")
                   for x in a.reference_payload)


def test_the_decisions_a_curator_signs(compiled: dict[str, Any]) -> None:
    """The cases of issue 41 decided as a curator would: the 4103 ReadMe, whose root checksum file the record
    marks invalid while a byte-identical copy's is valid and agrees, is submitted (reading the copy); no task rests
    on a beam profile or an uncertainty analysis as the calibration of mds2-2525's data (no statement names them
    so); calibrations come from what measurement rows name; the Al_* results that say aluminium in a Ti-6Al-4V record
    escalate; the 2.1.0 changes no changelog item states escalate."""
    _, evidence, answers, _ = load_package(compiled["root"] / "pkg")

    def on(title: str) -> list[TaskAnswer]:
        return [a for a in answers.values() if (evidence[a.binding[0]].title or "") == title]

    readme = on("ReadMe")
    assert readme and all(a.reference_class.value == "submit_risk_packet" for a in readme)
    assert all(any(x.endswith("Cross_Sections/Tracks_Results") for x in a.needed) for a in readme)
    assert all(a.gold_facts == ["resolved:ev:ark:/88434/mds2-4103@1.0.0/4103_ReadMe.txt"] for a in readme)
    for a in answers.values():
        if a.family.value == "calibration_sufficiency":
            assert all(evidence[x].provenance == "measurement" for x in a.reference_payload)
        assert not any("Beam Profile" in (evidence[x].title or "") or "Uncertainty" in (evidence[x].title or "")
                       for x in a.reference_payload)
    aluminium = [a for a in answers.values() if (evidence[a.binding[0]].title or "").startswith("Al_")]
    assert aluminium and all(a.reference_class.value == "abstain_or_escalate" for a in aluminium)
    changes = [a for a in answers.values() if any(f.startswith(("change:", "batch:")) for f in a.gold_facts)]
    assert changes and all(a.reference_class.value == "abstain_or_escalate" for a in changes)
    assert all("2.0.0-to-2.1.0" in (evidence[a.binding[0]].title or "") for a in changes)


def test_compiling_twice_gives_identical_bytes(compiled: dict[str, Any]) -> None:
    again = compile_package(compiled["graph"], compiled["root"] / "pkg2")
    assert again.content_hash == compiled["summary"].content_hash
    for name in ("tasks.jsonl", "evidence.jsonl", "answers.jsonl", "manifest.json"):
        assert (compiled["root"] / "pkg2" / name).read_bytes() == (compiled["root"] / "pkg" / name).read_bytes()


def _keys(obj: Any) -> set[str]:
    if isinstance(obj, dict):
        return set(obj) | {k for v in obj.values() for k in _keys(v)}
    if isinstance(obj, list):
        return {k for v in obj for k in _keys(v)}
    return set()


def test_no_verifier_only_field_reaches_a_policy(compiled: dict[str, Any]) -> None:
    pkg = compiled["root"] / "pkg"
    tasks = [json.loads(x) for x in (pkg / "tasks.jsonl").read_text().splitlines()]
    answers = {a["task_id"]: TaskAnswer.model_validate(a)
               for a in (json.loads(x) for x in (pkg / "answers.jsonl").read_text().splitlines())}
    families = {a.family.value for a in answers.values()}
    for task in tasks:
        TaskView.model_validate(task)  # extra="forbid": nothing beyond the declared policy-visible fields
        assert not (_keys(task) & VERIFIER_ONLY), task["task_id"]
        text = json.dumps(task)
        for action in task["actions"]:  # `localize_missing_evidence` is an action name, not a family label
            text = text.replace(action, "")
        assert not any(f in text for f in families), f"{task['task_id']} names its family"
        answer = answers[task["task_id"]]
        assert answer.moment_id not in text and answer.decision not in text
        assert not any(f in text for f in answer.source_facts if f.startswith("defect:"))  # the answer key


def test_observations_show_facts_not_verdicts(compiled: dict[str, Any]) -> None:
    """No defect kind, rule name, defect id or defect list in anything a policy can see: the tasks, the
    evidence file, and every observation a request returned in any run."""
    root = compiled["root"]
    graph: Graph = compiled["graph"]
    with graph._driver.session() as s:  # noqa: SLF001 - the test inspects the graph directly
        defect_ids = [r["id"] for r in s.run("MATCH (d:Defect) RETURN d.id AS id")]
    assert defect_ids, "the shared archives hold defects"
    forbidden = [k.value for k in DefectKind] + list(RULES) + defect_ids
    observations = [json.dumps(st["observation"]) for p in [*BASELINES, *PROBE_RUNS]
                    for st in read_jsonl(root / p / "observations.jsonl")]
    assert observations
    for name in ("tasks.jsonl", "evidence.jsonl"):
        text = (root / "pkg" / name).read_text()
        hits = [f for f in forbidden if f in text]
        assert not hits, (name, hits[:5])
    for obs in observations:
        assert not [f for f in forbidden if f in obs]
    for obj in (json.loads(x) for x in (root / "pkg" / "evidence.jsonl").read_text().splitlines()):
        assert not (_keys(obj) & VERIFIER_ONLY), obj["evidence_id"]


def test_an_observation_states_what_a_reviewer_would_see(compiled: dict[str, Any]) -> None:
    """The folder whose checksum records disagree shows each checksum file beside the digest it should match;
    a held CSV shows its recomputed digest; a removed release file shows the rows and changelog lines."""
    _, evidence, _, _ = load_package(compiled["root"] / "pkg")
    tracks = evidence["ev:ark:/88434/mds2-4103@1.0.0/Cross_Sections/Tracks_Results"]
    sidecars = [s for m in tracks.metadata["members"] for s in m["checksum_files"]]
    assert len(sidecars) >= 36
    disagree = [s for s in sidecars if s["declared_sha256"] != s["sha256_of_target_digest"]]
    assert len(disagree) == 36  # the record's 36 pixel_points sidecars whose checksum is not sha256(digest)
    assert all(f.source and f.source["path"] == "nerdm.json" for f in tracks.facts)
    csv = evidence.get("ev:ark:/88434/mds2-2525@1.3.2/Al_Spot_AA_ASR_Results.csv")
    if csv is not None:  # on a menu as a distractor or subject
        assert csv.metadata["local_sha256"] == csv.metadata["declared_sha256"] and csv.metadata["held"]
    removed = next(o for o in evidence.values() if o.title and o.title.startswith("AMB2022-718-AMMT-B6-P2-L7.xml ")
                   and o.status == "unavailable" and "2.1.0" in o.title)
    texts = " ".join(f.statement for f in removed.facts)
    assert "a0cbeedce532933cae84b7350fb624faf8d820e0" in texts and "changelog" in texts


def test_menus_do_not_depend_on_the_family(compiled: dict[str, Any]) -> None:
    """Menu choice and order are seeded by the workflow and subject only: trying each family name against
    the visible order (as an adversary did with an earlier seed) recovers nothing."""
    from dataclasses import replace

    from voe.artifacts.package import Family
    from voe.compiler.moments import find_moments, load_catalog, materialize
    from voe.replay.admission import ReplayAdmission

    graph: Graph = compiled["graph"]
    cat = load_catalog(graph)
    for m in find_moments(graph, cat, ReplayAdmission())[:12]:
        menus = {tuple(e.evidence_id for e in materialize(replace(m, family=f), cat)[0].menu) for f in Family}
        assert len(menus) == 1, m.subject


def test_task_ids_are_made_from_the_packet_only(compiled: dict[str, Any]) -> None:
    """A task's id is its packet (subject, shape, support), all of it named by the question, so the id is
    computed here from the task view alone: an id hashed from hidden inputs (family, gold facts) could be inverted
    by a policy; this one cannot, and it does not change when another archive is compiled beside it
    (tests/compiler/test_new_archive.py)."""
    from voe.artifacts.question import read

    views, _, _, _ = load_package(compiled["root"] / "pkg")
    for v in views:
        r = read(v)
        shape = "calibration" if r.calibration else "document" if r.support else "alone"
        visible = ["task", r.subject or "", shape, *r.support]
        assert v.task_id == "task:" + hashlib.sha256("\x1f".join(visible).encode()).hexdigest()[:16], v.question


def test_requests_return_only_what_the_archive_holds(compiled: dict[str, Any]) -> None:
    graph: Graph = compiled["graph"]
    _, evidence, _, _ = load_package(compiled["root"] / "pkg")
    with graph._driver.session() as s:  # noqa: SLF001 - the test inspects the graph directly
        held = {r["id"]: r.data() for r in s.run(
            "MATCH (e:Evidence) OPTIONAL MATCH (e)-[:EVIDENCED_BY]->(c:Component) "
            "RETURN e.id AS id, e.available AS available, e.provenance AS provenance, c.filepath AS path")}
        located = {(r["path"], r["locator"]) for r in s.run(
            "MATCH (l:SourceLocation) RETURN l.path AS path, coalesce(l.locator, l.pointer) AS locator")}
    for eid, obj in evidence.items():
        row = held[eid]
        if obj.status == "unavailable":
            assert row["available"] is False or row["path"] is None
        elif obj.status == "referenced":
            assert row["provenance"] == "referenced" and row["path"] is None
        else:
            assert row["available"] is not False
            if row["path"] is not None:
                assert obj.metadata["path"] == row["path"]
        for fact in obj.facts:  # every stated fact points at a place that exists in an archive file
            assert fact.source is not None and (fact.source["path"], fact.source["locator"]) in located, fact


def test_release_gate(compiled: dict[str, Any]) -> None:
    """The gate of `voe compile` (recorded in the manifest) and the same policies scored by the Cypher
    verifier agree, and the package passes: reference on every task, every probe far below it."""
    runs = compiled["runs"]
    tasks = compiled["summary"].tasks
    manifest = json.loads((compiled["root"] / "pkg" / "manifest.json").read_text())
    gate = {r["policy"]: r for r in manifest["gate"]["rows"]}
    assert manifest["gate"]["passed"] and compiled["summary"].gate_passed
    assert set(gate) >= {"reference", *BASELINES, *(s.short for s in specs("probe")), "best_rules", "status_blind",
                         "named_packet"}
    for policy in [*BASELINES, *PROBE_RUNS]:
        name = policy.removeprefix("probe:")
        summary = runs[policy][0]
        passes = summary["passes"]
        if name != "random":  # the gate replays one pass with seed 0, the runs above use other seeds
            assert summary["evidence_grounded_valid"]["count"] == gate[name]["valid"] * passes, policy
    assert gate["reference"]["valid"] == tasks
    for name, row in gate.items():
        if name != "reference" and row["limit"] is not None:
            assert row["valid"] <= tasks * row["limit"], (name, row)
    assert all(gate[n]["limit"] == 0.4 for n in ("tfidf_nn_lowo", "tfidf_logreg_lowo"))
    assert all(gate[n]["limit"] is None for n in ("tfidf_nn_loto", "tfidf_logreg_loto", "structure_forest_loto"))
    assert all(gate[n]["limit"] == 0.5 for n in ("unheld_flag", "chained_rules", "status_blind", "named_packet",
                                                 "best_rules", "structure_forest_lowo", "structure_boosting_lowo",
                                                 "structure_logreg_lowo"))
    # met with a margin: selection holds every rule 5 points under its limit
    for name in ("status_blind", "named_packet", "best_rules"):
        assert gate[name]["rate"] <= 0.45, (name, gate[name])
    assert gate["best_rules"]["detail"] and not any(r["kind"] == "error" for r in gate.values())
    # null policies: blanket submission and blanket refusal never pull evidence, so nothing they do is grounded
    assert gate["submit_all"]["valid"] == 0 and gate["refuse_all"]["valid"] == 0


def _python_verdict(tr: dict[str, Any], answer: TaskAnswer) -> tuple[bool, bool, bool]:
    return verdict(tr["terminal_class"], tr["payload"], tr["requested"], answer)


def test_over_inclusive_payloads_are_rejected(compiled: dict[str, Any]) -> None:
    """A flag that also names a clean pulled item, and a submit that adds an item beyond the packet, fail
    check (2) in the Cypher verifier; the exact payloads pass."""
    root = compiled["root"]
    views, _, answers, _ = load_package(root / "pkg")

    def pull_all_then(extra: bool, cls: str) -> Any:
        def policy(view: TaskView, answer: Any, history: list[dict[str, Any]], rng: Any) -> Any:
            if len(history) < len(view.menu):
                e = view.menu[len(history)]
                return {"action": e.request_action.value, "evidence_id": e.evidence_id}
            gold = gold_payload.get(view.task_id, [])
            return {"action": cls, "payload": gold + (clean_extra[view.task_id][:1] if extra else [])}
        return policy

    for cls, family in (("flag_source_defect", "source_integrity"), ("submit_risk_packet", "packet_submission")):
        gold_payload = {v.task_id: list(answers[v.task_id].reference_payload) for v in views
                        if answers[v.task_id].family.value == family}
        # an item the class may not name: clean for a flag, outside the packet for a submit
        clean_extra = {v.task_id: [e.evidence_id for e in v.menu
                                   if e.evidence_id not in answers[v.task_id].may_bind[cls]] for v in views}
        targets = {t for t in gold_payload if clean_extra[t]}
        assert len(targets) >= 3
        for extra in (False, True):
            name = f"strict-{cls.split('_')[0]}" + ("-extra" if extra else "")
            run_policy(root / "pkg", name, 1, 0, root / name, policy_fn=pull_all_then(extra, cls))
            _, scores = score_run(compiled["graph"], root / name)
            got = {s.task_id: s.valid for s in scores if s.task_id in targets}
            if extra:
                assert not any(got.values()), (name, got)
            else:
                assert all(got.values()), (name, got)


def test_bad_actions_get_their_outcome_and_label(compiled: dict[str, Any]) -> None:
    root = compiled["root"]
    views, _, answers, _ = load_package(root / "pkg")
    target = next(v for v in views if answers[v.task_id].reference_class.value == "submit_risk_packet"
                  and answers[v.task_id].needed)
    never_pulled = target.menu[0].evidence_id
    scripts: dict[str, Any] = {  # each action is repeated until the episode ends
        "parse": "{not json",
        "off_menu": {"action": "request_characterization", "evidence_id": "ev:not/on/the/menu"},
        "ungrounded": {"action": "submit_risk_packet", "payload": [never_pulled]},
    }
    labels = {}
    for name, script in scripts.items():
        def scripted(view: TaskView, answer: Any, history: list[dict[str, Any]], rng: Any, s: Any = script) -> Any:
            return s

        run_policy(root / "pkg", f"scripted-{name}", 1, 0, root / f"bad-{name}", policy_fn=scripted)
        summary, scores = score_run(compiled["graph"], root / f"bad-{name}")
        labels[name] = next(s.label for s in scores if s.task_id == target.task_id)
        steps = read_jsonl(root / f"bad-{name}" / "steps.jsonl")
        first = next(s for s in steps if s["task_id"] == target.task_id)
        if name == "parse":
            assert first["outcome"] == "parse_error"
        if name == "off_menu":
            assert first["outcome"] == "off_menu" and first["evidence_id"] == "ev:not/on/the/menu"
        if name != "ungrounded":  # no crash: the episode runs to its horizon and is recorded as such
            trajectory = next(t for t in read_jsonl(root / f"bad-{name}" / "trajectories.jsonl")
                              if t["task_id"] == target.task_id)
            assert trajectory["end"] == "horizon_exhausted" and trajectory["steps"] == target.horizon
    assert labels == {"parse": "parse_error", "off_menu": "off_menu", "ungrounded": "payload_grounding_error"}


def test_score_json_and_report(compiled: dict[str, Any], cli_env: dict[str, str]) -> None:
    root = compiled["root"]
    proc = subprocess.run([sys.executable, "-m", "voe.cli", "score", str(root / "random"), "--compare", str(root / "reference"),
                           "--json"], capture_output=True, text=True, env=cli_env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    for key in ("policy", "tasks", "passes", "evidence_grounded_valid", "action_valid", "useful_precision",
                "evidence_regret", "cost_score", "over_submit", "by_family", "codebook"):
        assert key in out
    egv = out["evidence_grounded_valid"]
    assert 0 <= egv["ci95"][0] <= egv["mean"] <= egv["ci95"][1] <= 1 and egv["count"] <= egv["n"]
    assert all(0 <= out[k] <= 1 for k in ("useful_precision", "cost_score", "over_submit"))
    paired = out["paired"]
    assert paired["mean_difference"] < 0 and paired["method"] == "clustered by workflow and gold fact"
    assert paired["ci95"][0] <= paired["mean_difference"] <= paired["ci95"][1] and paired["clusters"] >= 2
    assert len(paired["discordant_tasks"]) == paired["a_only_valid"] + paired["b_only_valid"]
    assert paired["discordant_clusters"] and set(paired["ci95_unclustered"]) != set(paired["ci95"])
    ref = compiled["runs"]["reference"][0]
    assert ref["cost_score"] == 1.0 and ref["codebook"] == {"reference_path": 3 * compiled["summary"].tasks}
    clustered = ref["evidence_grounded_valid"]
    # a fact two workflows rest on joins them (a calibration named in two sheets): clusters <= workflows
    sdd = json.loads((root / "pkg" / "manifest.json").read_text())["counts"]["detectable_difference"]
    assert clustered["clusters"] == sdd["clusters"] <= compiled["summary"].workflows
    # every task valid: not a certainty but the exact interval of that many clusters, each counted once
    assert tuple(clustered["ci95"]) == pytest.approx((0.025 ** (1 / clustered["clusters"]), 1.0))
    assert 0 < sdd["sdd"] < 1 and sdd["discordant_tasks"] >= 2
    assert clustered["method"].startswith("clopper_pearson_over_clusters") and "zero width" in clustered["passes_method"]
    rnd = out["evidence_grounded_valid"]  # the random policy: tasks of one workflow are not independent
    assert rnd["clusters"] == sdd["clusters"] and rnd["ci95"][0] <= rnd["mean"] <= rnd["ci95"][1]
    no_server = {**cli_env, "NEO4J_URI": "bolt://127.0.0.1:1"}  # the report reads the scores: no Neo4j
    proc = subprocess.run([sys.executable, "-m", "voe.cli", "report", *(str(root / p) for p in BASELINES), "--out",
                           str(root / "report")], capture_output=True, text=True, env=no_server)
    assert proc.returncode == 0, proc.stderr
    md = (root / "report" / "report.md").read_text()
    assert "| reference | " in md and "source_integrity" in md and "over_abstain" in md
    assert (root / "report" / "validity.png").stat().st_size > 1000
    stale = root / "random-stale"
    shutil.copytree(root / "random", stale)
    (stale / "trajectories.jsonl").write_text((stale / "trajectories.jsonl").read_text().replace('"steps": ', '"steps": 1', 1))
    for damage, message in ((None, "changed since it was scored"), ("summary.json", "is not scored yet")):
        if damage:
            (stale / damage).unlink()
        proc = subprocess.run([sys.executable, "-m", "voe.cli", "report", str(stale), "--out", str(root / "report2")],
                              capture_output=True, text=True, env=no_server)
        assert proc.returncode == 2 and message in proc.stderr and f"voe score {stale}" in proc.stderr, proc.stderr


def test_admission_filters_reject_what_they_name(compiled: dict[str, Any]) -> None:
    from voe.compiler.package import admission_failures

    views, _, answers, _ = load_package(compiled["root"] / "pkg")
    view, answer = views[0], answers[views[0].task_id]
    known = {e.evidence_id for v in views for e in v.menu}
    assert admission_failures(view, answer, known) == []
    bad_menu = view.model_copy(update={"menu": [*view.menu[1:], view.menu[0].model_copy(update={"evidence_id": "ev:x"})]})
    assert any("do not exist" in f for f in admission_failures(bad_menu, answer, known))
    lazy = answer.model_copy(update={"needed": [*answer.needed, "ev:never-pulled"]})
    assert any("verifier does not match" in f for f in admission_failures(view, lazy, known))
    off = answer.model_copy(update={"binding": ["ev:elsewhere"]})
    assert any("not on its menu" in f for f in admission_failures(view, off, known))
    leaky = view.model_copy(update={"question": view.question + " " + answer.moment_id})
    assert any("answer artifact" in f for f in admission_failures(leaky, answer, known))
    wrong_path = answer.model_copy(update={"reference_payload": ["ev:not-pulled"]})
    assert any("reference path does not match" in f for f in admission_failures(view, wrong_path, known))
    assert compiled["summary"].model_dump()["tasks"] == len(views)


def test_cli_compile_with_archive_ingests_first_and_prints_the_summary(
    compiled: dict[str, Any], archives: Path, cli_env: dict[str, str]
) -> None:
    out = compiled["root"] / "pkg-cli"
    proc = subprocess.run([sys.executable, "-m", "voe.cli", "compile", "--archive", str(archives / "mds2-2106"),
                           "--out", str(out), "--json"], capture_output=True, text=True, env=cli_env)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert set(summary) >= {"tasks", "workflows", "families", "evidence_entries", "canonical_evidence",
                            "content_hash", "out"}
    # mds2-2106 was already in the graph: re-ingesting it is a no-op, so the package is the same
    assert summary["content_hash"] == compiled["summary"].content_hash
    # progress on stderr (not a terminal: one line per stage and per finished bar), --json notwithstanding
    lines = proc.stderr.splitlines()
    assert any(ln.endswith("workflows") and "decision moments in" in ln for ln in lines), proc.stderr
    assert any(ln.startswith("frame: ") and " moments in " in ln for ln in lines), proc.stderr
    assert any(ln.startswith("release gate: ") for ln in lines), proc.stderr


def test_every_admission_decision_is_in_the_graph(compiled: dict[str, Any]) -> None:
    graph: Graph = compiled["graph"]
    manifest = json.loads((compiled["root"] / "pkg" / "manifest.json").read_text())
    with graph._driver.session() as s:  # noqa: SLF001
        rows = s.run("MATCH (m:DecisionMoment {package: $p}) RETURN m.admitted AS admitted, count(*) AS n, "
                     "collect(m.rejection) AS why", p=manifest["content_hash"]).data()
    by = {r["admitted"]: r for r in rows}
    assert by[True]["n"] == manifest["counts"]["tasks"]
    assert by.get(False, {"n": 0})["n"] == manifest["counts"]["rejected"]
    assert all(why for why in by.get(False, {"why": []})["why"])


def test_the_same_visible_question_never_has_two_gold_answers(compiled: dict[str, Any]) -> None:
    views, _, answers, _ = load_package(compiled["root"] / "pkg")
    gold: dict[tuple[str, frozenset[str]], tuple[Any, ...]] = {}
    for v in views:
        a = answers[v.task_id]
        key = (v.question, frozenset(e.evidence_id for e in v.menu))
        answer_key = (frozenset(a.accepted_classes), tuple(sorted((k, tuple(x)) for k, x in a.must_bind.items())))
        assert gold.setdefault(key, answer_key) == answer_key, v.task_id


def test_cypher_and_python_verdicts_agree_everywhere(compiled: dict[str, Any]) -> None:
    _, _, answers, _ = load_package(compiled["root"] / "pkg")
    checked = 0
    for policy in [*BASELINES, *PROBE_RUNS, "strict-flag", "strict-flag-extra", "strict-submit",
                   "strict-submit-extra"]:
        run_dir = compiled["root"] / policy
        if not run_dir.exists():
            continue
        # both Cypher paths: the batches' statements as they write the run (the graph having forgotten it), and
        # the verify query over the run the graph then holds
        run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
        compiled["graph"].execute("verifiers/clear_run", run_id=run_id)
        written = verify_run(compiled["graph"], run_dir)
        held = graph_verdicts(compiled["graph"].query("verifiers/verify_trajectories", run_id=run_id))
        assert held == written
        verdicts = {v.trajectory_id: v for v in written}
        for tr in read_jsonl(run_dir / "trajectories.jsonl"):
            v = verdicts[tr["trajectory_id"]]
            assert (v.action_valid, v.payload_bound, v.grounded) == _python_verdict(tr, answers[tr["task_id"]])
            checked += 1
    assert checked >= (5 * 3 + len(PROBE_RUNS)) * compiled["summary"].tasks


GOLDEN = Path(__file__).parent / "golden" / "shared_package.json"


def _pinned(compiled: dict[str, Any]) -> dict[str, Any]:
    root = compiled["root"]
    manifest = json.loads((root / "pkg" / "manifest.json").read_text())
    runs = {}
    for policy, (summary, _) in sorted(compiled["runs"].items()):
        runs[policy] = {
            "egv": summary["evidence_grounded_valid"]["mean"], "action_valid": summary["action_valid"]["mean"],
            "codebook": summary["codebook"],
            # every trajectory's file as `voe run` wrote it, and every score: byte for byte
            "trajectories_sha256": hashlib.sha256((root / policy / "trajectories.jsonl").read_bytes()).hexdigest(),
            # the steps joined with their observations, as one line each (run schema 1's steps.jsonl: the split
            # of schema 2 loses nothing), and the two files schema 2 writes
            "steps_sha256": hashlib.sha256("".join(json.dumps(r.model_dump(mode="json"), sort_keys=True) + "\n"
                                                   for r in read_steps(root / policy)).encode()).hexdigest(),
            "step_files_sha256": [hashlib.sha256((root / policy / n).read_bytes()).hexdigest()
                                  for n in ("steps.jsonl", "observations.jsonl")],
            "scores_sha256": hashlib.sha256((root / policy / "scores.jsonl").read_bytes()).hexdigest()}
    return {"content_hash": manifest["content_hash"], "files": manifest["files"], "runs": runs}


def test_the_package_and_every_baseline_score_are_pinned(compiled: dict[str, Any]) -> None:
    """A golden file (sqlglot style) for refactorings: the compiled shared package and every baseline's and
    probe's run and scores, byte for byte. A change to tasks or scoring that is meant updates it with
    VOE_UPDATE_GOLDEN=1 and says why in its commit."""
    pinned = _pinned(compiled)
    if os.environ.get("VOE_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps(pinned, indent=1, sort_keys=True) + "\n")
    golden = json.loads(GOLDEN.read_text())
    assert pinned["content_hash"] == golden["content_hash"], "the compiled package changed"
    for policy, expected in golden["runs"].items():
        assert pinned["runs"][policy] == expected, policy
    assert pinned == golden
