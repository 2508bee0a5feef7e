"""Neo4j's jars as the lock pins them: downloaded from a repository (here a local one), checked, never trusted.

The repository is a real HTTP server on 127.0.0.1 serving a Maven layout; the lock is a small one made for
the test. The lock shipped with voe is checked for shape here and for content by the fresh-machine test.
"""

from __future__ import annotations

import hashlib
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from voe.errors import ServerError
from voe.neo4j_jars import MAVEN_CENTRAL, JarLock, JarPin, fetch, load_lock, repository, verify


def _pin(group: str, artifact: str, version: str, data: bytes) -> JarPin:
    pin = JarPin.of(group, artifact, version)
    return pin.model_copy(update={"size": len(data), "sha256": hashlib.sha256(data).hexdigest()})


JARS = {("org.example", "alpha", "1.0"): b"alpha-bytes" * 1000, ("org.example.deep", "beta", "2.1"): b"beta" * 50}
LOCK = JarLock(neo4j="5.26.0", browser="5.24.0", jars=[_pin(*coords, data) for coords, data in JARS.items()])


class Repo:
    def __init__(self, root: Path, url: str) -> None:
        self.root, self.url = root, url
        self.requests: list[str] = []
        self.failing: dict[str, int] = {}
        self.gets: list[str] = []

    def put(self, pin: JarPin, data: bytes) -> None:
        path = self.root / pin.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Repo]:
    root = tmp_path / "m2"
    root.mkdir()
    seen: list[str] = []
    failing: dict[str, int] = {}  # a path -> how many more requests of it get a 503
    gets: list[str] = []  # one entry per GET (the log has two lines for an error)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(root), **kwargs)  # type: ignore[arg-type]

        def do_GET(self) -> None:
            gets.append(self.path)
            if failing.get(self.path):
                failing[self.path] -= 1
                self.send_error(503, "busy")
                return
            super().do_GET()

        def log_message(self, *args: object) -> None:
            seen.append(self.path)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/maven2"
    (root / "maven2").mkdir()
    r = Repo(root / "maven2", url)
    r.requests = seen
    r.failing = failing
    r.gets = gets
    for pin, data in zip(LOCK.jars, JARS.values(), strict=True):
        r.put(pin, data)
    monkeypatch.setenv("VOE_MAVEN_REPOSITORY", url)
    monkeypatch.setenv("VOE_MAVEN_SETTINGS", str(tmp_path / "no-settings.xml"))  # not the developer's proxy
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.delenv(var, raising=False)
    yield r
    server.shutdown()


def test_the_shipped_lock_pins_every_jar_of_the_server(tmp_path: Path) -> None:
    lock = load_lock()
    files = {pin.file for pin in lock.jars}
    assert len(files) == len(lock.jars) > 200
    assert {f"neo4j-server-{lock.neo4j}.jar", f"neo4j-{lock.neo4j}.jar", f"neo4j-browser-{lock.browser}.jar"} <= files
    assert all(len(pin.sha256) == 64 and pin.size > 0 and pin.path.endswith("/" + pin.file) for pin in lock.jars)
    assert lock.neo4j.startswith("5.26.")


def test_fetch_downloads_checks_and_keeps_the_jars(repo: Repo, tmp_path: Path) -> None:
    lib = tmp_path / "cache" / "neo4j-5.26.0" / "lib"
    seen: list[tuple[int, int]] = []
    assert fetch(lib, LOCK, progress=lambda done, total: seen.append((done, total))) == lib
    for pin, data in zip(LOCK.jars, JARS.values(), strict=True):
        assert (lib / pin.file).read_bytes() == data
    assert (lib / ".complete").read_text() == "5.26.0"
    assert not lib.with_name("lib.partial").exists()
    assert seen[-1] == (LOCK.total_bytes, LOCK.total_bytes)
    verify(lib, LOCK)
    before = len(repo.requests)
    fetch(lib, LOCK)  # complete: nothing is downloaded again
    assert len(repo.requests) == before


