"""Ingest benchmark: graph elements written per second, seconds and peak memory.

Cases: the real record mds2-4103 (552 components); generated NERDm records of 10k, 100k and 300k components
(half DataFiles, half their .sha256 sidecars, in 100 subcollections; every 50th sidecar disagrees with its
target so the defect path is exercised; record files of 32 MiB and more, here 100k components and up, are
streamed: ingest/sources/nerdm/stream.py); a generated 40-page PDF (pages/s through the PDF parser); the
real spreadsheets of the AM Bench 2025 template (cells/s through the workbook parsers); and the whole
shared archive set end to end (every record folder, the template folder and the FACTS catalog in one
call); a folder of 12 generated PDFs ingested with its files parsed in the ingest's process, then by the worker
processes (ingest/payloads/parse_ahead.py); and `voe db import` of each generated record up to --bulk-up-to into a
server of its own (Bolt 27687), its time over the online ingest's. Each case runs in a fresh subprocess
against an emptied graph so peak RSS is per case. Needs a running Neo4j (NEO4J_URI or `voe db up`).

    python bench/ingest.py [--sizes 10000,100000,300000] [--floor-up-to 100000] [--bulk-up-to 100000]
                           [--repeat N] [--generated-only] [--json]
    python bench/ingest.py --sizes 1000000        # the long profile: peak RSS of a million components

Before the measured cases the smallest generated size runs once through voe and once through the floor,
unmeasured, so that the server's warm-up is not charged to the first pair. The floor (a bare-driver loader of
the same rows, see floor_case) builds the whole record in memory, so it runs only up to --floor-up-to
components. With --repeat N each size up to it runs as N interleaved (voe, floor) pairs
and the line `median voe/floor` gives the median of the N ratios (one pair on this 2-core machine moves by 20 %).

Prints one line per case; figures are comparable run to run on the same machine.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "archives"


def generate(folder: Path, n: int) -> Path:
    """A NERDm record with n components, valid against the NERDm schemas, written a component at a time (a
    million components is a 700 MB file)."""
    base = json.loads((SHARED / "mds2-4103" / "nerdm.json").read_text())
    ark = f"ark:/88434/bench-{n}"
    folders = 100

    def components() -> Iterator[dict[str, object]]:
        for f in range(folders):
            yield {"@id": f"cmps/dir{f:03d}", "@type": ["nrdp:Subcollection"], "filepath": f"dir{f:03d}",
                   "_extensionSchemas": ["https://data.nist.gov/od/dm/nerdm-schema/pub/v0.7#/definitions/Subcollection"]}
        for i in range((n - folders) // 2):
            path = f"dir{i % folders:03d}/sample_{i:06d}.csv"
            digest = hashlib.sha256(path.encode()).hexdigest()
            side_hash = hashlib.sha256(digest.encode()).hexdigest() if i % 50 else "0" * 64
            yield {"@id": f"cmps/{path}", "@type": ["nrdp:DataFile", "nrdp:DownloadableFile", "dcat:Distribution"],
                   "filepath": path, "mediaType": "text/csv", "size": 1000 + i,
                   "downloadURL": f"https://data.nist.gov/od/ds/bench/{path}",
                   "checksum": {"hash": digest, "algorithm": {"tag": "sha256", "@type": "Thing"}},
                   "_extensionSchemas": ["https://data.nist.gov/od/dm/nerdm-schema/pub/v0.7#/definitions/DataFile"]}
            yield {"@id": f"cmps/{path}.sha256",
                   "@type": ["nrdp:ChecksumFile", "nrdp:DownloadableFile", "dcat:Distribution"],
                   "filepath": f"{path}.sha256", "mediaType": "text/plain", "size": 64, "describes": f"cmps/{path}",
                   "valid": True, "algorithm": {"tag": "sha256", "@type": "Thing"},
                   "checksum": {"hash": side_hash, "algorithm": {"tag": "sha256", "@type": "Thing"}},
                   "_extensionSchemas": ["https://data.nist.gov/od/dm/nerdm-schema/pub/v0.7#/definitions/ChecksumFile"]}

    record = {**base, "@id": ark, "ediid": ark, "doi": f"doi:10.18434/bench-{n}", "components": "@COMPONENTS@"}
    head, tail = json.dumps(record, indent=2).split('"@COMPONENTS@"')
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "nerdm.json").open("w") as out:
        out.write(head + "[")
        for k, comp in enumerate(components()):
            out.write(("\n    " if k == 0 else ",\n    ") + json.dumps(comp))
        out.write("\n  ]" + tail)
    return folder


def _peak_rss_kib() -> int:
    # VmHWM is this process's own high-water mark; ru_maxrss would carry over the parent's peak (the
    # parent generated the large records before starting this subprocess).
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def make_pdf(folder: Path, pages: int = 40) -> Path:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "report.pdf"
    c = canvas.Canvas(str(path), pagesize=A4, invariant=1)
    for p in range(pages):
        c.setFont("Helvetica", 10)
        for line in range(50):
            c.drawString(60, 800 - 15 * line, f"page {p + 1} line {line + 1}: specimen S{line:02d} stress {400 + line} MPa")
        c.showPage()
    c.save()
    return folder


def make_pdf_folder(folder: Path, files: int = 12, pages: int = 8) -> Path:
    """A plain folder of `files` distinct PDFs: a record whose parsing the worker processes can share."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    folder.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        c = canvas.Canvas(str(folder / f"report-{f:02d}.pdf"), pagesize=A4, invariant=1)
        for p in range(pages):
            c.setFont("Helvetica", 10)
            for line in range(50):
                c.drawString(60, 800 - 15 * line, f"file {f} page {p + 1} line {line + 1}: specimen S{line:02d} "
                                                  f"stress {400 + line + f} MPa")
            c.showPage()
        c.save()
    return folder


