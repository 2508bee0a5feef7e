"""Training sets (`voe export-training`, export/training.py): each row valid against its schema, splits that never
share a workflow, prompts with nothing verifier-only, preference pairs that are what the labels say, and files
that Hugging Face `datasets` loads offline from the dataset card."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from voe.artifacts.package import load_package
from voe.export.crate import export_package
from voe.export.training import FORMATS, MODELS, export_training, read_training, split_of
from voe.graph import Graph
from voe.jsonl import read_jsonl
from voe.replay.runner import run_policy
from voe.verifiers.labels import label_package
from voe.verifiers.score import score_run


@pytest.fixture(scope="module")
def exported(package: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("training")
    runs = [root / "random", root / "everything", root / "reference"]
    run_policy(package, "random", 2, 1, runs[0])
    run_policy(package, "request_everything", 1, 0, runs[1])
    run_policy(package, "reference", 1, 0, runs[2])
    out = root / "out"
    info = export_training(package, runs, out)
    return {"root": root, "runs": runs, "out": out, "info": info}


def test_every_row_is_valid_against_its_schema_and_the_counts_are_the_files(exported: dict[str, Any]) -> None:
    out, info = exported["out"], exported["info"]
    for fmt in FORMATS:
        schema = json.loads((out / "schema" / f"{fmt}.schema.json").read_text())
        assert schema["x-voe-schema-version"] == info.schema_version == 2
        validator = jsonschema.Draft202012Validator(schema)
        rows = read_training(out, fmt)
        assert rows and len(rows) == sum(info.counts[fmt].values())
        for row in rows:
            validator.validate(row)
    assert json.loads((out / "training.json").read_text())["counts"] == info.counts


def test_no_workflow_is_in_two_splits(exported: dict[str, Any], package: Path) -> None:
    out = exported["out"]
    for fmt in FORMATS:
        seen: dict[str, str] = {}
        for split in ("train", "validation", "test"):
            path = out / fmt / f"{split}.jsonl"
            for row in read_jsonl(path) if path.is_file() else []:
                assert seen.setdefault(row["workflow_id"], split) == split == split_of(row["workflow_id"])
    views, _, _, _ = load_package(package)
    assert set().union(*exported["info"].workflows.values()) == {v.workflow_id for v in views}


def test_prompts_hold_nothing_verifier_only(exported: dict[str, Any], package: Path) -> None:
    _, _, answers, _ = load_package(package)
    secrets = {a.moment_id for a in answers.values()} | {a.decision for a in answers.values()}
    secrets |= {f for a in answers.values() for f in (*a.source_facts, *a.gold_facts)}
    secrets |= {a.family.value for a in answers.values()}
    visible = (package / "tasks.jsonl").read_text() + (package / "evidence.jsonl").read_text()
    secrets = {x for x in secrets if x not in visible}  # a gold fact may be an evidence id, which a policy sees
    assert len(secrets) >= len(answers)  # moment ids and decisions at least
    text = "".join((exported["out"] / fmt / f"{s}.jsonl").read_text() for fmt in ("sft", "preference")
                   for s in ("train", "validation", "test") if (exported["out"] / fmt / f"{s}.jsonl").is_file())
    assert not [s for s in secrets if s in text]
    assert '"sufficient"' not in text and '"cost_to_go"' not in text


def test_sft_holds_the_reference_and_only_valid_run_trajectories(exported: dict[str, Any], package: Path) -> None:
    views, _, answers, _ = load_package(package)
    rows = read_training(exported["out"], "sft")
    reference = [r for r in rows if "reference" in r["sources"]]
    assert len(reference) == len(views) and all(r["source"] == "reference" for r in reference)
    for row in reference:
        said = [json.loads(m["content"]) for m in row["messages"] if m["role"] == "assistant"]
        assert [s["action"] for s in said] == [step.action.value for step in answers[row["task_id"]].reference]
        assert row["messages"][0]["role"] == "system" and "Question:" in row["messages"][1]["content"]
    labelled = label_package(package, exported["root"] / "labels", exported["runs"])  # beside the runs
    valid = {r["trajectory_id"] for run in exported["runs"]
             for r in read_jsonl(exported["root"] / "labels" / labelled.step_files[str(run)])
             if r["outcome"] == "terminal" and r["valid"]}
    unclean = {s["trajectory_id"] for run in exported["runs"] for s in read_jsonl(run / "steps.jsonl")
               if s["outcome"] in ("parse_error", "off_menu", "duplicate")}
    # every valid, clean trajectory is a row or counted on one; identical conversations are one row
    assert sum(r["count"] for r in rows) == len(views) + len(valid - unclean)
    assert all(r["count"] == len(r["sources"]) for r in rows)
    conversations = [json.dumps([r["task_id"], r["messages"]]) for r in rows]
    assert len(conversations) == len(set(conversations))
    # the reference run plays the reference's conversations: it is counted on their rows, not repeated
    reference_run = json.loads((exported["runs"][2] / "run.json").read_text())["run_id"]
    assert all(reference_run in r["sources"] for r in reference)


def test_a_preference_pair_is_an_optimal_action_against_the_one_taken(exported: dict[str, Any]) -> None:
    rows = read_training(exported["out"], "preference")
    assert rows
    steps = {(s["trajectory_id"], s["t"]): s for run in exported["runs"] for s in read_jsonl(run / "steps.jsonl")}
    for row in rows:
        assert row["chosen_value"] == 0.0 > row["rejected_value"]
        taken = steps[(row["trajectory_id"], row["t"])]
        rejected = json.loads(row["rejected"][0]["content"])
        assert rejected.get("action", taken["action"]) == taken["action"]
        assert row["prompt"][-1]["role"] in ("user", "system") and len(row["prompt"]) == 2 + 2 * row["t"]


def test_datasets_loads_every_format_from_the_card(exported: dict[str, Any], tmp_path: Path) -> None:
    code = f"""
