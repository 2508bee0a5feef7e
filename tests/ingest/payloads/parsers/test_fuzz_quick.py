"""The quick profile of bench/fuzz.py: about 100 seeded mutations of the real shared files per parser, each in a
worker process with a time limit. No exception may escape parse_file (or the NERDm build), and every input must
finish within the bound. The long profile (`python bench/fuzz.py`, 10,000 per parser) is run by hand."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

FUZZ = Path(__file__).resolve().parents[4] / "bench" / "fuzz.py"
PER_PARSER = 100
LIMIT = 30.0  # seconds one input may take (the default budgets aim at 60 s for any input)
# inputs cut to 1 MiB and budgets a fifth of the defaults, so about 100 inputs per parser fit in a minute on 2 cores
# (and the budget paths are taken more often); the long profile runs under the defaults
MAX_INPUT = 1 << 20
LIMITS = {"VOE_LIMIT_PDF_TOKENS": "200000", "VOE_LIMIT_CHARS_PER_PDF": "40000", "VOE_LIMIT_PAGES_PER_PDF": "50",
          "VOE_LIMIT_CELLS_PER_WORKBOOK": "800000", "VOE_LIMIT_FACTS_PER_FILE": "40000"}


def _fuzz(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """bench/fuzz.py as the module `fuzz` (its worker processes are spawned and import it by that name)."""
    monkeypatch.syspath_prepend(str(FUZZ.parent))
    monkeypatch.delitem(sys.modules, "fuzz", raising=False)
    return importlib.import_module("fuzz")


@pytest.mark.slow  # about a minute on 2 cores: `-m "not neo4j and not slow"` leaves it out
@pytest.mark.timeout(300)
def test_quick_fuzz_finds_no_crash_and_no_runaway(archives: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fuzz = _fuzz(monkeypatch)
    report = fuzz.run(PER_PARSER, seed=20261201, timeout=LIMIT, jobs=2, max_seed_bytes=256 << 10, save=tmp_path,
                      max_input=MAX_INPUT, limits=LIMITS)
    by_parser = {s["parser"]: s for s in report["parsers"]}
    assert set(by_parser) == set(fuzz.PARSERS)
    failures = [(f["parser"], f["index"], f.get("seed_file"), f.get("ops"), f.get("error")) for f in report["failures"]]
    assert failures == []
    for parser, s in by_parser.items():
        assert s["inputs"] == PER_PARSER, parser
        assert s["max_seconds"] < LIMIT, (parser, s["slowest"])
        assert s["outcomes"].get("ok", 0) + s["outcomes"].get("input_error", 0) == PER_PARSER, parser
    assert by_parser["nerdm"]["outcomes"].get("ok", 0) > 0  # the mutations do not all break the JSON