def parse_pool_case(folder: Path) -> dict[str, object]:
    """The folder ingested with its files parsed in the ingest's process (VOE_PARSE_WORKERS=1), then by the
    worker processes (the default): the same graph, the wall times side by side."""
    from voe.graph import Graph
    from voe.ingest import ingest_paths

    seconds: dict[str, float] = {}
    with Graph() as graph:
        graph.verify()
        for workers in ("1", ""):
            graph.clear()
            os.environ["VOE_PARSE_WORKERS"] = workers
            t0 = time.perf_counter()
            report = ingest_paths([folder], graph)
            seconds[workers or "default"] = time.perf_counter() - t0
        os.environ.pop("VOE_PARSE_WORKERS")
    from voe.ingest.payloads.parse_ahead import workers as default_workers

    return {"case": "pdf-folder", "files": sum(report.formats.values()), "pages": report.pages,
            "workers": default_workers(), "serial_seconds": round(seconds["1"], 2),
            "pool_seconds": round(seconds["default"], 2), "speedup": round(seconds["1"] / seconds["default"], 2),
            }


def bulk_case(path: Path) -> dict[str, object]:
    """`voe db import` of the record into an empty local server of its own (instance bench-bulk, Bolt 27687):
    build, CSV, neo4j-admin's import and the server's restart, timed end to end (the online case's ratio is
    printed beside it)."""
    import shutil

    from voe.config import Neo4jSettings
    from voe.graph import Graph
    from voe.ingest.write.bulk import bulk_import
    from voe.neo4j_server import LocalNeo4j

    server = LocalNeo4j("bench-bulk", bolt_port=27687, http_port=27474, heap="1g", pagecache="256m")
    server.up()
    try:
        with Graph(Neo4jSettings(uri=server.bolt_uri, password=server.password())) as graph:
            graph.clear()
        t0 = time.perf_counter()
        report = bulk_import([path], server)
        seconds = time.perf_counter() - t0
    finally:
        server.down()
        shutil.rmtree(server.home, ignore_errors=True)
    return {"case": f"bulk:{path.name}", "elements": report.elements_written, "seconds": round(seconds, 2),
            "nodes": report.graph["nodes_created"], "relationships": report.graph["relationships_created"],
            "peak_rss_mib_python": round(_peak_rss_kib() / 1024, 1)}


def pdf_case(folder: Path) -> dict[str, object]:
    from voe.ingest.payloads.parsers.pdf import parse_pdf

    t0 = time.perf_counter()
    parsed = parse_pdf(folder / "report.pdf")
    seconds = time.perf_counter() - t0
    return {"case": "pdf-40-pages", "pages": parsed.pages, "facts": len(parsed.facts), "seconds": round(seconds, 2),
            "pages_per_s": round(parsed.pages / seconds, 1), "peak_rss_mib_python": round(_peak_rss_kib() / 1024, 1)}


