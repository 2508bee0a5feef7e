"""Parse a record's held files in worker processes under the operating system's limits, ahead of the builder that
consumes them in its own order.

Every held file is parsed in a worker process, never in the ingest's own: a parser is library code fed hostile
bytes (a PDF's CMap range of 2^24 codes, a font's width array of 2^31, a workbook of 44 million shared strings),
and what it allocates or computes per range, string or copy is not something the byte and token budgets of
ingest/payloads/limits.py can count. So each worker runs with an address-space limit (its size when it was forked
plus `VOE_LIMIT_PARSE_MEMORY`), each file with a CPU limit (`VOE_LIMIT_PARSE_CPU_SECONDS`, SIGXCPU past it) and a
wall-clock deadline (`VOE_LIMIT_PARSE_WALL_SECONDS`, the worker killed past it). A file that passes one gets a
`parse_budget_exceeded` defect naming the limit (rule `parse.os_limit`), no facts, and the ingest goes on with a
fresh worker. Each worker has a pipe of its own, so a worker's death is the death of its one file's parse.

The bytes parsed are the bytes hashed (issue 44): the builder hashes a file through a descriptor opened without
following links (ingest/payloads/files.py `hash_file`, which records the file's device and inode); the worker opens
it the same way, refuses anything but a regular file, parses it through that one descriptor (a private folder's
link to /proc/self/fd/N, so a parser that opens a path by name reads those bytes and keeps its name's extension),
and hashes the descriptor after the parse; the builder takes the parse only if it was of the same file with the
same sha256. A file swapped for a link, or rewritten, while the ingest ran is a `changed_during_ingest` defect
(rule `file.changed`) with no facts, never content from elsewhere.

A builder names up front, in its order, the files it expects to parse (a `ParseAhead` of them); the pool parses a
few of them ahead while the builder hashes, checks and builds rows, and `take` hands each result over when the
builder reaches that file. `parse_file` is a pure function of the file's bytes and the budgets, so the rows are
those of a serial build (tests/ingest/payloads/test_parse_ahead.py compares graphs). A file the builder takes that
was not expected is parsed by a worker then.

Workers are forked: `spawn` and `forkserver` run a caller's `__main__` again in each worker, which a script
without a `__main__` guard does not survive.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import logging
import multiprocessing
import os
import pickle
import resource
import shutil
import signal
import stat
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_for
from pathlib import Path

from voe.ingest.payloads.documents import parse_file
from voe.ingest.payloads.files import CHUNK, LocalBytes
from voe.ingest.payloads.limits import Budgets, current
from voe.ingest.payloads.parsers.model import FileDefect, Parsed, Role
from voe.settings import settings

log = logging.getLogger("voe.ingest")
AHEAD_PER_WORKER = 2  # files parsed ahead per worker: enough to keep it busy, few results held at once
PARENT_CHECK_S = 0.5


def workers() -> int:
    """VOE_PARSE_WORKERS, else the cores this process may use (at most 4); at least one worker process."""
    chosen = settings().voe_parse_workers
    if chosen is not None:
        return max(1, chosen)
    return max(1, min(4, len(os.sched_getaffinity(0))))


def _vm_bytes() -> int:
    """This process's address space now (Linux /proc; 0 where there is none)."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _worker_start(parent: int, memory: int) -> None:
    """In each worker: the address-space limit (its size now plus `memory`); Ctrl-C is the ingest's to handle (it
    stops the pool); a worker whose ingest died (kill -9 leaves the pool no chance to stop it) exits instead of
    holding the ingest's stdout open."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    limit = _vm_bytes() + memory
    with contextlib.suppress(ValueError, OSError):  # a platform without the limit parses unbounded in memory
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_S)
        os._exit(1)

    threading.Thread(target=watch, name="voe-parent-watch", daemon=True).start()


def _cpu_limit(seconds: int) -> None:
    """SIGXCPU once this file has used `seconds` of CPU (the soft limit moves with what the worker used before)."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(used.ru_utime + used.ru_stime) + seconds + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))


class Changed(Exception):
    """The file is not the one the builder hashed any more (another file, a link, rewritten)."""


def _only(rule: str, detail: str) -> Parsed:
    parsed = Parsed(format="binary", role=Role.METADATA)
    parsed.defects.append(FileDefect(rule, detail))
    return parsed


