"""voe/artifacts/run.py: `read_run_info`, the one reader of run.json every later stage starts from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from voe.artifacts.run import RunInfo, read_run_info
from voe.errors import InputError

RECORD = RunInfo(run_id="run:x", policy="random", passes=1, seed=0, package="/p", content_hash="a" * 64, tasks=2,
                 trajectories=2, seconds=0.1).model_dump()


def _run(tmp_path: Path, record: object, raw: str | None = None) -> Path:
    (tmp_path / "run.json").write_text(raw if raw is not None else json.dumps(record))
    return tmp_path


def test_a_run_record_is_read_and_checked_against_its_package(tmp_path: Path) -> None:
    info = read_run_info(_run(tmp_path, RECORD), "a" * 64)
    assert info.policy == "random" and info.trajectories == 2
    with pytest.raises(InputError, match="of another package .content hash aaaaaaaaaaaa, this package is bbbbbbbbbbbb"):
        read_run_info(tmp_path, "b" * 64)


@pytest.mark.parametrize(("record", "raw", "says"), [
    (None, "{not json", "not a voe run record"),
    ({**RECORD, "schema_version": 99}, None, "newer than this voe reads"),
    ({k: v for k, v in RECORD.items() if k != "run_id"}, None, "run_id: Field required"),
    ([RECORD], None, "has no schema version"),
])
def test_a_bad_record_is_an_input_error_naming_the_file(tmp_path: Path, record: object, raw: str | None,
                                                        says: str) -> None:
    with pytest.raises(InputError, match=says) as caught:
        read_run_info(_run(tmp_path, record, raw))
    assert str(tmp_path / "run.json") in str(caught.value)


def test_a_folder_without_run_json_is_no_run(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a run folder"):
        read_run_info(tmp_path)