import json, sys
from datasets import load_dataset
out = {str(exported["out"])!r}
counts = {{}}
for fmt in ("sft", "preference", "value"):
    ds = load_dataset(out, fmt)
    counts[fmt] = {{split: ds[split].num_rows for split in ds}}
print(json.dumps(counts))
"""
    env = {"HF_HOME": str(tmp_path / "hf"), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
           "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == exported["info"].counts


def test_voe_export_training_cli(package: Path, exported: dict[str, Any], tmp_path: Path,
                                 cli_env: dict[str, str]) -> None:
    out = tmp_path / "prefs"
    proc = subprocess.run([sys.executable, "-m", "voe.cli", "export-training", str(package), "--runs",
                           str(exported["runs"][0]), "--format", "preference", "--out", str(out), "--json"],
                          capture_output=True, text=True, env=cli_env)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["formats"] == ["preference"] and not (out / "sft").exists()
    assert "config_name: preference" in (out / "README.md").read_text()
    other = tmp_path / "other-run"
    other.mkdir()
    record = json.loads((Path(exported["runs"][0]) / "run.json").read_text())  # a real run's record, of another package
    (other / "run.json").write_text(json.dumps({**record, "content_hash": "0" * 64}))
    bad = subprocess.run([sys.executable, "-m", "voe.cli", "export-training", str(package), "--runs", str(other),
                          "--out", str(tmp_path / "x")], capture_output=True, text=True, env=cli_env)
    assert bad.returncode == 2 and "another package" in bad.stderr and "Traceback" not in bad.stderr


def test_an_export_with_runs_and_answers_carries_the_training_sets_described(
        package: Path, exported: dict[str, Any], _session_graph: Graph, tmp_path: Path) -> None:
    import mlcroissant as mlc  # type: ignore[import-untyped,unused-ignore]

    run = exported["runs"][0]
    score_run(_session_graph, run)
    out = tmp_path / "crate"
    summary = export_package(package, out, include_answers=True, runs=[run], date="2026-12-01")
    own = export_training(package, [run], tmp_path / "alone")
    assert summary.training == {fmt: sum(n.values()) for fmt, n in own.counts.items()}
    crate = json.loads((out / "ro-crate-metadata.json").read_text())
    parts = {p["@id"]: p for p in crate["@graph"] if str(p["@id"]).startswith("training/")}
    files = {str(p.relative_to(out)) for p in (out / "training").rglob("*") if p.is_file()}
    assert set(parts) == {f for f in files if "/schema/" not in f} and all(p["voe:verifierOnly"] for p in parts.values())
    for name, part in parts.items():
        assert part["sha256"] == hashlib.sha256((out / name).read_bytes()).hexdigest()
    ds = mlc.Dataset(str(out / "croissant.json"))
    described = {rs["name"]: {f["name"] for f in rs["field"]}
                 for rs in json.loads((out / "croissant.json").read_text())["recordSet"]}
    for fmt, splits in own.counts.items():
        for split, n in splits.items():
            rs = f"training_{fmt}_{split}"
            records = list(ds.records(rs))
            assert len(records) == n and set(MODELS[fmt].model_fields) <= described[rs]  # every field described
            if fmt == "sft":  # the nested messages read back as the file holds them
                lines = [json.loads(x) for x in (out / "training" / fmt / f"{split}.jsonl").read_text().splitlines()]
                assert [[(m[f"{rs}/messages/role"].decode(), m[f"{rs}/messages/content"].decode())
                         for m in r[f"{rs}/messages"]] for r in records] == [
                    [(m["role"], m["content"]) for m in line["messages"]] for line in lines]
    policy_only = export_package(package, tmp_path / "runs-only", runs=[run])
    assert policy_only.training == {} and not (tmp_path / "runs-only" / "training").exists()


def test_an_empty_split_is_said_and_the_card_states_the_real_split(exported: dict[str, Any]) -> None:
    info = exported["info"]
    empty = [s for s in ("train", "validation", "test") if not info.workflows[s]]
    assert [w.split(" split is empty")[0].removeprefix("the ") for w in info.warnings] == empty
    card = (exported["out"] / "README.md").read_text()
    assert "aiming at 80/10/10" in card and "This set's real split:" in card
    assert f"sft train {info.counts['sft'].get('train', 0)} rows" in card
    assert all(w in card for w in info.warnings)
    assert f"Merged away: sft {info.merged['sft']}" in card
