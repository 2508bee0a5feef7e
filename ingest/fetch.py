"""`voe fetch`: download a NIST PDR record (NERDm) and selected files into the layout `voe ingest` reads.

NERDm from `{base}/od/id/{ID}?format=nerdm`, files from `{base}/od/ds/{ID}/{filepath}`. Nothing the server
sends is trusted:

- Every file is written under `<into>/.voe-part/` (a folder no NERDm filepath may name) and only renamed to
  its final name once it has the declared size and the declared checksum (sha256, sha1, md5, sha512, ...,
  as the record names it). A file with no checksum, or one in an algorithm hashlib does not offer, is put in
  place as `unverified`, never `ok`, and is always downloaded from byte zero.
- A cut connection is resumed with an HTTP Range request only for a verifiable file, and a 206 answer is
  used only when its Content-Range is exactly the range asked for (start = bytes held, total = the declared
  size); anything else restarts the file from zero.
- Limits: the NERDm answer may be at most `RECORD_CAP` bytes; a file body may not run past its declared
  size (or `UNSIZED_CAP` when no size is declared); `max_bytes` counts the file bytes as they arrive;
  besides the per-read `timeout`, each file has an overall `file_deadline` and the run a `deadline`, enforced
  by closing the socket, so a server that drips bytes is cut off on time.
- Redirects are followed only to the base URL's host over HTTPS (or to the base URL's own scheme and host
  when it is plain http on a loopback address, as in tests); any other target fails the file.
- A filepath that is absolute, has `..`, empty or `.` segments, a NUL or another control character, a
  backslash, names `nerdm.json` or `.voe-part`, or clashes with another one (`a` and `a/b`, or the same path
  twice) fails that file with a message; the run goes on with the others.

Timeouts, connection errors, 5xx answers, short bodies and checksum mismatches are retried with exponential
backoff; a 404 (or another 4xx) is reported at once. Files already in place with the right checksum are not
downloaded again, so a re-run only fetches what is missing.
"""

from __future__ import annotations

import email.utils
import fnmatch
import hashlib
import http.client
import json
import re
import socket
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import quote, urlsplit

from pydantic import BaseModel, Field

from voe.errors import InputError, VoeError
from voe.ingest.sources.nerdm.build import MAX_JSON_DEPTH, json_depth
from voe.settings import settings

DEFAULT_BASE_URL = "https://data.nist.gov"
CHUNK = 1 << 16
PART_DIR = ".voe-part"  # temporary files; a NERDm filepath naming it is refused
RECORD_CAP = 64 << 20  # the NERDm answer: 64 MiB
UNSIZED_CAP = 1 << 30  # a file whose record declares no size: 1 GiB
DEADLINE = 6 * 3600.0  # the whole run
FILE_DEADLINE = 3600.0  # one file (or the NERDm answer), all attempts included
ALGORITHMS = ("md5", "sha1", "sha224", "sha256", "sha384", "sha512")
LOOPBACK = ("127.0.0.1", "localhost", "::1")
_ESCAPE = "filepath escapes --into or names the record file; refused"


class FetchError(VoeError):
    """The record's metadata could not be fetched at all."""


# ok: checked against the record; unverified: no usable checksum; exists: already in place; skipped: not
# included or over --max-bytes; failed: not in place (see error)
FileStatus = Literal["ok", "unverified", "exists", "skipped", "failed"]


class FileResult(BaseModel):
    filepath: str
    status: FileStatus
    bytes: int = 0  # size under the final name
    received: int = 0  # body bytes that arrived for this file in this run (all attempts)
    attempts: int = 0
    resumed: bool = False
    checksum: str | None = None  # the algorithm the bytes were checked with
    partial: int = 0  # bytes kept in .voe-part/ for a later resume (a verifiable file that did not finish)
    note: str | None = None  # why a file is unverified
    error: str | None = None


class FetchReport(BaseModel):
    record: str
    base_url: str
    into: str
    files: list[FileResult] = Field(default_factory=list)
    bytes: int = 0  # bytes of the files put in place by this run
    received: int = 0  # file body bytes that arrived (what --max-bytes counts)
    seconds: float = 0.0

    @property
    def failed(self) -> list[FileResult]:
        return [f for f in self.files if f.status == "failed"]

    @property
    def unverified(self) -> list[FileResult]:
        return [f for f in self.files if f.status == "unverified"]


