"""Reach benchmark (issue 42): ingest of the new source formats, items/s, seconds and peak memory.

Cases: the shared folders of each format as they are (`nist-rmm-snapshots/`, `eln-exports/`,
`nist-preservation-bags/`), and a generated archive of each format at --items items (default 10,000): a NERDm
collection (RMM search results: 100 records of items/100 DataFiles each, every 50th without a checksum), an RO-Crate
.eln (items File entities, every 100th misnamed, one undescribed member per 100), and a BagIt bag (items payload
files, every 100th listed with another digest). Each case runs in a fresh subprocess against an emptied graph, so
peak RSS is per case. Needs a running Neo4j (NEO4J_URI or `voe db up`); it empties the graph it uses.

    python bench/formats.py [--items 10000] [--json]

Prints one line per case; figures are comparable run to run on the same machine (state it when you quote them).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "archives"


def nerdm_collection(folder: Path, items: int) -> Path:
    records = []
    per = max(1, items // 100)
    for r in range(100):
        comps = []
        for i in range(per):
            path = f"data/file_{i:05d}.csv"
            comp = {"@id": f"cmps/{path}", "@type": ["nrdp:DataFile", "nrdp:DownloadableFile"], "filepath": path,
                    "mediaType": "text/csv", "size": 100 + i}
            if i % 50:
                comp["checksum"] = {"hash": hashlib.sha256(f"{r}/{i}".encode()).hexdigest(),
                                    "algorithm": {"tag": "sha256"}}
            comps.append(comp)
        records.append({"@id": f"ark:/88434/bench-{r:03d}", "_schema": "https://data.nist.gov/od/dm/nerdm-schema/v0.7#",
                        "@type": ["nrdp:PublicDataResource"], "title": f"Bench record {r}", "version": "1.0.0",
                        "components": comps})
    out = folder / "search.json"
    out.write_text(json.dumps({"ResultCount": len(records), "ResultData": records}))
    return out


def crate(folder: Path, items: int) -> Path:
    out = folder / "bench.eln"
    graph = [{"@id": "ro-crate-metadata.json", "@type": "CreativeWork", "about": {"@id": "./"},
              "dateCreated": "2025-01-01"}, {"@id": "./", "@type": "Dataset", "name": "bench"}]
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for i in range(items):
            data = f"a,b\n{i},{i * 2}\n".encode()
            name = f"data/f{i:05d}.csv"
            z.writestr(f"bench/{'data//' + name[5:] if i % 100 == 0 else name}", data)
            graph.append({"@id": f"./{name}", "@type": "File", "contentSize": len(data),
                          "sha256": hashlib.sha256(data).hexdigest(), "encodingFormat": "text/csv"})
            if i % 100 == 1:
                z.writestr(f"bench/extra/x{i:05d}.csv", data)
        z.writestr("bench/ro-crate-metadata.json", json.dumps({"@graph": graph}))
    return out


def bag(folder: Path, items: int) -> Path:
    root = folder / "bench-bag"
    (root / "data").mkdir(parents=True)
    lines, octets = [], 0
    for i in range(items):
        data = f"x,y\n{i},{i}\n".encode()
        (root / "data" / f"f{i:05d}.csv").write_bytes(data)
        octets += len(data)
        digest = "0" * 64 if i % 100 == 0 else hashlib.sha256(data).hexdigest()
        lines.append(f"{digest}  data/f{i:05d}.csv")
    (root / "bagit.txt").write_text("BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n")
    (root / "bag-info.txt").write_text(f"Payload-Oxum: {octets}.{items}\n")
    (root / "manifest-sha256.txt").write_text("\n".join(lines) + "\n")
    return root


def _child(path: str) -> dict[str, float]:
    from voe.graph import Graph
    from voe.ingest import ingest_paths

    graph = Graph()
    graph.clear()
    t0 = time.perf_counter()
    report = ingest_paths([Path(path)], graph, validate_schema=False)
    seconds = time.perf_counter() - t0
    items = sum(sum(r.components.values()) for r in report.per_record)
    return {"seconds": round(seconds, 2), "records": report.records, "items": items,
            "items_per_s": round(items / seconds, 1) if seconds else 0.0,
            "defects": sum(report.defects.values()), "errors": len(report.errors),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_child(args.child)))
        return 0
    results = {}
    with tempfile.TemporaryDirectory(prefix="voe-bench-formats-") as tmp:
        cases = {"shared nist-rmm-snapshots": SHARED / "nist-rmm-snapshots", "shared eln-exports": SHARED / "eln-exports",
                 "shared nist-preservation-bags": SHARED / "nist-preservation-bags"}
        for name, make in (("nerdm collection", nerdm_collection), ("ro-crate .eln", crate), ("bagit bag", bag)):
            sub = Path(tmp) / name.replace(" ", "_").replace(".", "")
            sub.mkdir()
            cases[f"generated {name} ({args.items} items)"] = make(sub, args.items)
        for name, path in cases.items():
            done = subprocess.run([sys.executable, __file__, "--child", str(path)], capture_output=True, text=True)
            if done.returncode != 0:
                print(f"{name}: failed: {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
                return 1
            results[name] = json.loads(done.stdout.strip().splitlines()[-1])
    if args.json:
        print(json.dumps({"machine": platform.platform(), "cases": results}, indent=2))
    else:
        print(f"machine: {platform.platform()}, {platform.processor() or 'cpu'}")
        for name, r in results.items():
            print(f"{name}: {r['items']} items in {r['records']} records, {r['seconds']} s, {r['items_per_s']} items/s, "
                  f"{r['defects']} defects, peak {r['peak_rss_mib']} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
