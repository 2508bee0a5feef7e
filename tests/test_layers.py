"""The stages import one way: voe (shared ground) <- ingest <- compiler <- replay <- verifiers, and the command
line on top. Function-level imports count too. The one sanctioned backward edge: admission (compiler.gate,
compiler.select's adversarial filtering and compiler.annotate's reference-path filter) runs tasks through the
replay environment, the baselines and the probes before a package is released, as the release gate demands
(DESIGN, gates)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ORDER = ["voe", "ingest", "compiler", "replay", "verifiers", "export", "cli"]  # cli: the command line, on top
ADMISSION = {"compiler.gate": {"replay.env", "replay.policies", "replay.probes", "replay.registry"},
             "compiler.select": {"replay.env", "replay.probes", "replay.registry"},
             "compiler.annotate": {"replay.env"}}


def _top_level(path: Path) -> set[str]:
    """Stage modules imported by their own top-level name (`ingest.loader`): the wheel installs only `voe`."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
            [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else [])
        out |= {n for n in names if n.split(".")[0] in ORDER[1:]}
    return out


def test_everything_imports_through_the_voe_namespace() -> None:
    wrong = {f"{path.relative_to(REPO)} imports {name}" for folder in [*ORDER, "tests", "bench", "tools"]
             for path in (REPO / folder).rglob("*.py") for name in _top_level(path)}
    assert wrong == set()


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return {_stage_module(m) for m in out if _stage_module(m).split(".")[0] in ORDER}


def _stage_module(name: str) -> str:
    """`voe.ingest.loader` -> `ingest.loader` (a stage's module); `voe.graph` -> `voe.graph` (the shared ground)."""
    parts = name.split(".")
    return ".".join(parts[1:]) if len(parts) > 1 and parts[0] == "voe" and parts[1] in ORDER[1:] else name


def test_every_stage_imports_only_from_itself_and_the_stages_before_it() -> None:
    wrong = []
    checked = 0
    for package in ORDER:
        for path in sorted((REPO / package).rglob("*.py")):
            module = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
            checked += 1
            allowed = set(ORDER[: ORDER.index(package) + 1])
            for imported in _imports(path):
                if imported.split(".")[0] not in allowed and imported not in ADMISSION.get(module, set()):
                    wrong.append(f"{module} imports {imported}")
    assert checked > 50
    assert wrong == []
