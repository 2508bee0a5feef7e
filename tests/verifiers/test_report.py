"""`voe report` from score summaries (no database): with matplotlib the plots, without it (the `report` extra
not installed) every table and a note saying how to get the plots."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.verifiers.test_metrics import _score
from voe.verifiers.metrics import summarize
from voe.verifiers.report import NO_PLOTS, write_report


def _summaries() -> list[dict[str, Any]]:
    good = [_score(f"t{t}", True, cluster=f"w{t % 2}") for t in range(4)]
    bad = [_score(f"t{t}", t == 0, cluster=f"w{t % 2}", family="missing_evidence") for t in range(4)]
    return [summarize(good, "reference", 1), summarize(bad, "random", 1)]


def test_the_report_draws_its_plots(tmp_path: Path) -> None:
    path = write_report(_summaries(), tmp_path)
    text = path.read_text()
    assert "| reference | 4 x 1 |" in text and "![validity](validity.png)" in text
    for name in ("validity.png", "validity.svg", "by_family.png"):
        assert (tmp_path / name).read_bytes()[:4] in (b"\x89PNG", b"<?xm"), name
    assert NO_PLOTS not in text


def test_without_matplotlib_the_report_keeps_its_tables_and_says_why_no_plots(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    path = write_report(_summaries(), tmp_path)
    text = path.read_text()
    assert "| reference | 4 x 1 |" in text and "## By family" in text and "## Failure codebook" in text
    assert f"Plots not drawn: {NO_PLOTS}." in text and "voe-evidence[report]" in text
    assert "Plots not drawn" in (tmp_path / "report.html").read_text()
    assert not (tmp_path / "validity.png").exists()
