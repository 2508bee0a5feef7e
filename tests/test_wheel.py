"""The built wheel installs one top-level name, `voe`: installed beside a package called `verifiers` (PyPI's
"environments for LLM RL", which this project's users are likely to have) or `compiler`, `export`, `replay`, both
stay importable. Offline: the wheel is built from the checkout with the dev venv's hatchling, and the neighbours
are stand-ins holding a marker."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NEIGHBOURS = ("verifiers", "compiler", "export", "replay", "ingest", "cli")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out),
                    str(REPO)], check=True, timeout=600)
    [built] = out.glob("*.whl")
    return built


def test_the_wheel_holds_only_the_voe_namespace(wheel: Path) -> None:
    assert wheel.name.startswith("voe_evidence-")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
    top = {n.split("/")[0] for n in names}
    assert top == {"voe", wheel.name.split("-py3")[0] + ".dist-info"}
    for stage in ("ingest", "compiler", "replay", "verifiers", "export", "cli"):
        assert f"voe/{stage}/__init__.py" in names  # the stage folders, mapped under voe
    assert "voe/ingest/payloads/parsers/registry.py" in names and "voe/_data/cypher/schema.cypher" in names
    assert not [n for n in names if "llm_server" in n]  # the scripted LLM server belongs to the tests
    with zipfile.ZipFile(wheel) as zf:
        entry = zf.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "voe = voe.cli:main" in entry
    # Inspect AI finds `voe/bench` through an entry point named like the import package
    assert "[inspect_ai]\nvoe = voe.replay.inspect_task" in entry and "voe/replay/inspect_task.py" in names


def test_installed_beside_packages_of_the_stage_names_both_stay_importable(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    for name in NEIGHBOURS:
        (target / name).mkdir(parents=True)
        (target / name / "__init__.py").write_text(f"MARK = 'the other {name}'\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(target),
                    str(wheel)], check=True, timeout=600)
    for name in NEIGHBOURS:
        assert (target / name / "__init__.py").read_text() == f"MARK = 'the other {name}'\n"
    # the dev venv supplies voe's dependencies; the target comes first, so `voe` is the installed wheel's
    env = {**os.environ, "PYTHONPATH": str(target)}
    probe = ("import voe, verifiers, compiler, export, replay, ingest, cli\n"
             "import voe.verifiers.metrics, voe.artifacts.package, voe.cli.app\n"
             "print(voe.__file__); print(verifiers.MARK, compiler.MARK, cli.MARK)\n")
    out = subprocess.run([sys.executable, "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    where, marks = out.stdout.splitlines()
    assert where == str(target / "voe" / "__init__.py")
    assert marks == "the other verifiers the other compiler the other cli"
    help_ = subprocess.run([sys.executable, "-m", "voe.cli", "--help"], env=env, cwd=tmp_path, capture_output=True,
                           text=True, timeout=120)
    assert help_.returncode == 0 and "voe compiles a published experiment archive" in help_.stdout, help_.stderr
