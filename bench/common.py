"""What the bench scripts share: the peak memory of this process, and a package scaled up by repeating its tasks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def peak_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def scaled_package(pkg: Path, out: Path, factor: int) -> tuple[list[Any], list[Any], Any]:
    """Write a copy of package `pkg` to `out` with every task repeated under `factor` ids (`TASK~k`, moment `M~k`)
    and a content hash of its own; its views, answers and manifest."""
    from voe.artifacts.package import TaskAnswer, TaskView, load_package

    views, _, answers, manifest = load_package(pkg)
    out.mkdir(parents=True, exist_ok=True)
    new_views, new_answers = [], []
    for k in range(factor):
        for v in views:
            tid = f"{v.task_id}~{k}"
            new_views.append(TaskView.model_validate({**v.model_dump(), "task_id": tid}))
            a = answers[v.task_id]
            new_answers.append(TaskAnswer.model_validate({**a.model_dump(), "task_id": tid,
                                                         "moment_id": f"{a.moment_id}~{k}"}))
    (out / "tasks.jsonl").write_text("".join(json.dumps(v.model_dump(mode="json")) + "\n" for v in new_views))
    (out / "answers.jsonl").write_text("".join(json.dumps(a.model_dump(mode="json")) + "\n" for a in new_answers))
    (out / "evidence.jsonl").write_text((pkg / "evidence.jsonl").read_text())
    m = manifest.model_copy(update={"content_hash": manifest.content_hash[:-4] + f"x{factor:03d}"})
    (out / "manifest.json").write_text(m.model_dump_json())
    return new_views, new_answers, m


SHARED_SET = ("mds2-4103", "mds2-3842", "mds2-2525", "mds2-2106", "amb2025-template", "ambench-releases", "FACTS.md")


def compile_shared(graph: Any, shared: Path, out: Path) -> Path:
    """Empty the graph, ingest the shared archives and compile their package to `out`."""
    from voe.ingest import ingest_paths
    from voe.replay.admission import compile_package

    graph.verify()
    graph.clear()
    ingest_paths([shared / name for name in SHARED_SET], graph)
    compile_package(graph, out)
    return out


def emit(row: dict[str, Any], as_json: bool, line: str) -> None:
    """One bench result: its JSON with --json, else the readable line."""
    print(json.dumps(row) if as_json else line)
