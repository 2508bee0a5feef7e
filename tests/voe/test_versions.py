"""Every file voe writes carries its schema version; a reader refuses another one with what to do."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from voe.artifacts.package import load_package
from voe.artifacts.scores import load_scored
from voe.errors import InputError
from voe.graph import Graph
from voe.replay.runner import run_policy
from voe.verifiers.score import score_run
from voe.versions import PACKAGE_VERSION, RUN_SCHEMA_VERSION, SCORES_SCHEMA_VERSION


def _edit(path: Path, **changes: object) -> None:
    doc = json.loads(path.read_text())
    for k, v in changes.items():
        if v is None:
            doc.pop(k, None)
        else:
            doc[k] = v
    path.write_text(json.dumps(doc))


def test_every_artifact_is_versioned_and_other_versions_are_refused(package: Path, _session_graph: Graph,
                                                                    tmp_path: Path) -> None:
    assert json.loads((package / "manifest.json").read_text())["package_version"] == PACKAGE_VERSION
    assert {p.name for p in (package / "schema").iterdir()} >= {"task.schema.json", "manifest.schema.json"}
    run = tmp_path / "run"
    run_policy(package, "random", 1, 0, run)
    assert json.loads((run / "run.json").read_text())["schema_version"] == RUN_SCHEMA_VERSION
    score_run(_session_graph, run)
    assert json.loads((run / "summary.json").read_text())["schema_version"] == SCORES_SCHEMA_VERSION
    assert {p.name for p in (run / "schema").iterdir()} == {"run.schema.json", "step.schema.json",
                                                            "observation.schema.json", "trajectory.schema.json",
                                                            "score.schema.json"}
    load_scored(run)
    # each schema names its version, and the lines of the files beside it are instances of it
    checked = 0
    for folder, kind, version, pairs in ((package, "package", PACKAGE_VERSION, (("task", "tasks.jsonl"),
                                                                              ("evidence", "evidence.jsonl"),
                                                                              ("answer", "answers.jsonl"))),
                                         (run, "run", RUN_SCHEMA_VERSION, (("step", "steps.jsonl"),
                                                                          ("observation", "observations.jsonl"),
                                                                          ("trajectory", "trajectories.jsonl"))),
                                         (run, "scores", SCORES_SCHEMA_VERSION, (("score", "scores.jsonl"),))):
        for name, data in pairs:
            schema = json.loads((folder / "schema" / f"{name}.schema.json").read_text())
            assert schema["$id"] == f"urn:voe:schema:{kind}:{version}:{name}"
            assert schema["x-voe-schema-version"] == version
            validator = jsonschema.Draft202012Validator(schema)
            for line in (folder / data).read_text().splitlines()[:50]:
                validator.validate(json.loads(line))
                checked += 1
    assert checked > 100

    newer = tmp_path / "pkg-newer"
    shutil.copytree(package, newer)
    _edit(newer / "manifest.json", package_version=PACKAGE_VERSION + 1)
    with pytest.raises(InputError, match="newer than this voe reads"):
        load_package(newer)
    _edit(run / "summary.json", schema_version=SCORES_SCHEMA_VERSION + 1)
    with pytest.raises(InputError, match=r"newer than this voe reads.*`voe score`"):
        load_scored(run)
    _edit(run / "run.json", schema_version=None)
    with pytest.raises(InputError, match=r"has no schema version.*`voe run`"):
        score_run(_session_graph, run)
