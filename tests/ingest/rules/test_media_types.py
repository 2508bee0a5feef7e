"""ingest/rules/media_types.py: the extension a component's filepath has, as pathlib reads it."""

from __future__ import annotations

import itertools
from pathlib import PurePosixPath

from voe.ingest.rules.media_types import mismatch, suffix, unusual


def test_suffix_is_pathlibs_for_every_short_path() -> None:
    paths = ["", "/", "a//b.tar.gz", "x/.hidden", "x/..", "a/./", "dir/é.CSV", "a.b/."]
    paths += ["".join(p) for n in range(1, 7) for p in itertools.product("a./b", repeat=n)]
    assert [suffix(p) for p in paths] == [PurePosixPath(p).suffix for p in paths]


def test_mismatch_names_the_extension() -> None:
    assert mismatch("dir/sample.csv", "text/csv") is None
    reason = mismatch("dir/sample.CSV/", "image/png")
    assert reason is not None and "'.csv'" in reason


def test_an_alias_that_names_the_format_is_no_defect_but_anothers_type_is() -> None:
    """NIST's repository writes text/x-python-code for a .py (and text/x-matlab-code for a .m): it names Python
    source, an unusual alias a curator reads past. application/x-python-code is compiled bytecode (.pyc)."""
    assert mismatch("downloadDataset.py", "text/x-python-code") is None
    assert unusual("downloadDataset.py", "text/x-python-code")
    assert mismatch("downloadDataset.py", "application/x-python-code") is not None
    assert mismatch("hashed_zipped_files.txt", "application/msword") is not None
