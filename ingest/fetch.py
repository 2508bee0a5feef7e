"""`voe fetch`: download a NIST PDR record (NERDm) and selected files into the layout `voe ingest` reads.

NERDm from `{base}/od/id/{ID}?format=nerdm`, files from `{base}/od/ds/{ID}/{filepath}`. Each file is
written to `<filepath>.part`, resumed with an HTTP Range request after a cut connection, checked against
the NERDm size and sha256, and only then renamed into place: a partial or corrupt download never sits
under the final name. Timeouts, connection errors, 5xx answers, short bodies and checksum mismatches are
retried with exponential backoff; a 404 is reported at once. Files already in place with the right
sha256 are not downloaded again, so a re-run only fetches what is missing.
"""

from __future__ import annotations

import fnmatch
import hashlib
import http.client
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, Field

from voe.errors import InputError, VoeError

DEFAULT_BASE_URL = "https://data.nist.gov"
CHUNK = 1 << 16


class FetchError(VoeError):
    """The record's metadata could not be fetched at all."""


class FileResult(BaseModel):
    filepath: str
    status: str  # ok | exists | skipped | failed
    bytes: int = 0
    attempts: int = 0
    resumed: bool = False
    error: str | None = None


class FetchReport(BaseModel):
    record: str
    base_url: str
    into: str
    files: list[FileResult] = Field(default_factory=list)
    bytes: int = 0
    seconds: float = 0.0

    @property
    def failed(self) -> list[FileResult]:
        return [f for f in self.files if f.status == "failed"]


class _Retry(Exception):
    """A transient failure worth another attempt."""


def base_url_from_env(explicit: str | None) -> str:
    return (explicit or os.environ.get("VOE_PDR_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")


def fetch(record: str, into: Path, *, include: list[str] | None = None, max_bytes: int | None = None,
          base_url: str | None = None, retries: int = 4, timeout: float = 30.0, backoff: float = 0.5,
          progress: Callable[[str], None] | None = None) -> FetchReport:
    say = progress or (lambda _m: None)
    base = base_url_from_env(base_url)
    started = time.perf_counter()
    rec_id = record.rsplit("/", 1)[-1] if record.startswith("ark:") else record
    report = FetchReport(record=rec_id, base_url=base, into=str(into))
    into.mkdir(parents=True, exist_ok=True)

    raw = _get_metadata(f"{base}/od/id/{quote(rec_id)}?format=nerdm", retries, timeout, backoff)
    try:
        doc = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"the PDR answered with something that is not JSON ({exc})", path=f"{base}/od/id/{rec_id}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("components"), list):
        raise InputError("the PDR answer is not a NERDm record with components", path=f"{base}/od/id/{rec_id}")
    _atomic_write(into / "nerdm.json", raw)

    wanted = [c for c in doc["components"] if isinstance(c, dict) and isinstance(c.get("filepath"), str)
              and any(t in ("nrdp:DataFile", "nrdp:ChecksumFile") for t in c.get("@type", []))]
    if include:
        wanted = [c for c in wanted if any(fnmatch.fnmatch(c["filepath"], g) for g in include)]
    budget = max_bytes
    root = into.resolve()
    for n, comp in enumerate(wanted, start=1):
        fp = comp["filepath"]
        size = comp.get("size") if isinstance(comp.get("size"), int) else None
        sha = str((comp.get("checksum") or {}).get("hash") or "").lower() or None
        target = (into / fp).resolve()
        if (not target.is_relative_to(root) or target == root or Path(fp).is_absolute() or fp.endswith("/")
                or target == (root / "nerdm.json")):
            # a record must not write outside --into (`../x`, `/etc/x` in a filepath)
            report.files.append(FileResult(filepath=fp, status="failed",
                                           error="filepath escapes --into or names the record file; refused"))
            say(f"[{n}/{len(wanted)}] {fp}: refused (not a file path inside --into)")
            continue
        if target.exists() and sha and _sha256(target) == sha:
            report.files.append(FileResult(filepath=fp, status="exists", bytes=target.stat().st_size))
            say(f"[{n}/{len(wanted)}] {fp}: already complete")
            continue
        if budget is not None and size is not None and size > budget:
            report.files.append(FileResult(filepath=fp, status="skipped", error=f"over --max-bytes ({size} B)"))
            say(f"[{n}/{len(wanted)}] {fp}: skipped (over --max-bytes)")
            continue
        url = f"{base}/od/ds/{quote(rec_id)}/{quote(fp)}"
        result = _download(url, target, fp, size, sha, retries, timeout, backoff)
        report.files.append(result)
        if result.status == "ok":
            report.bytes += result.bytes
            if budget is not None:
                budget -= result.bytes
        say(f"[{n}/{len(wanted)}] {fp}: {result.status} ({result.bytes} B, {result.attempts} attempt(s))"
            + (f" - {result.error}" if result.error else ""))
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def _get_metadata(url: str, retries: int, timeout: float, backoff: float) -> bytes:
    last = ""
    for attempt in range(retries + 1):
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:
                body: bytes = resp.read()
                length = resp.headers.get("Content-Length")
                if length is not None and int(length) != len(body):
                    raise _Retry(f"short body ({len(body)} of {length} B)")
                return body
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                raise FetchError(f"{url}: no such record (HTTP 404)") from exc
            if exc.code < 500:
                raise FetchError(f"{url}: HTTP {exc.code}") from exc
            last = f"HTTP {exc.code}"
        except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException, _Retry) as exc:
            last = str(getattr(exc, "reason", exc))
        time.sleep(backoff * 2**attempt)
    raise FetchError(f"{url}: gave up after {retries + 1} attempts ({last})")


