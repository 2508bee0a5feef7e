"""Regenerate tools/neo4j/jars.lock.json: every jar of the local Neo4j server, pinned by coordinates and sha256.

    python tools/neo4j_lock.py                      # the versions the lock names now (a refresh)
    python tools/neo4j_lock.py --neo4j 5.26.31      # another 5.26.x (the Neo4j version lives only in the lock)
    python tools/neo4j_lock.py --check              # resolve only; exit 1 if the lock's jar set differs

The runtime closure of neo4j-server, neo4j (the kernel) and neo4j-browser is resolved in Python by jgo (a dev
dependency; `voe db up` itself never resolves, it only downloads what the lock names). The roots are resolved
"raw" (no BOM import of the roots' own dependencyManagement), which is Maven's mediation: the same 214 jars
as `mvn dependency:copy-dependencies -DincludeScope=runtime` gave for 5.26.30. Each jar is downloaded from the
repository `voe db up` uses (VOE_MAVEN_REPOSITORY, a mirror of central in ~/.m2/settings.xml, else Maven
Central), checked against the repository's published .sha1, and its sha256 and size written to the lock.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from voe.neo4j_jars import JarLock, JarPin, load_lock, maven_opener, repository  # noqa: E402

LOCK_FILE = ROOT / "tools" / "neo4j" / "jars.lock.json"


def resolve(neo4j: str, browser: str) -> list[JarPin]:
    from jgo.maven import MavenContext

    roots = [f"org.neo4j.app:neo4j-server:{neo4j}", f"org.neo4j:neo4j:{neo4j}",
             f"org.neo4j.client:neo4j-browser:{browser}"]
    ctx = MavenContext(remote_repos={"central": repository()})
    deps = [ctx.create_dependency(coord) for coord in roots]
    for dep in deps:
        dep.raw = True
    inputs, transitive = ctx.resolver.resolve(deps)
    pins: dict[str, JarPin] = {}
    for dep in [*inputs, *transitive]:
        if dep.scope not in (None, "compile", "runtime") or (dep.type or "jar") != "jar":
            continue
        pin = JarPin.of(dep.groupId, dep.artifactId, dep.version, dep.classifier or "")
        pins[pin.file] = pin
    return sorted(pins.values(), key=lambda p: p.file)


def pin_hashes(pins: list[JarPin]) -> list[JarPin]:
    opener = maven_opener()
    base = repository().rstrip("/")
    out = []
    for n, pin in enumerate(pins, 1):
        url = f"{base}/{pin.path}"
        with opener.open(url, timeout=60) as resp:
            data = resp.read()
        with opener.open(url + ".sha1", timeout=60) as resp:
            published = resp.read().decode().split()[0].strip().lower()
        if hashlib.sha1(data).hexdigest() != published:
            raise SystemExit(f"{pin.coordinates}: bytes from {url} do not match the published sha1 {published}")
        out.append(pin.model_copy(update={"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}))
        print(f"[{n}/{len(pins)}] {pin.file} {len(data):,} B", file=sys.stderr)
    return out


def render(lock: JarLock) -> str:
    """One jar per line, so an upgrade's diff reads as the jars that changed."""
    head = json.dumps({"neo4j": lock.neo4j, "browser": lock.browser})[:-1]
    rows = ",\n".join("  " + json.dumps(pin.model_dump()) for pin in lock.jars)
    return f"{head}, \"jars\": [\n{rows}\n]}}\n"


def main() -> int:
    current = load_lock(LOCK_FILE) if LOCK_FILE.exists() else None
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--neo4j", default=current.neo4j if current else None, help="a Neo4j 5.26.x version")
    ap.add_argument("--browser", default=current.browser if current else "5.24.0",
                    help="the neo4j-browser jar (5.24.0 is the newest on Maven Central)")
    ap.add_argument("--check", action="store_true", help="resolve only and compare the jar set with the lock")
    args = ap.parse_args()
    if not args.neo4j:
        ap.error("--neo4j is required when there is no lock yet")
    if not str(args.neo4j).startswith("5.26."):
        ap.error("voe runs Neo4j 5.26 LTS (Java 17/21); other lines change the server's command line and settings")
    pins = resolve(args.neo4j, args.browser)
    if args.check:
        locked = {p.coordinates for p in current.jars} if current else set()
        resolved = {p.coordinates for p in pins}
        for c in sorted(locked - resolved):
            print(f"only in the lock: {c}")
        for c in sorted(resolved - locked):
            print(f"only resolved:    {c}")
        print(f"{len(resolved)} jars resolved, {len(locked)} locked")
        return 0 if locked == resolved else 1
    lock = JarLock(neo4j=args.neo4j, browser=args.browser, jars=pin_hashes(pins))
    LOCK_FILE.write_text(render(lock))
    print(f"wrote {LOCK_FILE.relative_to(ROOT)}: Neo4j {lock.neo4j}, {len(lock.jars)} jars, "
          f"{sum(p.size for p in lock.jars) / 2**20:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