def test_bytes_other_than_the_lock_names_are_refused_and_not_kept(repo: Repo, tmp_path: Path) -> None:
    alpha = LOCK.jars[0]
    repo.put(alpha, b"A" * alpha.size)  # same size, other bytes: a mirror or proxy serving something else
    lib = tmp_path / "lib"
    with pytest.raises(ServerError, match=r"alpha-1\.0\.jar \(org\.example:alpha:1\.0\) from http://127\.0\.0\.1:\d+/"
                                          r"maven2/org/example/alpha/1\.0/alpha-1\.0\.jar does not match the lock"):
        fetch(lib, LOCK)
    partial = lib.with_name("lib.partial")
    assert not (partial / alpha.file).exists() and not list(partial.glob("*.part"))
    assert not lib.exists()
    repo.put(alpha, JARS[("org.example", "alpha", "1.0")] + b"more")  # longer than the lock says
    with pytest.raises(ServerError, match=r"got more than 11,000 bytes"):
        fetch(lib, LOCK)


def test_a_missing_jar_names_the_jar_and_url_and_an_interrupted_fetch_resumes(repo: Repo, tmp_path: Path) -> None:
    beta = LOCK.jars[1]
    (repo.root / beta.path).unlink()
    lib = tmp_path / "lib"
    with pytest.raises(ServerError, match=r"could not download beta-2\.1\.jar \(org\.example\.deep:beta:2\.1\) from "
                                          r"http://127\.0\.0\.1:\d+/maven2/org/example/deep/beta/2\.1/beta-2\.1\.jar"):
        fetch(lib, LOCK)
    assert (lib.with_name("lib.partial") / LOCK.jars[0].file).is_file()  # the checked jar was kept
    repo.put(beta, JARS[("org.example.deep", "beta", "2.1")])
    repo.requests.clear()
    fetch(lib, LOCK)
    assert [path for path in repo.requests if "alpha" in path] == []  # not downloaded twice
    verify(lib, LOCK)


