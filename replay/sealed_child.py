"""The child side of a sealed `python:` policy (replay/sealed.py): imports the user's function and answers one
JSON line per step on stdout for each JSON line on stdin. It reads no file of the package: the task and its
history arrive on stdin, and only what a policy may see is in them.

    {"episode": "<trajectory id>", "seed": <int>, "task": {...TaskView...}, "history": [...]}  ->  {"action": ...}

A new episode id starts a new `random.Random(seed)` that the function gets on every step of that episode, as
the in-process runner does. An exception in the function is answered as {"error": "<type>: <message>"}; an
action past the answer's caps (argv: bytes, nesting) or a MemoryError (the address-space limit the parent set) as
{"budget": "<what>"}, which the parent records as the trajectory's `policy_budget`.
"""

from __future__ import annotations

import importlib
import json
import os
import random
import signal
import sys
from pathlib import Path
from typing import Any


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return value


def _only_voe_by_its_name() -> None:
    """Drop from the path every folder, other than the one voe was imported from, that holds voe's own folder:
    an editable install of a source tree puts the tree's root on it, and with it voe's stage folders under bare
    names (`verifiers`, `compiler`...) that a policy importing such a name (PyPI's `verifiers`) must not get."""
    import voe

    real = Path(next(iter(voe.__path__))).resolve()
    used = Path(next(iter(voe.__path__))).parent
    sys.path[:] = [p for p in sys.path
                   if not p or Path(p) == used or not (Path(p) / "voe").is_dir() or (Path(p) / "voe").resolve() != real]


def main(argv: list[str]) -> int:
    spec = argv[0] if argv else ""
    most = int(argv[1]) if len(argv) > 1 else 1 << 20
    depth = int(argv[2]) if len(argv) > 2 else 64
    sys.setrecursionlimit(max(sys.getrecursionlimit(), depth + 200))
    module_name, _, attr = spec.partition(":")
    from voe.artifacts.package import TaskView  # the policy-visible model, nothing verifier-only

    _only_voe_by_its_name()

    # the CPU limit's SIGXCPU ends the process: in a PID namespace it is the namespace's first process, which the
    # kernel spares from signals it has no handler for
    signal.signal(signal.SIGXCPU, lambda *_: os._exit(128 + signal.SIGXCPU))
    out = sys.stdout
    sys.stdout = sys.stderr  # a policy's print() must not corrupt the protocol
    try:
        fn = getattr(importlib.import_module(module_name), attr)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which names the policy
        out.write(json.dumps({"error": f"cannot import {spec} ({type(exc).__name__}: {exc})"}) + "\n")
        out.flush()
        return 1
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    episode: str | None = None
    rng = random.Random(0)
    task: TaskView | None = None
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("episode") != episode:
            episode = msg.get("episode")
            rng = random.Random(int(msg.get("seed", 0)))
            task = TaskView.model_validate(msg["task"])
        try:
            action = fn(task, msg.get("history", []), rng)
            text = json.dumps({"action": _jsonable(action)})
            if len(text) > most:
                text = json.dumps({"budget": f"answered {len(text)} bytes in one step (at most {most})"})
        except MemoryError:
            text = json.dumps({"budget": "passed its memory limit (--policy-memory)"})
        except RecursionError:
            text = json.dumps({"budget": f"answered JSON nested deeper than {depth} levels"})
        except Exception as exc:  # noqa: BLE001 - the parent records it as the policy's failure
            text = json.dumps({"error": f"{type(exc).__name__}: {str(exc)[:500]}"})
        out.write(text + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
