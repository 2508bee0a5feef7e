"""`python:MODULE:FUNCTION` policies, sealed (DESIGN §4: answers are sealed).

The function runs in a child process (replay/sealed_child.py) that receives each step's policy-visible task
and history on a pipe and answers with an action: it is never given the package's path, its working folder is
an empty temporary folder holding only a copy of the user's module (so neither a relative path nor a walk up
the folders reaches the package), and its environment holds no NEO4J_*, OPENAI_*, VOE_* or other variable of
the runner's: a fixed PATH of the system's folders, HOME (the empty folder), the locale and PYTHONPATH.

Where Linux namespaces are available (`unshare`, as on the CI machine), the child runs in new user, network,
mount and PID namespaces with a root of its own (replay/sandbox.py): no network (the local Neo4j's verifier-only
properties are out of reach), no view of the runner's process, and no file of the machine but the system's own
folders, the Python installation, voe's code and the copy of the user's module: not the package folder, not
voe's cache (the local Neo4j's store, the LLM cache), not the user's home or project, not another package.
`run.json` records which
sealing a run had (`sealing`: "namespaces" or "process"); without namespaces a policy that knows an absolute
path on this machine can still open it, and the run says so.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, Any, Literal

from voe.artifacts.package import TaskAnswer, TaskView
from voe.errors import UsageError, VoeError
from voe.replay.sandbox import SYSTEM_PATH
from voe.settings import passed_through

Sealing = Literal["namespaces", "process"]
KEPT_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT")


class PolicyFailed(VoeError):
    """The user's policy raised, or its process died: the run stops (exit 1), naming the policy."""


@functools.cache
def namespaces_available() -> bool:
    if sys.platform != "linux" or shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    try:
        with tempfile.TemporaryDirectory(prefix="voe-probe-") as root:
            probe = subprocess.run(["unshare", "--user", "--map-root-user", "--net", "--mount", "--pid", "--fork",
                                    sys.executable, "-m", "voe.replay.sandbox", "--root", root, "--keep",
                                    str(Path(sys.base_prefix).resolve()), "--", "true"],
                                   capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0


def _module_origin(module_name: str) -> Path | None:
    """Where the user's module lives, found as `python -m` finds it (the current folder first)."""
    top = module_name.split(".", 1)[0]
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError) as exc:
        raise UsageError(f"--policy python:{module_name}: cannot find {top} ({exc})") from exc
    if spec is None:
        raise UsageError(f"--policy python:{module_name}: no module {top} in the current folder or the environment")
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(spec.origin) if spec.origin and spec.origin not in ("built-in", "frozen") else None


def _installed(path: Path) -> bool:
    """A module of the environment itself (site-packages, the standard library): imported where it is."""
    roots = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return any(r == path.resolve() or r in path.resolve().parents for r in roots)


def _code_dirs() -> tuple[list[Path], Path]:
    """voe's own packages the child imports (voe itself with voe.artifacts.package, voe.replay.sealed_child; in a
    source tree the stages are linked into voe/ from the folders beside it), and the voe package's folder."""
    import voe
    import voe.replay
    home = Path(next(iter(voe.__path__)))
    return sorted({home.resolve(), Path(next(iter(voe.replay.__path__))).resolve()}), home


class SealedPolicy:
    """A `python:` policy in its own process; `act` has the in-process policy's signature."""

    def __init__(self, spec: str, package: Path) -> None:
        module_name, _, attr = spec.partition(":")
        if not module_name or not attr:
            raise UsageError(f"--policy python:{spec}: expected python:MODULE:FUNCTION")
        self.spec = spec
        self.root: Path | None = None
        self.code: Path | None = None
        self.home = Path(tempfile.mkdtemp(prefix="voe-policy-"))
        origin = _module_origin(module_name)
        if origin is not None and not _installed(origin):
            top = module_name.split(".", 1)[0]
            if origin.is_dir():
                shutil.copytree(origin, self.home / top, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(origin, self.home / origin.name)
        packages, voe_home = _code_dirs()
        # Only the name `voe` goes on the child's path: the folder holding voe (a source tree, or in a wheel install
        # site-packages/voe's parent) also holds folders named like PyPI packages (verifiers, compiler...), which a
        # policy importing those must not get. An installed voe is found on the environment's own path.
        roots: list[str] = []
        if not _installed(voe_home):
            self.code = Path(tempfile.mkdtemp(prefix="voe-code-"))
            (self.code / "voe").symlink_to(voe_home.resolve(), target_is_directory=True)
            roots.append(str(self.code))
        env = passed_through(KEPT_ENV)
        env.update({"PATH": SYSTEM_PATH, "HOME": str(self.home),
                    "PYTHONPATH": os.pathsep.join([str(self.home), *roots]),
                    "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1"})
        child = [sys.executable, "-m", "voe.replay.sealed_child", spec]
        self.sealing: Sealing = "namespaces" if namespaces_available() else "process"
        if self.sealing == "namespaces":
            keeps = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
            keeps |= {Path(p).resolve() for p in sys.path if p and Path(p).is_dir() and "site-packages" in p}
            keeps |= {*packages, Path(sys.executable).resolve().parent}
            if self.code is not None:
                keeps.add(self.code.resolve())
            keeps.discard(self.home.resolve())
            self.root = Path(tempfile.mkdtemp(prefix="voe-root-"))
            child = ["unshare", "--user", "--map-root-user", "--net", "--mount", "--pid", "--fork", "--kill-child",
                     sys.executable, "-m", "voe.replay.sandbox", "--root", str(self.root),
                     *[a for k in sorted(keeps) for a in ("--keep", str(k))], "--writable", str(self.home.resolve()),
                     "--", *child]
        try:
            self.proc = subprocess.Popen(child, cwd=self.home, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=None, text=True, bufsize=1, start_new_session=True)
        except OSError as exc:
            self._tidy()
            raise UsageError(f"--policy python:{spec}: cannot start its process ({exc})") from exc
        try:
            hello = self._read()
        except VoeError:
            self.close()
            raise
        if "error" in hello:
            self.close()
            raise UsageError(f"--policy python:{spec}: {hello['error']}")

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            raise PolicyFailed(f"the policy python:{self.spec} stopped (its process exited with {code})")
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            raise PolicyFailed(f"the policy python:{self.spec} wrote something else than voe's answer on its standard "
                               f"output: {line[:200]!r} (print to standard error instead)")
        return reply

    def act(self, view: TaskView, answer: TaskAnswer, history: list[dict[str, Any]], rng: random.Random,
            episode: str = "", seed: int = 0) -> Any:
        stdin: IO[str] | None = self.proc.stdin
        assert stdin is not None
        msg = {"episode": episode, "seed": seed, "task": view.model_dump(mode="json"), "history": history}
        try:
            stdin.write(json.dumps(msg) + "\n")
            stdin.flush()
        except BrokenPipeError as exc:
            raise PolicyFailed(f"the policy python:{self.spec} stopped") from exc
        reply = self._read()
        if "error" in reply:
            raise PolicyFailed(f"the policy python:{self.spec} raised {reply['error']}")
        return reply.get("action")

    def close(self) -> None:
        if self.proc.poll() is None:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)  # the whole group: a policy that hangs goes too
                self.proc.wait()
        self._tidy()

    def _tidy(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)
        if self.code is not None:
            shutil.rmtree(self.code, ignore_errors=True)
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> SealedPolicy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def episode_seed(seed: int, task_id: str, p: int) -> int:
    """The per task and pass seed the runner gives every policy's `random.Random`."""
    return int(hashlib.sha256(f"{seed}|{task_id}|{p}".encode()).hexdigest()[:16], 16)
