"""Reading a task package folder: what `voe run`, `voe score`, `voe export` and the agents need, without the
compiler's own imports (the graph driver among them), so that `voe run` starts in a fraction of a second."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from voe.compiler.models import EvidenceObject, Manifest, TaskAnswer, TaskView
from voe.errors import InputError
from voe.versions import PACKAGE_VERSION, check


def load_package(pkg: Path) -> tuple[list[TaskView], dict[str, EvidenceObject], dict[str, TaskAnswer], Manifest]:
    """Read a package folder; anything missing or malformed is an InputError naming the file and line."""

    def lines(name: str) -> list[dict[str, Any]]:
        path = pkg / name
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text (byte {exc.start})", path=str(path)) from exc
        except OSError as exc:
            raise InputError(f"not a task package ({exc.strerror or exc}); create one with `voe compile`",
                             path=str(path)) from exc
        out = []
        for n, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise InputError(f"line {n} is not JSON ({exc.msg})", path=str(path)) from exc
        return out

    manifest_path = pkg / "manifest.json"
    try:  # the version first: a package of another version is refused as that, not as a schema mismatch
        found = json.loads(manifest_path.read_text()).get("package_version")
    except (OSError, ValueError, AttributeError) as exc:
        raise InputError(f"not a task package (no readable manifest.json: {exc}); create one with `voe compile`",
                         path=str(manifest_path)) from exc
    check("package", found, PACKAGE_VERSION, str(manifest_path))
    try:
        views = [TaskView.model_validate(x) for x in lines("tasks.jsonl")]
        evidence = {x["evidence_id"]: EvidenceObject.model_validate(x) for x in lines("evidence.jsonl")}
        answers = {x["task_id"]: TaskAnswer.model_validate(x) for x in lines("answers.jsonl")}
        manifest = Manifest.model_validate_json((pkg / "manifest.json").read_text())
    except (ValidationError, KeyError, OSError, TypeError, UnicodeDecodeError) as exc:
        raise InputError(f"package files do not match the package schema: {str(exc).splitlines()[0]}",
                         path=str(pkg)) from exc
    return views, evidence, answers, manifest