def sheets_case() -> dict[str, object]:
    from voe.ingest.payloads.documents import parse_file

    files = sorted((SHARED / "amb2025-template").rglob("*.xlsx"))
    t0 = time.perf_counter()
    cells = sum((parse_file(f, f.name) or _empty()).cells for f in files)
    seconds = time.perf_counter() - t0
    return {"case": "xlsx-template", "files": len(files), "cells": cells, "seconds": round(seconds, 2),
            "cells_per_s": round(cells / seconds), "peak_rss_mib_python": round(_peak_rss_kib() / 1024, 1)}


def floor_case(path: Path) -> dict[str, object]:
    """The floor a loader cannot beat by much: the rows voe's builder makes for the record (built first, not
    timed), written with the bare driver in batched `UNWIND ... CREATE` statements (labels and types in the
    query text, one statement per label set or type and batch), in committed transactions of
    ingest.write.loader.CHUNK_ELEMENTS (a single one up to SINGLE_TX_ELEMENTS, as voe), on the same emptied graph with
    the same constraints and indexes (cypher/schema.cypher)."""
    sys.path.insert(0, str(REPO))
    from neo4j import GraphDatabase

    from voe.config import Neo4jSettings
    from voe.graph import BATCH_ROWS, Graph
    from voe.ingest.sources.nerdm import schema as nerdm_schema
    from voe.ingest.sources.nerdm.build import build_record
    from voe.ingest.write.loader import CHUNK_ELEMENTS, SINGLE_TX_ELEMENTS

    schemas = nerdm_schema.load(nerdm_schema.default_schema_dir())  # type: ignore[arg-type]
    t_build = time.perf_counter()
    rg = build_record(path, schemas)  # what voe does before its writes; timed apart, not part of the floor
    build_seconds = time.perf_counter() - t_build
    with Graph() as graph:
        graph.clear()
        graph.apply_schema()
    settings = Neo4jSettings.from_env()
    nodes: dict[tuple[str, ...], list[dict[str, object]]] = {}
    for n in rg.nodes:
        nodes.setdefault(tuple(sorted({"Node", *n.labels})), []).append({**n.props, "id": n.id})
    edges: dict[str, list[dict[str, object]]] = {}
    for e in rg.edges:
        edges.setdefault(str(e.rel), []).append({"src": e.src, "dst": e.dst, "props": e.props})
    statements: list[tuple[str, list[dict[str, object]]]] = []
    for labels, rows in sorted(nodes.items()):
        query = f"UNWIND $rows AS row CREATE (n:{':'.join(labels)}) SET n = row"
        statements += [(query, rows[i:i + BATCH_ROWS]) for i in range(0, len(rows), BATCH_ROWS)]
    for rel, rows in sorted(edges.items()):
        query = (f"UNWIND $rows AS row MATCH (a:Node {{id: row.src}}) MATCH (b:Node {{id: row.dst}}) "
                 f"CREATE (a)-[r:{rel}]->(b) SET r = row.props")
        statements += [(query, rows[i:i + BATCH_ROWS]) for i in range(0, len(rows), BATCH_ROWS)]
    elements = len(rg.nodes) + len(rg.edges)
    per_tx = elements if elements <= SINGLE_TX_ELEMENTS else CHUNK_ELEMENTS
    driver = GraphDatabase.driver(settings.uri, auth=settings.auth, notifications_min_severity="OFF")
    t0 = time.perf_counter()
    with driver.session(database=settings.database) as session:
        tx, in_tx = session.begin_transaction(), 0
        for query, rows in statements:
            tx.run(query, rows=rows).consume()
            in_tx += len(rows)
            if in_tx >= per_tx:
                tx.commit()
                tx, in_tx = session.begin_transaction(), 0
        tx.commit()
    seconds = time.perf_counter() - t0
    driver.close()
    return {"case": f"floor:{path.name}", "elements": elements, "seconds": round(seconds, 2),
            "elements_per_s": round(elements / seconds), "us_per_element": round(seconds / elements * 1e6, 2),
            "build_seconds": round(build_seconds, 2), "peak_rss_mib_python": round(_peak_rss_kib() / 1024, 1)}


