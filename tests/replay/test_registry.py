"""Every policy `voe run` names comes from one registry; the gate, the runner and the CLI read it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from voe.cli.evaluate import policy_names
from voe.errors import UsageError
from voe.replay.registry import KIND_ORDER, get, names, register, specs


def test_the_cli_choices_are_the_registry_in_kind_order() -> None:
    assert policy_names() == names()
    kinds = [s.kind for s in specs()]
    assert kinds == sorted(kinds, key=KIND_ORDER.index) and kinds[0] == "reference"
    assert {s.name for s in specs("probe")} == {n for n in names() if n.startswith("probe:")}
    assert all(s.about for s in specs())
    assert get("probe:unheld_flag").gate == "limit" and get("probe:chained_rules").gate == "limit"
    assert get("random").gate == "limit" and get("reference").reads_answer


def test_unknown_names_and_clashes_are_refused() -> None:
    with pytest.raises(UsageError, match="choose from reference, "):
        get("nope")
    with pytest.raises(ValueError, match="two policies named"):
        register("random", lambda *a: {}, kind="baseline", about="x")
    with pytest.raises(ValueError, match="probe:NAME"):
        register("flag_everything", lambda *a: {}, kind="probe", about="x")


def test_the_import_order_does_not_change_the_order() -> None:
    code = ("import voe.replay.probes, voe.replay.policies\nfrom voe.replay.registry import names\nprint(','.join(names()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out.split(",") == names()
