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

Bounded (issue 44, `PolicyLimits`): each step has a deadline (`--step-timeout`), the child an address-space limit
(`--policy-memory`) and a CPU limit, its answer a size (and nesting) cap, what it writes to standard error a cap
(the rest is dropped, said once). A step past one ends that trajectory with the outcome `policy_timeout` or
`policy_budget` (scored as such); the child is killed and a new one answers the next trajectory. The child dies
with its runner (a parent-death signal; in namespaces its PID namespace goes with it) and has its own process
group, which `close` kills whole.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import hashlib
import importlib.util
import json
import os
import random
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any, Literal, NoReturn

from pydantic import BaseModel, ConfigDict, Field

from voe.artifacts.package import TaskAnswer, TaskView
from voe.errors import UsageError, VoeError
from voe.jsonl import nested_deeper_than
from voe.replay.sandbox import SYSTEM_PATH
from voe.settings import passed_through

Sealing = Literal["namespaces", "process"]
KEPT_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT")


class PolicyFailed(VoeError):
    """The user's policy raised, or its process died: the run stops (exit 1), naming the policy."""


Overrun = Literal["policy_timeout", "policy_budget"]


class PolicyOverrun(VoeError):
    """A step passed one of the policy's limits: the trajectory ends with `end` (the child was killed; the next
    trajectory gets a new one)."""

    def __init__(self, end: Overrun, detail: str) -> None:
        super().__init__(detail)
        self.end: Overrun = end


class PolicyLimits(BaseModel):
    """What a sealed policy may cost (`voe run --step-timeout`, `--policy-memory`)."""

    model_config = ConfigDict(frozen=True)
    step_timeout: float = Field(default=60.0, gt=0)  # seconds for one step's answer (the first: to start and import too)
    memory: int = Field(default=2 << 30, gt=0)  # address space of the child, bytes
    cpu_seconds: int = Field(default=3600, gt=0)  # CPU of one child process, every step together (SIGXCPU past it)
    reply_bytes: int = Field(default=1 << 20, gt=0)  # one answer line
    reply_depth: int = Field(default=64, gt=0)  # nesting of one answer
    stderr_bytes: int = Field(default=1 << 20, gt=0)  # what the child's standard error may print, per child


PR_SET_PDEATHSIG = 1


@functools.cache
def _libc() -> Any:
    name = ctypes.util.find_library("c")
    return ctypes.CDLL(name, use_errno=True) if name else None


def _bounded_child(limits: PolicyLimits) -> Any:
    """What runs in the child between fork and exec: its limits, and death with its parent."""
    libc = _libc()  # loaded before the fork
    memory, cpu = int(limits.memory), int(limits.cpu_seconds)

    def apply() -> None:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
        if libc is not None:
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    return apply


