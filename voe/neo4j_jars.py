"""Neo4j's jars, pinned: a lock file names every jar by coordinates, size and sha256; the server's classpath holds
those and nothing else.

`tools/neo4j/jars.lock.json` (packed into the wheel) is the one place the Neo4j version lives;
`python tools/neo4j_lock.py --neo4j 5.26.x` regenerates it. `voe db up` downloads the jars it names into
`<cache>/neo4j-<version>/lib` (into `lib.partial/` first, each jar checked before it is kept, the folder renamed
when complete) and checks every entry of the cache's lib/ against the lock on each start, so a jar changed, added
or truncated there is an error naming it, never a silent re-download. (Jars a user puts in an instance's
plugins/ folder are Neo4j plugins and the user's business; voe puts none there.)

Where from, in this order: VOE_MAVEN_REPOSITORY; the Maven settings file's (VOE_MAVEN_SETTINGS, default
~/.m2/settings.xml) mirror of `central` as Maven picks it (one naming `central` exactly, else the first whose
pattern covers it: `*`, `external:*`, not `!central`); Maven Central. Proxies: the usual https_proxy / http_proxy /
no_proxy variables, else the settings file's first active <proxy> (port 8080 by default, its nonProxyHosts
honoured; `${env.NAME}` expanded in every value read).
"""

from __future__ import annotations

import fcntl
import fnmatch
import hashlib
import http.client
import os
import re
import shutil
import ssl
import threading
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from functools import lru_cache
from pathlib import Path
from urllib.parse import quote, urlsplit

from pydantic import BaseModel, ConfigDict

from voe.errors import ServerError
from voe.resources import data_path
from voe.settings import named_variable, settings

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
_CHUNK = 1 << 16