@contextlib.contextmanager
def _pinned(path: Path) -> Iterator[tuple[Path, int, tuple[int, int]]]:
    """The file at `path`, opened without following links and refused unless a regular file, as a path a parser can
    open by name (a private folder's link to this process's descriptor, with the file's name), the descriptor and
    the file's (device, inode)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise Changed("it is now a link" if exc.errno == errno.ELOOP else f"it cannot be opened ({exc.strerror})") \
            from exc
    folder = ""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Changed("it is no longer a regular file")
        if not Path(f"/proc/self/fd/{fd}").exists():  # no procfs: the path itself, checked just now
            yield path, fd, (st.st_dev, st.st_ino)
            return
        folder = tempfile.mkdtemp(prefix="voe-parse-")  # 0700: no one else can put a link in it
        link = Path(folder) / (path.name or "file")
        os.symlink(f"/proc/self/fd/{fd}", link)
        yield link, fd, (st.st_dev, st.st_ino)
    finally:
        os.close(fd)
        if folder:
            shutil.rmtree(folder, ignore_errors=True)


def _sha256_of(fd: int) -> str:
    h = hashlib.sha256()
    os.lseek(fd, 0, os.SEEK_SET)
    while chunk := os.read(fd, CHUNK):
        h.update(chunk)
    return h.hexdigest()


Read = tuple[Parsed | None, str | None, tuple[int, int] | None]  # what was parsed, of which bytes, of which file


@functools.lru_cache(maxsize=1)
def _code_stamp() -> str:
    """What a parse result depends on besides the bytes and the budgets: the parsers' code and libraries."""
    from importlib.metadata import PackageNotFoundError, version

    from voe.ingest.payloads.parsers import registry

    h = hashlib.sha256()
    for source in sorted(Path(__file__).parent.rglob("*.py")):
        h.update(source.name.encode() + source.read_bytes())
    for name in registry.libraries():
        try:
            h.update(f"{name}={version(name)}".encode())
        except PackageNotFoundError:
            h.update(f"{name}=absent".encode())
    return h.hexdigest()


def _cache_file(sha256: str, relpath: str) -> Path:
    key = hashlib.sha256("\0".join((sha256, relpath, _code_stamp(), current().model_dump_json()))
                         .encode("utf-8", "surrogateescape")).hexdigest()  # a name's bytes as the folder holds them
    return settings().cache_dir / "parsed" / key[:2] / f"{key}.pickle"


def _cached(sha256: str, relpath: str) -> Parsed | None | bool:
    """A parse of these bytes under these budgets and this code, if one is cached (False: none is)."""
    try:
        data = _cache_file(sha256, relpath).read_bytes()
    except OSError:
        return False
    try:
        value = pickle.loads(data)  # noqa: S301 - the user's own cache folder (0700), written by this code
    except Exception:  # noqa: BLE001 - a damaged entry is a miss
        return False
    return value if value is None or isinstance(value, Parsed) else False