class _Stderr(threading.Thread):
    """Forwards what the child writes to standard error, up to a cap; past it, says so once and drops the rest."""

    def __init__(self, source: IO[bytes], cap: int, spec: str) -> None:
        super().__init__(name="voe-policy-stderr", daemon=True)
        self.source, self.cap, self.spec = source, cap, spec

    def run(self) -> None:
        left = self.cap
        out = sys.stderr
        while chunk := self.source.read(1 << 16):  # an unbuffered pipe: what is there, at most this much
            if left > 0:
                piece = chunk[:left]
                left -= len(piece)
                with contextlib.suppress(OSError, ValueError):
                    out.write(piece.decode("utf-8", "replace"))
                    if left <= 0:
                        out.write(f"\n[voe] the policy python:{self.spec} wrote more than {self.cap} bytes to standard "
                                  "error; the rest is dropped\n")
                    out.flush()


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

    def __init__(self, spec: str, package: Path, limits: PolicyLimits | None = None) -> None:
        module_name, _, attr = spec.partition(":")
        if not module_name or not attr:
            raise UsageError(f"--policy python:{spec}: expected python:MODULE:FUNCTION")
        self.spec = spec
        self.limits = limits or PolicyLimits()
        self.root: Path | None = None
        self.code: Path | None = None
        self.home = Path(tempfile.mkdtemp(prefix="voe-policy-"))
        self.proc: subprocess.Popen[bytes] | None = None
        self._buf = b""
        self._starting = False  # until the child's first line: an exit now is the interpreter's, not the policy's
        self.overruns = 0
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
        self._env = env
        child = [sys.executable, "-m", "voe.replay.sealed_child", spec, str(self.limits.reply_bytes),
                 str(self.limits.reply_depth)]
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
        self._command = child
        try:
            self._start()
        except (VoeError, PolicyOverrun):
            self.close()
            raise

    def _start(self) -> None:
        """A new child, ready to answer (its module imported)."""
        try:
            self.proc = subprocess.Popen(self._command, cwd=self.home, env=self._env, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0,
                                         start_new_session=True, preexec_fn=_bounded_child(self.limits))  # noqa: PLW1509 - limits set between fork and exec, the only place they can be
        except OSError as exc:
            raise UsageError(f"--policy python:{self.spec}: cannot start its process ({exc}; "
                             f"{self._interpreter()})") from exc
        assert self.proc.stderr is not None
        _Stderr(self.proc.stderr, self.limits.stderr_bytes, self.spec).start()
        self._buf = b""
        self._starting = True
        try:
            hello = self._read()
        except PolicyOverrun as exc:
            raise PolicyFailed(f"the policy python:{self.spec} did not start: {exc}") from None
        finally:
            self._starting = False
        if "error" in hello:
            raise UsageError(f"--policy python:{self.spec}: {hello['error']}")

    def _kill(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # the whole group: what the policy started goes too
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def _overrun(self, end: Overrun, detail: str) -> PolicyOverrun:
        self._kill()
        self.overruns += 1
        return PolicyOverrun(end, f"the policy python:{self.spec} {detail}")

    def _write(self, data: bytes, deadline: float) -> None:
        """The step's message, within the step's deadline (a child that reads nothing fills the pipe)."""
        assert self.proc is not None and self.proc.stdin is not None
        fd = self.proc.stdin.fileno()
        os.set_blocking(fd, False)
        view = memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._overrun("policy_timeout", f"did not read its step within {self.limits.step_timeout:g} s "
                                                      "(--step-timeout)")
            _, ready, _ = select.select([], [fd], [], left)
            if not ready:
                continue
            try:
                view = view[os.write(fd, view):]
            except BlockingIOError:
                continue
            except (BrokenPipeError, OSError):
                self._died()

    def _died(self) -> NoReturn:
        """The child's process ended: a limit (SIGXCPU, SIGKILL of the memory limit) or the policy's failure."""
        assert self.proc is not None
        code = self.proc.wait()
        if code in (-signal.SIGXCPU, -signal.SIGKILL, 128 + signal.SIGXCPU, 128 + signal.SIGKILL):
            name = "its CPU limit" if code in (-signal.SIGXCPU, 128 + signal.SIGXCPU) else "a limit (killed)"
            raise self._overrun("policy_budget", f"was stopped by {name}")
        self._kill()
        if self._starting and code in (126, 127):
            # the shell's and unshare's codes for a program that cannot be executed (126) or is not there (127):
            # a venv's python linked into a folder the sandbox does not hold, a shim whose target is gone
            raise PolicyFailed(f"the policy python:{self.spec} could not run: its interpreter could not be started "
                               f"(exit {code} before its first line; {self._interpreter()})")
        raise PolicyFailed(f"the policy python:{self.spec} stopped (its process exited with {code})")

    def _interpreter(self) -> str:
        """What the child is started with, as one names it to fix it: the path, the file it really is, the sealing
        (in namespaces the path must resolve inside the sandbox's root too)."""
        return f"interpreter {sys.executable} -> {os.path.realpath(sys.executable)}, sealing {self.sealing}"

    def _read(self) -> dict[str, Any]:
        """One answer line, within the step's deadline and the answer's size and nesting caps."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + self.limits.step_timeout
        while b"\n" not in self._buf:
            if len(self._buf) > self.limits.reply_bytes:
                raise self._overrun("policy_budget", f"answered more than {self.limits.reply_bytes} bytes in one step")
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._overrun("policy_timeout", f"did not answer within {self.limits.step_timeout:g} s "
                                                      "(--step-timeout)")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                self._died()
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        if len(line) > self.limits.reply_bytes:
            raise self._overrun("policy_budget", f"answered more than {self.limits.reply_bytes} bytes in one step")
        try:
            reply = json.loads(line)
        except RecursionError:
            raise self._overrun("policy_budget", f"answered JSON nested deeper than {self.limits.reply_depth} levels") \
                from None
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            self._kill()
            raise PolicyFailed(f"the policy python:{self.spec} wrote something else than voe's answer on its standard "
                               f"output: {line[:200]!r} (print to standard error instead)")
        if nested_deeper_than(reply, self.limits.reply_depth + 1):
            raise self._overrun("policy_budget", f"answered JSON nested deeper than {self.limits.reply_depth} levels")
        if "budget" in reply:
            raise self._overrun("policy_budget", str(reply["budget"])[:300])
        return reply

    def act(self, view: TaskView, answer: TaskAnswer, history: list[dict[str, Any]], rng: random.Random,
            episode: str = "", seed: int = 0) -> Any:
        """The policy's action for this step; PolicyOverrun past a limit (the trajectory's outcome)."""
        if self.proc is None:  # the last one passed a limit: a new child for this trajectory
            self._start()
        msg = {"episode": episode, "seed": seed, "task": view.model_dump(mode="json"), "history": history}
        self._write((json.dumps(msg) + "\n").encode(), time.monotonic() + self.limits.step_timeout)
        reply = self._read()
        if "error" in reply:
            self._kill()
            raise PolicyFailed(f"the policy python:{self.spec} raised {reply['error']}")
        return reply.get("action")

    def close(self) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self._kill()
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
