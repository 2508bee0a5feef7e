"""The query loader's includes: two queries that must compute the same thing share one text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from voe import queries


@pytest.fixture
def cypher_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setattr(queries, "cypher_root", lambda: tmp_path)
    queries.load.cache_clear()
    yield tmp_path
    queries.load.cache_clear()  # the real files again for the tests after this one


def test_an_include_line_is_replaced_by_the_named_text(cypher_dir: Path) -> None:
    (cypher_dir / "part").mkdir()
    (cypher_dir / "part" / "double.cypher").write_text("// a fragment\nWITH *, 2 * x AS y\n")
    (cypher_dir / "q.cypher").write_text("UNWIND $rows AS x\n  // include: part/double\nRETURN y\n")
    assert queries.load("q") == "UNWIND $rows AS x\n// a fragment\nWITH *, 2 * x AS y\nRETURN y\n"


def test_an_unknown_or_circular_include_names_the_query(cypher_dir: Path) -> None:
    (cypher_dir / "q.cypher").write_text("MATCH (n)\n// include: nope\nRETURN n\n")
    with pytest.raises(KeyError, match="'nope' \\(included by 'q'\\)"):
        queries.load("q")
    (cypher_dir / "a.cypher").write_text("// include: b\n")
    (cypher_dir / "b.cypher").write_text("// include: a\n")
    with pytest.raises(KeyError, match="'a' includes itself \\(a -> b -> a\\)"):
        queries.load("a")
    (cypher_dir / "c.cypher").write_text("// include: d\n")
    (cypher_dir / "d.cypher").write_text("// include: e\n")
    (cypher_dir / "e.cypher").write_text("// include: d\n")
    with pytest.raises(KeyError, match="'d' includes itself \\(c -> d -> e -> d\\)"):
        queries.load("c")


def test_both_verifier_queries_run_the_one_text_of_the_checks() -> None:
    checks = queries.load("verifiers/verdict")
    for name in ("verifiers/verify_trajectories", "verifiers/write_trajectories"):
        text = queries.load(name)
        assert checks.rstrip("\n") in text and "// include:" not in text, name