def _download(url: str, target: Path, fp: str, size: int | None, sha: str | None, retries: int, timeout: float,
              backoff: float) -> FileResult:
    part = target.with_name(target.name + ".part")
    target.parent.mkdir(parents=True, exist_ok=True)
    result = FileResult(filepath=fp, status="failed")
    for attempt in range(retries + 1):
        result.attempts = attempt + 1
        try:
            _stream(url, part, size, timeout, result)
            got_size = part.stat().st_size
            if size is not None and got_size != size:
                raise _Retry(f"size {got_size} B, NERDm declares {size} B")
            if sha and (got := _sha256(part)) != sha:
                part.unlink(missing_ok=True)  # wrong bytes: resuming would keep them
                raise _Retry(f"sha256 {got} does not match NERDm {sha}")
            part.replace(target)
            result.status, result.bytes, result.error = "ok", got_size, None
            return result
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                result.error = "HTTP 404 (not served)"
                part.unlink(missing_ok=True)
                return result
            result.error = f"HTTP {exc.code}"
            if exc.code < 500 and exc.code != 416:
                return result
            if exc.code == 416:
                part.unlink(missing_ok=True)
        except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException, _Retry, OSError) as exc:
            result.error = str(getattr(exc, "reason", exc)) or type(exc).__name__
        time.sleep(backoff * 2**attempt)
    return result


def _stream(url: str, part: Path, size: int | None, timeout: float, result: FileResult) -> None:
    have = part.stat().st_size if part.exists() else 0
    if size is not None and have > size:
        part.unlink()  # longer than the record says: start over rather than resume
        have = 0
    if size is not None and have == size:
        return
    request = urllib.request.Request(url)
    if have:
        request.add_header("Range", f"bytes={have}-")
    with urllib.request.urlopen(request, timeout=timeout) as resp:
        resumed = resp.status == 206
        result.resumed = result.resumed or resumed
        mode = "ab" if resumed else "wb"
        expected = resp.headers.get("Content-Length")
        written = 0
        with part.open(mode) as fh:
            while True:
                try:
                    chunk = resp.read(CHUNK)
                except http.client.IncompleteRead as exc:
                    fh.write(exc.partial)
                    raise _Retry("connection closed early") from exc
                if not chunk:
                    break
                fh.write(chunk)
                written += len(chunk)
        if expected is not None and written < int(expected):
            raise _Retry(f"short body ({written} of {expected} B)")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".part")
    tmp.write_bytes(data)
    tmp.replace(path)


def as_json(report: FetchReport) -> dict[str, Any]:
    return report.model_dump() | {"failed": len(report.failed)}