class _Retry(Exception):
    """A transient failure worth another attempt (a partial download may be resumed)."""


class _Restart(_Retry):
    """A failure worth another attempt from byte zero: the partial download is discarded."""


class _Fatal(Exception):
    """A failure no retry can fix (a refused redirect, a body over the cap)."""


class _Budget(Exception):
    """--max-bytes is used up."""


class _Deadline(Exception):
    def __init__(self, clock: _Clock) -> None:
        super().__init__(f"{clock.what} passed")
        self.clock = clock


@dataclass(frozen=True)
class _Clock:
    at: float  # time.monotonic()
    what: str  # "file deadline (600 s)" | "run deadline (21600 s)"
    run: bool

    def left(self) -> float:
        return self.at - time.monotonic()

    def check(self) -> None:
        if time.monotonic() >= self.at:
            raise _Deadline(self)


@dataclass(frozen=True)
class _Check:
    algorithm: str
    digest: str


@dataclass
class _Run:
    base: str
    origins: frozenset[tuple[str, str, int]]
    retries: int
    timeout: float
    backoff: float
    run_clock: _Clock
    file_seconds: float
    unsized_cap: int
    budget: int | None  # what is left of --max-bytes
    # bytes: called with (body bytes arrived in this run, bytes the wanted files declare) as they arrive
    bytes_bar: Callable[[int, int], None] | None = None
    arrived: int = 0
    expected: int = 0

    def count(self, n: int) -> None:
        self.arrived += n
        if self.bytes_bar is not None:
            self.bytes_bar(self.arrived, max(self.expected, self.arrived))

    def clock(self) -> _Clock:
        at = time.monotonic() + self.file_seconds
        if at >= self.run_clock.at:
            return self.run_clock
        return _Clock(at, f"file deadline ({self.file_seconds:g} s)", run=False)


def base_url_from_env(explicit: str | None) -> str:
    return (explicit or settings().voe_pdr_base_url).rstrip("/")