class JarPin(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    coordinates: str  # group:artifact:version[:classifier]
    file: str
    path: str  # inside a Maven repository
    size: int = 0
    sha256: str = ""

    @classmethod
    def of(cls, group: str, artifact: str, version: str, classifier: str = "") -> JarPin:
        suffix = f"-{classifier}" if classifier else ""
        file = f"{artifact}-{version}{suffix}.jar"
        coords = f"{group}:{artifact}:{version}" + (f":{classifier}" if classifier else "")
        return cls(coordinates=coords, file=file, path=f"{group.replace('.', '/')}/{artifact}/{version}/{file}")


class JarLock(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    neo4j: str
    browser: str
    jars: list[JarPin]

    @property
    def total_bytes(self) -> int:
        return sum(pin.size for pin in self.jars)


@lru_cache(maxsize=1)
def load_lock(path: Path | None = None) -> JarLock:
    return JarLock.model_validate_json((path or data_path("neo4j/jars.lock.json")).read_bytes())


def neo4j_version() -> str:
    return load_lock().neo4j


# ---------------------------------------------------------------------------- where from
def _maven_settings() -> Path:
    return settings().maven_settings or Path(os.path.expanduser("~/.m2/settings.xml"))


def _settings_xml() -> ET.Element | None:
    path = _maven_settings()
    if not path.is_file():
        return None
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise ServerError(f"{path}: not a readable Maven settings file ({exc})") from exc
    return root


def _children(node: ET.Element, name: str) -> list[ET.Element]:
    return [c for c in node.iter() if c.tag.rsplit("}", 1)[-1] == name]


def _text(node: ET.Element, name: str) -> str:
    for child in node:
        if child.tag.rsplit("}", 1)[-1] == name:
            return (child.text or "").strip()
    return ""


def _expand(text: str) -> str:
    """Maven's `${env.NAME}` in a settings value (other properties are left as written)."""
    return re.sub(r"\$\{env\.([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: named_variable(m.group(1)), text)


def _mirror_of(mirror_of: str, exact: bool) -> bool:
    """Maven's selection: a mirror naming `central` exactly wins over any pattern; patterns in file order."""
    parts = [p.strip() for p in mirror_of.split(",")]
    if exact:
        return parts == ["central"]
    if "!central" in parts:
        return False
    return any(p in ("*", "central", "external:*") for p in parts)


def repository() -> str:
    """The Maven repository base URL the jars come from (see the module's docstring for the order)."""
    configured = settings().voe_maven_repository
    if configured:
        return configured.rstrip("/")
    root = _settings_xml()
    if root is not None:
        mirrors = _children(root, "mirror")
        for exact in (True, False):
            for mirror in mirrors:
                url = _expand(_text(mirror, "url"))
                if url and _mirror_of(_text(mirror, "mirrorOf"), exact):
                    return url.rstrip("/")
    return MAVEN_CENTRAL


def _bypassed(host: str, non_proxy_hosts: str) -> bool:
    """Maven's nonProxyHosts: `|`-separated host names, `*` a wildcard."""
    return any(fnmatch.fnmatch(host.lower(), pattern.strip().lower())
               for pattern in non_proxy_hosts.split("|") if pattern.strip())


def _settings_proxy(host: str = "") -> dict[str, str]:
    """The settings file's first active proxy (Maven's default port 8080), unless `host` is one of its
    nonProxyHosts. The proxy is spoken to over HTTP (Maven's <protocol> names what it carries)."""
    root = _settings_xml()
    if root is None:
        return {}
    for proxy in _children(root, "proxy"):
        if _text(proxy, "active").lower() == "false":
            continue
        proxy_host, port = _expand(_text(proxy, "host")), _expand(_text(proxy, "port")) or "8080"
        if not proxy_host:
            continue
        if host and _bypassed(host, _expand(_text(proxy, "nonProxyHosts"))):
            return {}
        user, password = _expand(_text(proxy, "username")), _expand(_text(proxy, "password"))
        auth = f"{quote(user, safe='')}:{quote(password, safe='')}@" if user else ""
        url = f"http://{auth}{proxy_host}:{port}"
        return {"http": url, "https": url}
    return {}


def maven_opener() -> urllib.request.OpenerDirector:
    """urllib with the environment's proxies (https_proxy, http_proxy, no_proxy), else the settings file's."""
    env = urllib.request.getproxies()
    if any(k in env for k in ("http", "https")):
        return urllib.request.build_opener(urllib.request.ProxyHandler(env))
    host = urlsplit(repository()).hostname or ""
    return urllib.request.build_opener(urllib.request.ProxyHandler(_settings_proxy(host)))


# ---------------------------------------------------------------------------- check and fetch
def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def verify(lib: Path, lock: JarLock) -> None:
    """Every jar of the lock present with its size and sha256, and no other jar (all go on the classpath)."""
    expected = {pin.file: pin for pin in lock.jars}
    problems: list[str] = []
    for pin in lock.jars:
        path = lib / pin.file
        if not path.is_file():
            problems.append(f"{pin.file} ({pin.coordinates}) is missing")
        elif path.stat().st_size != pin.size or _sha256(path) != pin.sha256:
            problems.append(f"{pin.file} ({pin.coordinates}) does not match its sha256 in the lock")
    # every entry, not *.jar: Java's `lib/*` also loads X.JAR, and a folder of classes would be as bad
    for path in sorted(lib.iterdir()):
        if path.name not in expected and path.name != ".complete":
            problems.append(f"{path.name} is not in the lock")
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise ServerError(
            f"the Neo4j jars in {lib} do not match tools/neo4j/jars.lock.json: {shown}. Nothing was started; "
            f"remove {lib} and run `voe db up` again to download them afresh."
        )


# Waits before the second and third try of a jar whose download failed on the way (a name lookup, a reset
# connection, a timeout, a 5xx or 429 from the repository); a 404 or a refused certificate is not tried again.
RETRY_DELAYS = (2.0, 8.0)


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code >= 500 or exc.code == 429
    if isinstance(exc, urllib.error.URLError):
        # a name lookup, a refused or reset connection, a timeout (all OSErrors), not a certificate
        return isinstance(exc.reason, OSError) and not isinstance(exc.reason, ssl.SSLError)
    return isinstance(exc, (TimeoutError, ConnectionError, http.client.HTTPException))


def _download(opener: urllib.request.OpenerDirector, base: str, pin: JarPin, into: Path,
              advance: Callable[[int], None]) -> None:
    target = into / pin.file
    if target.is_file() and target.stat().st_size == pin.size and _sha256(target) == pin.sha256:
        advance(pin.size)  # kept from an interrupted earlier run
        return
    url = f"{base}/{pin.path}"
    part = into / (pin.file + ".part")
    for attempt in range(len(RETRY_DELAYS) + 1):
        digest, size = hashlib.sha256(), 0
        try:
            with opener.open(url, timeout=60) as resp, open(part, "wb") as out:
                while chunk := resp.read(_CHUNK):
                    size += len(chunk)
                    if size > pin.size:
                        break  # more bytes than the lock names: the check below refuses it without reading on
                    digest.update(chunk)
                    out.write(chunk)
                    advance(len(chunk))
            break
        except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
            part.unlink(missing_ok=True)
            advance(-min(size, pin.size))  # what this try counted is counted again by the next
            if attempt < len(RETRY_DELAYS) and _transient(exc):
                time.sleep(RETRY_DELAYS[attempt])
                continue
            reason = getattr(exc, "reason", exc)
            tries = f" (tried {attempt + 1} times)" if attempt else ""
            raise ServerError(f"could not download {pin.file} ({pin.coordinates}) from {url}{tries}: {reason}") from exc
    if size != pin.size or digest.hexdigest() != pin.sha256:
        part.unlink(missing_ok=True)
        raise ServerError(
            f"{pin.file} ({pin.coordinates}) from {url} does not match the lock (sha256 {pin.sha256[:16]}..., "
            f"{pin.size:,} bytes; got {f'more than {pin.size:,}' if size > pin.size else f'{size:,}'} bytes); "
            "nothing was kept. "
            "A mirror serving other bytes, or a proxy rewriting them, is the usual cause."
        )
    part.replace(target)


def fetch(lib: Path, lock: JarLock, *, log: Callable[[str], None] = lambda _m: None,
          progress: Callable[[int, int], None] | None = None, jobs: int = 4) -> Path:
    """Download the lock's jars into `lib` (once); an interrupted run keeps the jars it had checked. Two `voe db
    up` at once on one cache take turns (a lock file beside `lib`): the second finds the jars complete."""
    if (lib / ".complete").exists():
        return lib
    lib.parent.mkdir(parents=True, exist_ok=True)
    with open(lib.parent / ".fetch.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if (lib / ".complete").exists():
            return lib
        return _fetch_locked(lib, lock, log, progress, jobs)


def _fetch_locked(lib: Path, lock: JarLock, log: Callable[[str], None],
                  progress: Callable[[int, int], None] | None, jobs: int) -> Path:
    base = repository()
    partial = lib.with_name("lib.partial")
    partial.mkdir(parents=True, exist_ok=True)
    log(f"downloading Neo4j {lock.neo4j}'s {len(lock.jars)} jars ({lock.total_bytes / 2**20:.0f} MiB) from {base} "
        "(once; each checked against tools/neo4j/jars.lock.json)")
    opener = maven_opener()
    done = [0]
    guard = threading.Lock()

    def advance(n: int) -> None:
        with guard:
            done[0] += n
            if progress is not None:
                progress(done[0], lock.total_bytes)

    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        futures = [pool.submit(_download, opener, base, pin, partial, advance) for pin in lock.jars]
        for future in as_completed(futures):
            error = future.exception()
            if error is not None:  # the first failure ends the download: no waiting for the queued jars
                raise error if isinstance(error, ServerError) else ServerError(str(error))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # a Ctrl-C too: the running downloads end within a read
    for stray in partial.glob("*.part"):
        stray.unlink()
    verify(partial, lock)
    (partial / ".complete").write_text(lock.neo4j)
    shutil.rmtree(lib, ignore_errors=True)
    partial.rename(lib)
    return lib
