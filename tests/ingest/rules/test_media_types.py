"""ingest/rules/media_types.py: the extension a component's filepath has, as pathlib reads it."""

from __future__ import annotations

import itertools
from pathlib import PurePosixPath

from voe.ingest.rules.media_types import mismatch, suffix


def test_suffix_is_pathlibs_for_every_short_path() -> None:
    paths = ["", "/", "a//b.tar.gz", "x/.hidden", "x/..", "a/./", "dir/é.CSV", "a.b/."]
    paths += ["".join(p) for n in range(1, 7) for p in itertools.product("a./b", repeat=n)]
    assert [suffix(p) for p in paths] == [PurePosixPath(p).suffix for p in paths]


def test_mismatch_names_the_extension() -> None:
    assert mismatch("dir/sample.csv", "text/csv") is None
    reason = mismatch("dir/sample.CSV/", "image/png")
    assert reason is not None and "'.csv'" in reason