def _cache(sha256: str, relpath: str, parsed: Parsed | None) -> None:
    target = _cache_file(sha256, relpath)
    with contextlib.suppress(OSError):
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(pickle.dumps(parsed, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(tmp, target)


def _parse(path: str, relpath: str, cpu_seconds: int) -> Read:
    """In a worker: one file, under its CPU limit, through one descriptor; with the sha256 of that descriptor's
    bytes after the parse and the file's identity, which the builder compares with what it hashed. A parse of the
    same bytes under the same budgets and code is read from the cache (VOE_CACHE_DIR/parsed): a re-ingest pays for
    no file twice, a file that passed a limit included."""
    _cpu_limit(cpu_seconds)
    try:
        with _pinned(Path(path)) as (named, fd, inode):
            before = _sha256_of(fd)
            hit = _cached(before, relpath)
            if hit is not False:
                return hit, before, inode  # type: ignore[return-value]
            parsed = parse_file(named, relpath)
            after = _sha256_of(fd)
            if after == before:
                _cache(before, relpath, parsed)
            return parsed, after, inode
    except MemoryError:
        parsed = _exceeded(relpath, "memory", current())
        return parsed, None, None
    except Changed as exc:
        return _changed(relpath, str(exc)), None, None


def _changed(relpath: str, why: str) -> Parsed:
    return _only("file.changed", f"the file changed during the ingest ({why}); not parsed")


def _checked(read: Read, relpath: str, local: LocalBytes | None) -> Parsed | None:
    """The worker's parse, if it read the bytes the builder hashed (same file, same sha256)."""
    parsed, sha, inode = read
    if local is None or sha is None:
        return parsed
    if local.inode is not None and inode is not None and inode != local.inode:
        return _changed(relpath, "another file is at its path")
    if sha != local.sha256:
        return _changed(relpath, "its bytes are not the ones hashed")
    return parsed


def _exceeded(relpath: str, limit: str, budgets: Budgets) -> Parsed:
    value = {"memory": f"{budgets.parse_memory.human_readable()} (VOE_LIMIT_PARSE_MEMORY)",
             "cpu": f"{budgets.parse_cpu_seconds} s of CPU (VOE_LIMIT_PARSE_CPU_SECONDS)",
             "wall": f"{budgets.parse_wall_seconds} s (VOE_LIMIT_PARSE_WALL_SECONDS)"}[limit]
    return _only("parse.os_limit", f"the parser passed the {limit} limit of {value} and was stopped; no fact of the "
                                   "file is located")


class Job:
    """One file to parse: queued, then given to a worker, then done (`read` set)."""

    __slots__ = ("path", "read", "relpath")

    def __init__(self, path: Path, relpath: str) -> None:
        self.path, self.relpath = path, relpath
        self.read: Read | None = None


def _serve(conn: Connection, parent: int, memory: int, cpu_seconds: int) -> None:
    """A worker: files by name from `conn`, each parsed under the limits, what was read sent back; None ends it."""
    _worker_start(parent, memory)
    budgets = current()
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        path, relpath = job
        try:
            read = _parse(path, relpath, cpu_seconds)
            conn.send(read)
        except MemoryError:  # the parse, or pickling what it made, passed the memory limit
            conn.send((_exceeded(relpath, "memory", budgets), None, None))
        except Exception as exc:  # noqa: BLE001 - voe's own failure around the parser: raised in the ingest
            conn.send(Raised(f"{type(exc).__name__}: {exc}"))


class Raised(str):
    """What a worker sends for an exception of voe's own code around a parse (parse_file itself turns a file's
    problems into defects): the ingest raises it as ParseFailed for that file's record."""


class ParseFailed(RuntimeError):
    """voe's code failed in a parser worker (a bug, not the file's problem); its record is not ingested."""


class _Worker:
    __slots__ = ("conn", "job", "proc", "started")

    def __init__(self, proc: multiprocessing.process.BaseProcess, conn: Connection) -> None:
        self.proc, self.conn = proc, conn
        self.job: Job | None = None
        self.started = 0.0


class Workers:
    """The worker processes of one ingest call, forked when a file is first parsed and kept for the records after
    it (forking a large process per record costs more than small files' parsing). Each worker has a pipe of its
    own: a worker that dies, or passes its file's wall-clock deadline and is killed, ends that file only (which
    limit stopped it is in its exit), and only that worker is replaced."""

    def __init__(self) -> None:
        self.count = workers()
        self.budgets = current()
        self._ctx = multiprocessing.get_context("fork")
        self._idle: list[_Worker] = []
        self._busy: list[_Worker] = []
        self._queued: deque[Job] = deque()
        self.forked = 0  # worker processes started (tests and benchmarks read it)

    def submit(self, path: Path, relpath: str) -> Job:
        job = Job(path, relpath)
        self._queued.append(job)
        self._dispatch()
        return job

    def cancel(self, job: Job) -> None:
        """A queued file is dropped; one a worker parses finishes there and is not read."""
        with contextlib.suppress(ValueError):
            self._queued.remove(job)

    def _fork(self) -> _Worker:
        theirs, mine = self._ctx.Pipe(duplex=True)
        proc = self._ctx.Process(target=_serve, daemon=True, name="voe-parse",
                                 args=(theirs, os.getpid(), int(self.budgets.parse_memory),
                                       int(self.budgets.parse_cpu_seconds)))
        proc.start()
        theirs.close()
        self.forked += 1
        return _Worker(proc, mine)

    def _dispatch(self) -> None:
        while self._queued and (self._idle or len(self._busy) < self.count):
            worker = self._idle.pop() if self._idle else self._fork()
            job = self._queued.popleft()
            try:
                worker.conn.send((str(job.path), job.relpath))
            except (OSError, ValueError):  # it died idle (killed from outside): the file goes to another
                self._queued.appendleft(job)
                self._end(worker)
                continue
            worker.job, worker.started = job, time.monotonic()
            self._busy.append(worker)

    def _end(self, worker: _Worker) -> None:
        with contextlib.suppress(OSError):
            worker.proc.kill()
        worker.proc.join(timeout=5)
        worker.conn.close()

    def _finish(self, worker: _Worker, read: Read | None) -> None:
        """`worker`'s file is done (`read`: what it sent; None: it died, and its exit says which limit)."""
        self._busy.remove(worker)
        job = worker.job
        worker.job = None
        if read is None:
            self._end(worker)
            code = worker.proc.exitcode
            limit = "cpu" if code == -signal.SIGXCPU else "memory"  # SIGKILL, SIGSEGV, abort: the address space
            log.warning("%s: the parser process died (exit %s); no fact of the file is kept", job and job.relpath, code)
            read = (_exceeded(job.relpath, limit, self.budgets), None, None) if job else None
        else:
            self._idle.append(worker)
        if job is not None:
            job.read = read  # a Raised (sent as what was read) becomes ParseFailed in `wait`

    def wait(self, job: Job) -> Read:
        """`job`'s read, the workers kept busy meanwhile: a worker past its file's deadline is killed (the `wall`
        limit), a dead one is that file's `cpu` or `memory` limit."""
        wall = float(self.budgets.parse_wall_seconds)
        while job.read is None:
            if job not in self._queued and all(w.job is not job for w in self._busy):
                self._queued.appendleft(job)  # cancelled earlier, wanted after all
            self._dispatch()
            now = time.monotonic()
            for worker in [w for w in self._busy if now - w.started > wall]:
                assert worker.job is not None
                log.warning("%s: the parser passed its deadline; its worker is stopped", worker.job.relpath)
                relpath = worker.job.relpath
                self._busy.remove(worker)
                self._end(worker)
                worker.job.read, worker.job = (_exceeded(relpath, "wall", self.budgets), None, None), None
            if job.read is not None:
                break
            timeout = max(0.0, min(w.started + wall for w in self._busy) - time.monotonic()) if self._busy else 0
            ready = wait_for([x for w in self._busy for x in (w.conn, w.proc.sentinel)], timeout + 0.01)
            for worker in list(self._busy):
                if worker.conn in ready or worker.proc.sentinel in ready:
                    try:
                        read = worker.conn.recv() if worker.conn.poll() else None
                    except (EOFError, OSError):
                        read = None
                    self._finish(worker, read)
        if isinstance(job.read, Raised):
            raise ParseFailed(f"{job.relpath}: the parser worker failed: {job.read}")
        return job.read

    def close(self) -> None:
        """Idle workers are told to end; busy ones (a file nobody waits for any more) are killed."""
        for worker in self._idle:
            with contextlib.suppress(OSError, ValueError):
                worker.conn.send(None)
        for worker in self._busy:
            with contextlib.suppress(OSError):
                worker.proc.kill()
        for worker in [*self._idle, *self._busy]:
            worker.proc.join(timeout=5)
            if worker.proc.is_alive():
                worker.proc.kill()
                worker.proc.join()
            worker.conn.close()
        self._idle, self._busy = [], []
        self._queued.clear()

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ParseAhead:
    """One record's build: `relpaths` are the files under `root` it expects to parse, in the order it will take
    them."""

    def __init__(self, root: Path, relpaths: Iterable[str], pool: Workers) -> None:
        self.root = root
        self._workers = pool
        self._queued: deque[str] = deque(relpaths)
        self._flight: deque[tuple[str, Job]] = deque()
        self._expected: dict[str, int] = {}  # relpath -> how many of its parses are queued or in flight
        for rel in self._queued:
            self._expected[rel] = self._expected.get(rel, 0) + 1
        self._ahead = pool.count * AHEAD_PER_WORKER
        self._fill()

    def _fill(self) -> None:
        while self._queued and len(self._flight) < self._ahead:
            rel = self._queued.popleft()
            self._flight.append((rel, self._workers.submit(self.root / rel, rel)))

    def _forget(self, rel: str) -> None:
        left = self._expected[rel] - 1
        if left:
            self._expected[rel] = left
        else:
            del self._expected[rel]

    def take(self, path: Path, relpath: str, local: LocalBytes | None = None) -> Parsed | None:
        """What `parse_file(path, relpath)` returns, parsed by a worker under the limits, of the bytes `local` (what
        the builder hashed) describes (module docstring)."""
        job: Job | None = None
        if relpath in self._expected and path == self.root / relpath:
            while True:
                if not self._flight:
                    self._fill()
                if not self._flight:
                    break  # expected, but passed over with the files before it
                rel, candidate = self._flight.popleft()
                self._forget(rel)
                if rel == relpath:
                    job = candidate
                    break
                self._workers.cancel(candidate)  # a file the builder passed over (not held after all)
        if job is None:
            job = self._workers.submit(path, relpath)
        self._fill()
        read = self._workers.wait(job)
        parsed = _checked(read, relpath, local)
        if local is not None and read[1] is None and parsed is not None and any(
                d.rule == "parse.os_limit" and "the wall limit" not in d.detail for d in parsed.defects):
            _cache(local.sha256, relpath, parsed)  # a file a limit stopped is not tried again (the wall: a busy machine)
        return parsed

    def close(self) -> None:
        """What is still queued is not needed (a build that stopped early): dropped."""
        for _, job in self._flight:
            self._workers.cancel(job)
        self._flight.clear()