def test_a_download_failing_on_the_way_is_tried_again_and_a_missing_jar_is_not(
        repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 503 (as a DNS failure, a reset connection or a timeout) is tried again up to twice; a 404 ends at once."""
    monkeypatch.setattr("voe.neo4j_jars.RETRY_DELAYS", (0.0, 0.0))
    alpha, beta = LOCK.jars
    repo.failing["/maven2/" + alpha.path] = 2
    lib = tmp_path / "lib"
    seen: list[tuple[int, int]] = []
    fetch(lib, LOCK, progress=lambda done, total: seen.append((done, total)))
    verify(lib, LOCK)
    assert len([p for p in repo.gets if alpha.file in p]) == 3 and repo.failing["/maven2/" + alpha.path] == 0
    assert seen[-1] == (LOCK.total_bytes, LOCK.total_bytes)
    repo.failing["/maven2/" + beta.path] = 3  # one more than the tries
    with pytest.raises(ServerError, match=r"could not download beta-2\.1\.jar .* \(tried 3 times\): .*busy"):
        fetch(tmp_path / "lib2", LOCK)
    (repo.root / beta.path).unlink()
    repo.gets.clear()
    with pytest.raises(ServerError, match=r"could not download beta-2\.1\.jar .*/beta-2\.1\.jar: File not found"):
        fetch(tmp_path / "lib3", LOCK)
    assert len([p for p in repo.gets if beta.file in p]) == 1


def test_verify_names_a_changed_missing_or_extra_jar(repo: Repo, tmp_path: Path) -> None:
    lib = fetch(tmp_path / "lib", LOCK)
    alpha, beta = LOCK.jars
    (lib / alpha.file).write_bytes(b"X" + (lib / alpha.file).read_bytes()[1:])  # same size, one byte changed
    with pytest.raises(ServerError, match=r"alpha-1\.0\.jar \(org\.example:alpha:1\.0\) does not match its sha256"):
        verify(lib, LOCK)
    (lib / beta.file).unlink()
    (lib / "evil-1.0.jar").write_bytes(b"x")
    (lib / "EVIL.JAR").write_bytes(b"x")  # Java's lib/* loads this one too
    with pytest.raises(ServerError) as err:
        verify(lib, LOCK)
    assert "beta-2.1.jar (org.example.deep:beta:2.1) is missing" in str(err.value)
    assert "evil-1.0.jar is not in the lock" in str(err.value) and "EVIL.JAR is not in the lock" in str(err.value)
    assert f"remove {lib}" in str(err.value)


def test_the_repository_is_the_variable_else_a_central_mirror_else_maven_central(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VOE_MAVEN_REPOSITORY", raising=False)
    settings_xml = tmp_path / "settings.xml"
    monkeypatch.setenv("VOE_MAVEN_SETTINGS", str(settings_xml))
    assert repository() == MAVEN_CENTRAL  # no settings file
    settings_xml.write_text("""<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0"><mirrors>
      <mirror><id>other</id><mirrorOf>snapshots</mirrorOf><url>https://wrong.example/</url></mirror>
      <mirror><id>not-central</id><mirrorOf>*,!central</mirrorOf><url>https://wrong2.example/</url></mirror>
      <mirror><id>corp</id><mirrorOf>external:*</mirrorOf><url>https://nexus.example/maven2/</url></mirror>
    </mirrors></settings>""")
    assert repository() == "https://nexus.example/maven2"
    settings_xml.write_text("""<settings><mirrors>
      <mirror><id>all</id><mirrorOf>*</mirrorOf><url>https://all.example/</url></mirror>
      <mirror><id>c</id><mirrorOf>central</mirrorOf><url>${env.VOE_TEST_MIRROR}/maven2</url></mirror>
    </mirrors></settings>""")
    monkeypatch.setenv("VOE_TEST_MIRROR", "https://exact.example")
    assert repository() == "https://exact.example/maven2"  # Maven: an exact mirrorOf wins over a pattern
    monkeypatch.setenv("VOE_MAVEN_REPOSITORY", "https://explicit.example/repo/")
    assert repository() == "https://explicit.example/repo"
    monkeypatch.delenv("VOE_MAVEN_REPOSITORY")
    settings_xml.write_text("<settings><mirrors><mirror>")  # truncated
    with pytest.raises(ServerError, match="not a readable Maven settings file"):
        repository()


def test_the_settings_files_proxy_is_used_when_the_environment_names_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from voe.neo4j_jars import _settings_proxy

    settings_xml = tmp_path / "settings.xml"
    monkeypatch.setenv("VOE_MAVEN_SETTINGS", str(settings_xml))
    settings_xml.write_text("""<settings><proxies>
      <proxy><id>off</id><active>false</active><protocol>http</protocol><host>off.example</host></proxy>
      <proxy><id>on</id><protocol>http</protocol><host>proxy.example</host><port>3128</port>
        <username>u</username><password>p</password></proxy></proxies></settings>""")
    assert _settings_proxy() == {"http": "http://u:p@proxy.example:3128", "https": "http://u:p@proxy.example:3128"}
    settings_xml.write_text("""<settings><proxies><proxy><host>proxy.example</host><username>me</username>
      <password>p@ss:w%rd</password><nonProxyHosts>localhost|*.corp.example</nonProxyHosts></proxy>
      </proxies></settings>""")
    assert _settings_proxy("repo.example.org")["https"] == "http://me:p%40ss%3Aw%25rd@proxy.example:8080"
    assert _settings_proxy("nexus.corp.example") == {}  # nonProxyHosts: straight to the repository


def _proxies_of(opener: object) -> dict[str, str]:
    import urllib.request

    handlers = [h for h in getattr(opener, "handlers", []) if isinstance(h, urllib.request.ProxyHandler)]
    return dict(handlers[0].proxies) if handlers else {}


def test_the_environments_proxy_wins_over_the_settings_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from voe.neo4j_jars import maven_opener

    settings_xml = tmp_path / "settings.xml"
    settings_xml.write_text("<settings><proxies><proxy><host>from-settings.example</host></proxy></proxies></settings>")
    monkeypatch.setenv("VOE_MAVEN_SETTINGS", str(settings_xml))
    monkeypatch.setenv("VOE_MAVEN_REPOSITORY", "https://repo.example/maven2")
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(var, raising=False)
    assert _proxies_of(maven_opener())["https"] == "http://from-settings.example:8080"
    monkeypatch.setenv("https_proxy", "http://from-env.example:3128")
    assert _proxies_of(maven_opener())["https"] == "http://from-env.example:3128"


def test_two_fetches_at_once_take_turns_and_download_each_jar_once(repo: Repo, tmp_path: Path) -> None:
    lib = tmp_path / "cache" / "neo4j-5.26.0" / "lib"
    errors: list[BaseException] = []

    def one() -> None:
        try:
            fetch(lib, LOCK)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    verify(lib, LOCK)
    assert sorted(p for p in repo.requests if p.endswith(".jar")) == sorted(f"/maven2/{pin.path}" for pin in LOCK.jars)