def _empty():  # type: ignore[no-untyped-def]
    from voe.ingest.payloads.parsers.model import Parsed, Role

    return Parsed(format="none", role=Role.METADATA)


def run_case(path: Path) -> dict[str, object]:
    sys.path.insert(0, str(REPO))
    if path.name.startswith("bulk:"):
        return bulk_case(path.with_name(path.name.removeprefix("bulk:")))
    if path.name.startswith("floor:"):
        return floor_case(path.with_name(path.name.removeprefix("floor:")))
    if path.name == "pdf-bench":
        return pdf_case(path)
    if path.name == "pdf-folder":
        return parse_pool_case(path)
    if path.name == "xlsx-template":
        return sheets_case()
    from voe.graph import Graph
    from voe.ingest import ingest_paths

    paths = [path]
    if path.name == "all-shared":
        paths = [SHARED / d for d in ("mds2-4103", "mds2-3842", "mds2-2525", "mds2-2106", "amb2025-template")]
        paths.append(SHARED / "FACTS.md")
    with Graph() as graph:
        graph.verify()
        graph.clear()
        t0 = time.perf_counter()
        report = ingest_paths(paths, graph)
        seconds = time.perf_counter() - t0
        counts = graph.counts()
    peak_kib = _peak_rss_kib()
    components = sum(report.components.values())
    return {
        "case": path.name, "components": components, "elements": report.elements_written,
        "graph_nodes": counts["nodes"], "graph_relationships": counts["relationships"],
        "seconds": round(seconds, 2), "elements_per_s": round(report.elements_written / seconds),
        "us_per_element": round(seconds / report.elements_written * 1e6, 2),
        "peak_rss_mib_python": round(peak_kib / 1024, 1), "defects": report.defects,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,300000",
                        help="generated record sizes (components); the long profile is --sizes 1000000")
    parser.add_argument("--floor-up-to", type=int, default=100_000,
                        help="run the bare-driver floor for generated sizes up to this (it holds the whole record)")
    parser.add_argument("--bulk-up-to", type=int, default=100_000,
                        help="run `voe db import` (its own server on Bolt 27687) for generated sizes up to this")
    parser.add_argument("--repeat", type=int, default=1,
                        help="(voe, floor) pairs per generated size up to --floor-up-to; the median ratio is printed")
    parser.add_argument("--generated-only", action="store_true",
                        help="only the generated records (no real record, PDFs, workbooks or shared set)")
    parser.add_argument("--json", action="store_true", help="print JSON lines")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(Path(args.case))))
        return
    print(f"# machine: {platform.node()} {platform.machine()} cores={os.cpu_count()} python={platform.python_version()}",
          file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        generated = [generate(Path(tmp) / f"bench-{n}", n) for n in map(int, args.sizes.split(","))]
        cases = [] if args.generated_only else [SHARED / "mds2-4103"]
        for n, g in zip(map(int, args.sizes.split(",")), generated, strict=True):
            # voe, then the floor on the same rows, interleaved (the machine's load drifts)
            cases += [g, g.with_name(f"floor:{g.name}")] * max(1, args.repeat) if n <= args.floor_up_to else [g]
            if n <= args.bulk_up_to:
                cases.append(g.with_name(f"bulk:{g.name}"))
        if not args.generated_only:
            cases += [make_pdf(Path(tmp) / "pdf-bench"), make_pdf_folder(Path(tmp) / "pdf-folder"),
                      Path(tmp) / "xlsx-template", Path(tmp) / "all-shared"]
        results = []
        smallest = min(zip(map(int, args.sizes.split(",")), generated, strict=True))
        if smallest[0] <= args.floor_up_to:
            # unmeasured: the server's JIT warms on both loaders' statements first, so that the first measured
            # pair is not the one that pays for it (a first pair after `voe db up` measured 2.6x at 10k, the
            # next two 1.6x and 1.5x)
            for warm in (smallest[1], smallest[1].with_name(f"floor:{smallest[1].name}")):
                subprocess.run([sys.executable, __file__, "--case", str(warm)], capture_output=True, check=True)
        for case in cases:
            out = subprocess.run([sys.executable, __file__, "--case", str(case)], capture_output=True, text=True,
                                 check=True)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            if str(result["case"]).startswith("floor:"):  # over the voe run just before it
                voe = next(r for r in reversed(results) if r["case"] == str(result["case"]).removeprefix("floor:"))
                result["voe_over_floor"] = round(float(voe["seconds"]) / float(result["seconds"]), 2)  # type: ignore[arg-type]
            results.append(result)
            if args.json:
                print(json.dumps(result))
            elif str(result["case"]).startswith("floor:"):
                print(f"{result['case']:>14}: {result['elements']:>8} elements in {result['seconds']:>7.2f} s "
                      f"= {result['elements_per_s']:>7} elements/s (bare driver, UNWIND ... CREATE); "
                      f"voe/floor {result['voe_over_floor']}x (aim <= 1.15x); voe's build of the rows alone "
                      f"(serial, schema check included) {result['build_seconds']} s")
            elif "pages_per_s" in result:
                print(f"{result['case']:>14}: {result['pages']} pages, {result['facts']} located facts (lines, words) in "
                      f"{result['seconds']} s = {result['pages_per_s']} pages/s, peak RSS {result['peak_rss_mib_python']} MiB")
            elif str(result["case"]).startswith("bulk:"):
                voe = next(r for r in results if r["case"] == str(result["case"]).removeprefix("bulk:"))
                result["bulk_over_online"] = round(float(result["seconds"]) / float(voe["seconds"]), 2)  # type: ignore[arg-type]
                print(f"{result['case']:>14}: {result['nodes']} nodes, {result['relationships']} relationships in "
                      f"{result['seconds']:>7.2f} s end to end (build, CSV, neo4j-admin import, server restart); "
                      f"bulk/online {result['bulk_over_online']}x")
            elif "speedup" in result:
                print(f"{result['case']:>14}: {result['files']} PDFs, {result['pages']} pages: parsed in the ingest's "
                      f"process {result['serial_seconds']} s, by {result['workers']} worker processes "
                      f"{result['pool_seconds']} s = {result['speedup']}x")
            elif "cells_per_s" in result:
                print(f"{result['case']:>14}: {result['files']} workbooks, {result['cells']} cells in {result['seconds']} s "
                      f"= {result['cells_per_s']} cells/s, peak RSS {result['peak_rss_mib_python']} MiB")
            else:
                print(f"{result['case']:>14}: {result['components']:>7} components, {result['elements']:>8} elements "
                      f"in {result['seconds']:>7.2f} s = {result['elements_per_s']:>7} elements/s "
                      f"({result['us_per_element']} us/element), peak RSS (voe process) {result['peak_rss_mib_python']} MiB")
        for name in dict.fromkeys(str(r["case"]) for r in results if str(r["case"]).startswith("floor:")):
            ratios = [float(r["voe_over_floor"]) for r in results if r["case"] == name]  # type: ignore[arg-type]
            line = {"case": f"median:{name.removeprefix('floor:')}", "pairs": len(ratios),
                    "voe_over_floor": round(statistics.median(ratios), 2), "ratios": ratios}
            results.append(line)
            print(json.dumps(line) if args.json else
                  f"{line['case']:>14}: median voe/floor over {len(ratios)} pairs {line['voe_over_floor']}x "
                  f"({', '.join(f'{x}x' for x in ratios)}; aim <= 1.15x)")
        for label, prefix in (("floor per-element cost", "floor:"), ("per-element cost", "bench-")):
            # the median per size, each size compared with the one before it
            sizes: dict[str, list[float]] = {}
            for r in results:
                if str(r["case"]).startswith(prefix):
                    sizes.setdefault(str(r["case"]), []).append(float(r["us_per_element"]))  # type: ignore[arg-type]
            pairs = list(sizes.items())
            for (small, a), (large, b) in itertools.pairwise(pairs):  # each size against the one before it
                line = {"case": f"{label}:{large}:{small}", "ratio": round(statistics.median(b) / statistics.median(a), 2)}
                results.append(line)
                print(json.dumps(line) if args.json else f"{label}, {large} vs {small}: {line['ratio']:.2f}x")

if __name__ == "__main__":
    main()
