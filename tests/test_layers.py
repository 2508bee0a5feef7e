"""The stages import one way: the shared ground (voe's own modules) <- ingest <- compiler <- replay <- verifiers <-
export <- cli. The rules are import-linter contracts in pyproject.toml ([tool.importlinter]); these tests run them
(function-level imports count), show that they catch a planted violation, keep the contract's list of
shared-ground modules complete, and forbid import cycles between modules."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parent.parent
STAGES = ["ingest", "compiler", "replay", "verifiers", "export", "cli", "api"]  # api: voe.api, above them all
LINT = Path(sys.executable).parent / "lint-imports"


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    return list(config["contracts"])


MODULE_NAME = re.compile(r"^(ingest|compiler|replay|verifiers|export|cli)(\.[a-z_]+)+(:[a-z_]+)?$")


def _top_level(path: Path) -> set[str]:
    """Stage modules named by their own top-level name (`ingest.write.loader`), in an import or in a string that names a
    module (a monkeypatch target, `-m replay.sandbox`, an importlib name): the wheel installs only `voe`."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
            [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else [])
        out |= {n for n in names if n.split(".")[0] in STAGES}
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_NAME.match(node.value):
            name = node.value.split(":")[0]
            parts = name.split(".")
            if any(_is_module("voe." + ".".join(parts[:n])) for n in range(2, len(parts) + 1)):
                out.add(node.value)
    return out


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def test_everything_imports_through_the_voe_namespace() -> None:
    wrong = {f"{path.relative_to(REPO)} imports {name}" for folder in ["voe", *STAGES, "tests", "bench", "tools"]
             for path in (REPO / folder).rglob("*.py") for name in _top_level(path)}
    assert wrong == set()


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    # import-linter puts its working directory first on sys.path: the package found there is the one checked
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT), "--config", str(REPO / "pyproject.toml"), "--no-cache"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


INGEST_FACE = "the stages after ingest see it only through voe.ingest, its rule tables and its budgets"


def test_the_import_contracts_hold() -> None:
    result = _lint(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Contracts: {len(_contracts())} kept, 0 broken." in result.stdout


@pytest.mark.parametrize(("module", "planted", "contract"), [
    ("voe/jsonl.py", "voe.cli.app", "the shared ground imports no stage"),
    ("voe/ingest/rules/ids.py", "voe.compiler.moments", "stages: each imports only from the ones below it"),
    ("voe/replay/env.py", "voe.verifiers.metrics", "stages: each imports only from the ones below it"),
    ("voe/compiler/families/missing_evidence.py", "voe.compiler.families.source_integrity",
     "a task family is one module: no family imports another"),
    ("voe/verifiers/score.py", "voe.ingest.write.loader", INGEST_FACE),
    ("voe/export/jsonld.py", "voe.ingest.payloads.parsers.tabular", INGEST_FACE),
])
def test_the_contracts_catch_an_import_against_the_flow(tmp_path: Path, module: str, planted: str,
                                                        contract: str) -> None:
    """A copy of the package (the stage folders resolved) with one function-level import planted against the flow."""
    shutil.copytree(REPO / "voe", tmp_path / "voe", ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / module
    target.write_text(target.read_text() + f"\n\ndef _planted() -> None:\n    import {planted}  # noqa: F401\n")
    result = _lint(tmp_path)
    assert result.returncode == 1, result.stdout
    broken = result.stdout.split("Broken contracts", 1)[1]
    assert contract in broken and planted in broken


def test_the_contracts_name_every_module_of_the_shared_ground_and_every_family() -> None:
    """A new module of voe's own (not a stage), or a new family, is held to the contracts as soon as it exists."""
    ground = {f"voe.{p.stem}" for p in (REPO / "voe").glob("*.py") if p.stem not in ("__init__", "api")} | {
        f"voe.{p.name}" for p in (REPO / "voe").iterdir() if (p / "__init__.py").is_file() and not p.is_symlink()}
    [contract] = [c for c in _contracts() if c["name"] == "the shared ground imports no stage"]
    assert set(contract["source_modules"]) == ground  # type: ignore[arg-type]
    assert set(contract["forbidden_modules"]) == {f"voe.{s}" for s in STAGES}  # type: ignore[arg-type]
    [families] = [c for c in _contracts() if c["type"] == "independence"]
    modules = {f"voe.compiler.families.{p.stem}" for p in (REPO / "compiler" / "families").glob("*.py")}
    assert set(families["modules"]) == modules - {"voe.compiler.families.__init__", "voe.compiler.families.base"}  # type: ignore[arg-type]
    [layers] = [c for c in _contracts() if c["type"] == "layers"]
    assert sorted(layers["layers"]) == sorted(f"voe.{s}" for s in STAGES)  # type: ignore[arg-type]


def test_the_ingest_face_contract_forbids_every_part_of_ingest_but_its_face() -> None:
    """A new room of ingest is private to it until it is made part of the face on purpose."""
    [contract] = [c for c in _contracts() if c["name"] == INGEST_FACE]
    assert set(contract["source_modules"]) == {f"voe.{s}" for s in STAGES} - {"voe.cli", "voe.api", "voe.ingest"}  # type: ignore[arg-type]
    face = {"voe.ingest.rules", "voe.ingest.payloads.limits"}
    parts = {f"voe.ingest.{p.stem}" for p in (REPO / "ingest").glob("*.py") if p.stem != "__init__"}
    parts |= {f"voe.ingest.{p.name}" for p in (REPO / "ingest").iterdir() if (p / "__init__.py").is_file()}
    parts = (parts - {"voe.ingest.payloads"}) | {f"voe.ingest.payloads.{p.stem}" for p in (REPO / "ingest" / "payloads")
                                                  .glob("*.py") if p.stem != "__init__"} | {
        "voe.ingest.payloads.parsers"}
    assert set(contract["forbidden_modules"]) == parts - face  # type: ignore[arg-type]


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_no_two_modules_import_each_other() -> None:
    """Imports inside functions count (grimp reads them); imports only for type checking do not."""
    graph = grimp.build_graph("voe", exclude_type_checking_imports=True, cache_dir=None)
    assert len(graph.modules) > 90
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.build_graph("voe", exclude_type_checking_imports=True, cache_dir=None)
    graph.add_import(importer="voe.jsonl", imported="voe.cli.app")
    graph.add_import(importer="voe.cli.app", imported="voe.jsonl")
    assert ["voe.cli.app", "voe.jsonl"] in _cycles(graph)
