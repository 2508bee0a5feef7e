"""The one --out rule (voe/artifacts/outdir.py): what --force may replace, and a swap that loses nothing."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from voe.artifacts.outdir import RUN_MARKERS, claim_out, clear_for_rewrite, fresh_folder, swap_in
from voe.errors import InputError, UsageError


def _claim(out: Path, force: bool = False, resume: bool | None = None) -> None:
    claim_out(out, markers=RUN_MARKERS, what="run", force=force, resume=resume)


def test_an_absent_or_empty_folder_is_taken_and_a_full_one_needs_a_word(tmp_path: Path) -> None:
    _claim(tmp_path / "new")
    (tmp_path / "empty").mkdir()
    _claim(tmp_path / "empty")
    full = tmp_path / "full"
    full.mkdir()
    (full / "run.json").write_text("{}")
    with pytest.raises(UsageError, match="exists and is not empty: --force replaces it$"):
        _claim(full)
    with pytest.raises(UsageError, match="--resume continues"):
        _claim(full, resume=False)
    _claim(full, resume=True)
    _claim(full, force=True)


@pytest.mark.parametrize("marker", RUN_MARKERS)
def test_force_replaces_only_an_earlier_artifact_of_the_kind(tmp_path: Path, marker: str) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "thesis.tex").write_text("years of work")
    with pytest.raises(InputError, match="replaces an earlier run only"):
        _claim(notes, force=True)
    (notes / marker).write_text("{}")
    _claim(notes, force=True)  # an interrupted agent run (run.plan.json) counts too


def test_force_never_takes_the_working_or_home_folder_even_holding_a_marker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "run.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="not one"):
        _claim(Path("."), force=True)
    monkeypatch.chdir("/")
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(InputError, match="not one"):
        _claim(tmp_path, force=True)


def test_a_link_or_a_file_is_refused_whatever_the_flags(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (target / "run.json").write_text("{}")
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(InputError, match="symbolic link"):
        _claim(tmp_path / "link", force=True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="is a file"):
        _claim(tmp_path / "file", force=True)


def test_a_swap_replaces_whole_and_leaves_nothing_beside(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("old")
    staged = fresh_folder(out, ".partial")
    (staged / "new.txt").write_text("new")
    swap_in(staged, out)
    assert [p.name for p in out.iterdir()] == ["new.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    clear_for_rewrite(out)
    assert list(tmp_path.iterdir()) == []


def test_a_staged_folder_has_the_mode_mkdir_gives_under_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        staged = fresh_folder(tmp_path / "out", ".partial")
    finally:
        os.umask(old)
    assert stat.S_IMODE(staged.stat().st_mode) == 0o750