def fetch(record: str, into: Path, *, include: list[str] | None = None, max_bytes: int | None = None,
          base_url: str | None = None, retries: int = 4, timeout: float = 30.0, backoff: float = 0.5,
          deadline: float = DEADLINE, file_deadline: float = FILE_DEADLINE, record_cap: int = RECORD_CAP,
          unsized_cap: int = UNSIZED_CAP, progress: Callable[[str], None] | None = None,
          bytes_bar: Callable[[int, int], None] | None = None) -> FetchReport:
    """`progress` gets a line per file; `bytes_bar` (arrived, expected) the body bytes as they arrive, against the
    sizes the wanted files declare."""
    say = progress or (lambda _m: None)
    base = base_url_from_env(base_url)
    started = time.perf_counter()
    rec_id = record.rsplit("/", 1)[-1] if record.startswith("ark:") else record
    report = FetchReport(record=rec_id, base_url=base, into=str(into))
    run = _Run(base=base, origins=_allowed_origins(base), retries=retries, timeout=timeout, backoff=backoff,
               run_clock=_Clock(time.monotonic() + deadline, f"run deadline ({deadline:g} s)", run=True),
               file_seconds=file_deadline, unsized_cap=unsized_cap,
               budget=max_bytes if max_bytes is None else max(0, max_bytes), bytes_bar=bytes_bar)
    into.mkdir(parents=True, exist_ok=True)
    tmp = into / PART_DIR
    try:
        tmp.mkdir(exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the folder for temporary files ({exc})", path=str(tmp)) from exc

    keep: set[str] | None = None  # temporary names worth keeping; None: the record never arrived
    try:
        keep = _fetch_files(run, rec_id, into, tmp, include, record_cap, report, say)
    finally:
        _tidy(tmp, keep)
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def _fetch_files(run: _Run, rec_id: str, into: Path, tmp: Path, include: list[str] | None, record_cap: int,
                 report: FetchReport, say: Callable[[str], None]) -> set[str]:
    base = run.base
    rec_url = f"{base}/od/id/{quote(rec_id)}?format=nerdm"
    raw = _get_record(run, rec_url, record_cap)
    where = f"{base}/od/id/{rec_id}"
    too_deep = f"the PDR answer nests arrays and objects deeper than {MAX_JSON_DEPTH} levels; not read as a NERDm record"
    try:
        doc = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"the PDR answered with something that is not JSON ({exc})", path=where) from exc
    except RecursionError as exc:  # as `voe ingest` refuses it (ingest/sources/nerdm/build.py)
        raise InputError(too_deep, path=where) from exc
    except ValueError as exc:  # an integer literal beyond Python's digit limit (4,300 digits)
        raise InputError(f"the PDR answer is not a JSON record voe can read: {str(exc).split(';')[0]}",
                         path=where) from exc
    if json_depth(doc, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise InputError(too_deep, path=where)
    if not isinstance(doc, dict) or not isinstance(doc.get("components"), list):
        raise InputError("the PDR answer is not a NERDm record with components", path=where)
    try:
        _atomic_write(into / "nerdm.json", tmp / "nerdm.json.tmp", raw)
    except OSError as exc:
        raise InputError(f"cannot write the record ({exc})", path=str(into / "nerdm.json")) from exc

    files = [c for c in doc["components"] if isinstance(c, dict) and _is_file(c)]
    wanted = [c for c in files if not include or any(fnmatch.fnmatch(_filepath(c), g) for g in include)]
    problems = _path_problems([_filepath(c) for c in wanted])
    run.expected = sum(_size(c) or 0 for c in wanted)
    run.count(0)
    keep = {_part_name(_filepath(c), _size(c), _checksum(c)[0]) for c in files}
    root = into.resolve()
    for n, comp in enumerate(wanted, start=1):
        fp = _filepath(comp)
        tag = f"[{n}/{len(wanted)}] {fp!r}" if _unprintable(fp) else f"[{n}/{len(wanted)}] {fp}"
        result = FileResult(filepath=fp, status="failed")
        report.files.append(result)
        try:
            _one(run, rec_id, comp, into, root, tmp, problems.get(fp), result)
        except OSError as exc:  # the local disk: a folder in the way, no space, no permission
            result.status, result.error = "failed", f"cannot write {fp!r} under --into ({exc.strerror or exc})"
        if result.status in ("ok", "unverified"):
            report.bytes += result.bytes
        report.received += result.received
        say(f"{tag}: {result.status}"
            + (f" ({result.bytes} B, {result.attempts} attempt(s))" if result.status in ("ok", "unverified") else "")
            + (f" - {result.error}" if result.error else "") + (f" - {result.note}" if result.note else ""))
    return keep


def _one(run: _Run, rec_id: str, comp: dict[str, Any], into: Path, root: Path, tmp: Path, problem: str | None,
         result: FileResult) -> None:
    fp = result.filepath
    if problem:
        result.error = problem
        return
    dest = into / fp
    real = dest.parent.resolve() / dest.name  # a symlinked folder on disk may lead elsewhere
    if not real.is_relative_to(root) or real == root / "nerdm.json" or real.is_relative_to(root / PART_DIR):
        result.error = _ESCAPE
        return
    size = _size(comp)
    check, note = _checksum(comp)
    result.checksum = check.algorithm if check else None
    if dest.is_dir() and not dest.is_symlink():
        result.error = f"a folder {fp!r} is in the way of the file"
        return
    if check and dest.is_file() and not dest.is_symlink() and _digest(dest, check.algorithm) == check.digest:
        result.status, result.bytes = "exists", dest.stat().st_size
        return
    try:
        run.run_clock.check()
    except _Deadline as exc:
        result.error = f"not attempted: {exc}"
        return
    part = tmp / _part_name(fp, size, check)
    have = part.stat().st_size if check and part.is_file() else 0
    if run.budget is not None and ((size is not None and size - min(have, size) > run.budget)
                                   or (size is None and run.budget == 0)):
        result.status = "skipped"
        result.error = (f"over --max-bytes ({size} B)" if size is not None and run.budget > 0
                        else "--max-bytes used up")
        result.partial = have
        return
    url = f"{run.base}/od/ds/{quote(rec_id)}/{quote(fp)}"
    _download(run, url, dest, part, size, check, result)
    if result.status == "ok" and check is None:
        result.status, result.note = "unverified", note


def _download(run: _Run, url: str, dest: Path, part: Path, size: int | None, check: _Check | None,
              result: FileResult) -> None:
    clock = run.clock()
    resumable = check is not None
    if not resumable:
        part.unlink(missing_ok=True)  # bytes nobody can verify are never resumed
    for attempt in range(run.retries + 1):
        result.attempts = attempt + 1
        asked: float | None = None  # what a 429 or 503 said to wait (Retry-After)
        try:
            _attempt(run, url, part, size, resumable, clock, result)
            got = part.stat().st_size
            if size is not None and got != size:
                raise _Retry(f"size {got} B, NERDm declares {size} B")
            if check and (digest := _digest(part, check.algorithm)) != check.digest:
                raise _Restart(f"{check.algorithm} {digest} does not match NERDm {check.digest}")
            _place(part, dest, got, result)
            return
        except urllib.error.HTTPError as exc:
            result.error = f"HTTP {exc.code}" + (" (not served)" if exc.code == 404 else f" {exc.reason}")
            asked = retry_after(exc.headers) if exc.code in (429, 503) else None
            if exc.code == 416:
                part.unlink(missing_ok=True)  # the range held is not there: start over
            elif exc.code < 500 and exc.code not in (408, 429):
                part.unlink(missing_ok=True)  # not served (404, 403, a refused redirect scheme): nothing to resume
                break
        except _Budget as exc:
            result.status, result.error = "skipped", str(exc)
            break
        except _Deadline as exc:
            result.error = f"{exc} after {result.received} B"
            break
        except _Fatal as exc:
            result.error = str(exc)
            part.unlink(missing_ok=True)
            break
        except _Restart as exc:
            result.error = str(exc)
            part.unlink(missing_ok=True)
        except (_Retry, urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            result.error = str(getattr(exc, "reason", exc)) or type(exc).__name__
        if attempt < run.retries:
            _pause(run, attempt, clock, asked)
    # did not finish: keep a verifiable partial for the next run, drop anything else
    if resumable and part.is_file() and part.stat().st_size and (size is None or part.stat().st_size < size):
        result.partial = part.stat().st_size
    else:
        part.unlink(missing_ok=True)


def _place(part: Path, dest: Path, got: int, result: FileResult) -> None:
    """Move verified (or, with no checksum, size-checked) bytes to the final name; a local failure fails the file."""
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        part.replace(dest)
    except OSError as exc:
        part.unlink(missing_ok=True)
        where = f" ({exc.filename})" if exc.filename else ""
        result.status, result.error = "failed", f"cannot put the file in place: {exc.strerror or exc}{where}"
        return
    result.status, result.bytes, result.error = "ok", got, None


def _attempt(run: _Run, url: str, part: Path, size: int | None, resumable: bool, clock: _Clock,
             result: FileResult) -> None:
    have = part.stat().st_size if resumable and part.is_file() else 0
    if size is not None and have > size:
        part.unlink()  # longer than the record says: start over rather than resume
        have = 0
    if size is not None and have == size and part.is_file():
        return
    if run.budget is not None and size is not None and size - have > run.budget:
        raise _Budget(f"--max-bytes reached after {result.received} B")
    with _request(run, url, clock, have) as resp:
        if resp.status == 206:
            problem = _range_problem(resp.headers.get("Content-Range"), _content_length(resp), have, size)
            if problem:
                raise _Restart(f"HTTP 206 refused: {problem}")
            result.resumed = result.resumed or have > 0
        elif resp.status == 200:
            have = 0
        else:
            raise _Retry(f"unexpected HTTP {resp.status}")
        length = _content_length(resp)
        expect = size - have if size is not None else length
        if size is not None and length is not None and length != expect:
            raise _Restart(f"the server announces {length} B where NERDm declares {size} B")
        if size is None and length is not None and length > run.unsized_cap:
            raise _Fatal(f"no size declared and the server announces {length} B, over the {run.unsized_cap} B cap")
        cap = expect if expect is not None else run.unsized_cap - have
        written = 0
        with part.open("ab" if have else "wb") as fh:
            while True:
                if expect is not None and written == expect:
                    break
                want = min(CHUNK, cap + 1 - written)
                if run.budget is not None:
                    if run.budget == 0:
                        raise _Budget(f"--max-bytes reached after {result.received} B")
                    want = min(want, run.budget)
                try:
                    chunk = resp.read1(want)
                except http.client.IncompleteRead as exc:
                    raise _Retry("connection closed early") from exc
                clock.check()
                if not chunk:
                    break
                fh.write(chunk)
                written += len(chunk)
                result.received += len(chunk)
                run.count(len(chunk))
                if run.budget is not None:
                    run.budget -= len(chunk)
                if written > cap:
                    if size is None:
                        raise _Fatal(f"no size declared and the body runs past the {cap} B cap")
                    raise _Restart(f"the body runs past the {size} B NERDm declares")
        if expect is not None and written < expect:
            raise _Retry(f"short body ({written} of {expect} B)")


def _get_record(run: _Run, url: str, cap: int) -> bytes:
    clock = run.clock()
    last = ""
    for attempt in range(run.retries + 1):
        asked: float | None = None
        try:
            with _request(run, url, clock, 0) as resp:
                length = _content_length(resp)
                if length is not None and length > cap:
                    raise FetchError(f"{url}: the NERDm answer announces {length} B, over the {cap} B cap")
                body = bytearray()
                while True:
                    try:
                        chunk = resp.read1(CHUNK)
                    except http.client.IncompleteRead as exc:
                        raise _Retry("connection closed early") from exc
                    clock.check()
                    if not chunk:
                        break
                    body += chunk
                    if len(body) > cap:
                        raise FetchError(f"{url}: the NERDm answer runs past the {cap} B cap")
                if length is not None and length != len(body):
                    raise _Retry(f"short body ({len(body)} of {length} B)")
                return bytes(body)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                raise FetchError(f"{url}: no such record (HTTP 404)") from exc
            if exc.code < 500 and exc.code not in (408, 429):
                raise FetchError(f"{url}: HTTP {exc.code} {exc.reason}") from exc
            last = f"HTTP {exc.code}"
            asked = retry_after(exc.headers) if exc.code in (429, 503) else None
        except _Deadline as exc:
            raise FetchError(f"{url}: {exc}") from exc
        except _Fatal as exc:
            raise FetchError(f"{url}: {exc}") from exc
        except (urllib.error.URLError, OSError, http.client.HTTPException, _Retry) as exc:
            last = str(getattr(exc, "reason", exc)) or type(exc).__name__
        if attempt < run.retries:
            _pause(run, attempt, clock, asked)
    raise FetchError(f"{url}: gave up after {run.retries + 1} attempts ({last})")


MAX_RETRY_AFTER = 600.0  # a server asking for more than this is waited for this long (within the deadline)


def retry_after(headers: Any) -> float | None:
    """Seconds a 429 or 503 asks the client to wait: a Retry-After of seconds or an HTTP date (RFC 9110)."""
    value = headers.get("Retry-After") if headers is not None else None
    if not value:
        return None
    value = str(value).strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _pause(run: _Run, attempt: int, clock: _Clock, asked: float | None) -> None:
    """The backoff before another attempt, or longer when the server asked for it; never past the deadline."""
    wait = run.backoff * 2**attempt
    if asked is not None:
        wait = max(wait, min(asked, MAX_RETRY_AFTER))
    time.sleep(max(0.0, min(wait, clock.left())))


# ------------------------------------------------------------------------------------------ HTTP
class _Guard:
    """Shuts the request's sockets down when the deadline passes, in whatever phase the request is (connect,
    headers, body): a per-read timeout alone never ends a server that sends one byte at a time."""

    def __init__(self, clock: _Clock) -> None:
        self.fired = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, clock.left()), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def watch(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            self._socks.append(sock)
            fired = self.fired
        if fired:
            _shut(sock)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            socks = list(self._socks)
        for sock in socks:
            _shut(sock)

    def cancel(self) -> None:
        self._timer.cancel()


def _shut(sock: socket.socket) -> None:
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


class _HTTPConnection(http.client.HTTPConnection):
    def __init__(self, host: str, *args: Any, guard: _Guard | None = None, **kwargs: Any) -> None:
        super().__init__(host, *args, **kwargs)
        self._guard = guard

    def connect(self) -> None:
        super().connect()
        if self._guard:
            self._guard.watch(self.sock)


class _HTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, host: str, *args: Any, guard: _Guard | None = None, **kwargs: Any) -> None:
        super().__init__(host, *args, **kwargs)
        self._guard = guard

    def connect(self) -> None:
        super().connect()
        if self._guard:
            self._guard.watch(self.sock)


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, guard: _Guard) -> None:
        super().__init__()
        self._guard = guard

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPConnection, req, guard=self._guard)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, guard: _Guard) -> None:
        super().__init__()
        self._guard = guard

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPSConnection, req, guard=self._guard)


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to an allowed origin; any other target fails the request, named."""

    def __init__(self, origins: frozenset[tuple[str, str, int]]) -> None:
        super().__init__()
        self._origins = origins

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> urllib.request.Request | None:
        if _origin(newurl) not in self._origins:
            fp.close()
            allowed = ", ".join(sorted(f"{s}://{h}:{p}" for s, h, p in self._origins))
            raise _Fatal(f"redirect (HTTP {code}) to {newurl} refused: only {allowed} is followed")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _origin(url: str) -> tuple[str, str, int] | None:
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        port = parts.port or {"http": 80, "https": 443}.get(scheme, 0)
    except ValueError:
        return None
    return (scheme, (parts.hostname or "").lower(), port)


def _allowed_origins(base: str) -> frozenset[tuple[str, str, int]]:
    own = _origin(base)
    if own is None:
        return frozenset()
    scheme, host, port = own
    allowed = {("https", host, port if scheme == "https" else 443)}
    if scheme == "http" and host in LOOPBACK:
        allowed.add(own)  # a local stand-in (tests)
    return frozenset(allowed)


@contextmanager
def _request(run: _Run, url: str, clock: _Clock, start: int) -> Iterator[http.client.HTTPResponse]:
    clock.check()
    guard = _Guard(clock)
    opener = urllib.request.build_opener(_HTTPHandler(guard), _HTTPSHandler(guard), _Redirects(run.origins))
    request = urllib.request.Request(url, headers={"Range": f"bytes={start}-"} if start else {})
    try:
        with opener.open(request, timeout=max(0.001, min(run.timeout, clock.left()))) as resp:
            yield cast(http.client.HTTPResponse, resp)
    except (OSError, http.client.HTTPException, _Retry) as exc:
        if guard.fired or time.monotonic() >= clock.at:
            raise _Deadline(clock) from exc
        raise
    finally:
        guard.cancel()


def _content_length(resp: http.client.HTTPResponse) -> int | None:
    value = resp.headers.get("Content-Length")
    if value is None or not value.strip().isdigit():
        return None
    return int(value)


def _range_problem(header: str | None, length: int | None, have: int, size: int | None) -> str | None:
    """Why a 206 answer does not carry exactly the bytes asked for (`bytes={have}-` of `size`), or None."""
    asked = f"bytes={have}-" + (f" of {size} B" if size is not None else "")
    m = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+|\*)", (header or "").strip())
    if not m:
        return f"Content-Range {header!r} is not a byte range (asked for {asked})"
    first, last, total = int(m[1]), int(m[2]), None if m[3] == "*" else int(m[3])
    if (first != have or last < first or (size is not None and total != size)
            or (total is not None and last != total - 1) or (length is not None and length != last - first + 1)):
        return f"Content-Range {header!r} does not match the request (asked for {asked})"
    return None


# ------------------------------------------------------------------------------------- the record
def _is_file(comp: dict[str, Any]) -> bool:
    types = comp.get("@type", [])
    types = [types] if isinstance(types, str) else types if isinstance(types, list) else []
    return any(t in ("nrdp:DataFile", "nrdp:ChecksumFile") for t in types)


def _filepath(comp: dict[str, Any]) -> str:
    fp = comp.get("filepath")
    return fp if isinstance(fp, str) else ""


def _size(comp: dict[str, Any]) -> int | None:
    size = comp.get("size")
    return size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else None


def _checksum(comp: dict[str, Any]) -> tuple[_Check | None, str | None]:
    """The declared checksum in its declared algorithm, or None and why the file cannot be verified."""
    cs = comp.get("checksum")
    if not isinstance(cs, dict) or not cs.get("hash"):
        return None, "no checksum declared"
    alg = cs.get("algorithm")
    tag = alg.get("tag") if isinstance(alg, dict) else alg
    if not isinstance(tag, str) or not tag.strip():
        return None, "the checksum names no algorithm"
    name = tag.strip().lower().replace("-", "").replace("_", "")
    if name not in ALGORITHMS:
        return None, f"unknown checksum algorithm {tag!r}"
    digest = str(cs["hash"]).strip().lower()
    width = hashlib.new(name, usedforsecurity=False).digest_size * 2
    if not re.fullmatch(f"[0-9a-f]{{{width}}}", digest):
        return None, f"the declared {name} is not {width} hex digits"
    return _Check(name, digest), None


def _unprintable(fp: str) -> bool:
    return any(ord(ch) < 32 or ord(ch) == 127 for ch in fp)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _path_problems(fps: list[str]) -> dict[str, str]:
    """Per filepath, why it cannot be written (an invalid name, an escape, a clash with another filepath)."""
    out: dict[str, str] = {}
    for fp in fps:
        segs = fp.split("/")
        if not fp:
            out[fp] = "the component has no filepath; refused"
        elif "\x00" in fp:
            out[fp] = "filepath contains a NUL byte; refused"
        elif _unprintable(fp):
            out[fp] = "filepath contains a control character; refused"
        elif fp.startswith("/") or ".." in segs or fp == "nerdm.json":
            out[fp] = _ESCAPE
        elif "\\" in fp:
            out[fp] = "filepath contains a backslash; refused"
        elif "" in segs or "." in segs:
            out[fp] = "filepath has an empty or '.' segment; refused"
        elif segs[0] == PART_DIR:
            out[fp] = f"filepath is inside {PART_DIR}/, which voe fetch keeps for temporary files; refused"
        elif any(len(s.encode("utf-8", "surrogatepass")) > 255 for s in segs):
            out[fp] = "filepath has a segment longer than 255 bytes; refused"
        elif not _encodable(fp):
            out[fp] = "filepath holds a lone surrogate (no UTF-8 form, so no URL can name it); refused"
    valid = [fp for fp in fps if fp not in out]
    counts = Counter(valid)
    for fp, k in counts.items():
        if k > 1:
            out[fp] = f"filepath appears {k} times in the record; refused"
    held = set(valid)
    for fp in held:
        segs = fp.split("/")
        for i in range(1, len(segs)):
            folder = "/".join(segs[:i])
            if folder in held:
                why = f"filepath {folder!r} is a file and also the folder of {fp!r}; both refused"
                out.setdefault(folder, why)
                out.setdefault(fp, why)
    return out


# ------------------------------------------------------------------------------------------ files
def _part_name(fp: str, size: int | None, check: _Check | None) -> str:
    """A flat temporary name under .voe-part/: the same file of the same record version resumes, nothing else."""
    key = f"{fp}\x00{size}\x00{check.algorithm + ':' + check.digest if check else ''}"
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:40] + ".part"


def _digest(path: Path, algorithm: str) -> str:
    h = hashlib.new(algorithm, usedforsecurity=False)
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _atomic_write(path: Path, tmp: Path, data: bytes) -> None:
    tmp.write_bytes(data)
    tmp.replace(path)


def _tidy(tmp: Path, keep: set[str] | None) -> None:
    """Drop temporary files no component of this record could resume (when the record arrived: `keep`);
    the folder goes when empty."""
    try:
        for entry in tmp.iterdir():
            stale = entry.name not in keep if keep is not None else entry.name == "nerdm.json.tmp"
            if stale and (entry.is_file() or entry.is_symlink()):
                entry.unlink(missing_ok=True)
        tmp.rmdir()
    except OSError:
        pass  # not empty (a partial kept for resume) or already gone


def as_json(report: FetchReport) -> dict[str, Any]:
    return report.model_dump() | {"failed": len(report.failed), "unverified": len(report.unverified)}
