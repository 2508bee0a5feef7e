"""Concurrent ingests against one graph, for a few hundred rounds (issue 30, item 8): worker processes ingest
records of their own for the first time and replace records they share, while writers are killed mid-swap
and a reader polls the Browser query of docs/guide/review.md. Every record an ingest reported written is there
afterwards, whole; the reader never finds a shared record without exactly one complete, whole version. Every ingest and every
reader finding is logged (the log is printed when the test fails)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.ingest.helpers import rows
from voe.graph import Graph
from voe.ingest import ingest_paths

WORKERS = 4
ROUNDS = 40  # per worker, each round a first-time record and a replacement of a shared one: 320 ingests
SHARED = 3
COMPONENTS = 120  # about 500 elements: over the workers' one-transaction limit, so written in chunks
KILLS = ("commit", "deleted_old", "renamed", "edges", "commit", "deleted_old", "renamed", "nodes")


def _record(root: Path, ark: str, title: str, held: int) -> Path:
    """A NERDm record of COMPONENTS files, the first `held` present as bytes (the same bytes in every record:
    their File nodes are shared, so each replacement's pruning of orphan files meets the others')."""
    root.mkdir(parents=True, exist_ok=True)
    comps: list[dict[str, Any]] = [{"@id": "cmps/d", "@type": ["nrdp:Subcollection"], "filepath": "d"}]
    for i in range(COMPONENTS):
        comps.append({"@id": f"cmps/d/f{i}.csv", "@type": ["nrdp:DataFile"], "filepath": f"d/f{i}.csv",
                      "mediaType": "text/csv", "size": 12})
        if i < held:
            (root / "d").mkdir(exist_ok=True)
            (root / "d" / f"f{i}.csv").write_text(f"a,b\n{i},{i % 7}\n")
    doc = {"@id": ark, "_schema": "https://data.nist.gov/od/dm/nerdm-schema/v0.7#",
           "@type": ["nrdp:PublicDataResource"], "title": title, "version": "1.0.0", "components": comps}
    (root / "nerdm.json").write_text(json.dumps(doc))
    return root


def _worker(log: Path, folders: list[Path], uri: str, fault: str | None = None) -> subprocess.Popen[bytes]:
    env = {**os.environ, "NEO4J_URI": uri}
    env.pop("VOE_FAULT_AT", None)
    if fault:
        env["VOE_FAULT_AT"] = fault
    return subprocess.Popen([sys.executable, "-m", "tests.ingest.write.swap_worker", str(log), *map(str, folders)],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _view(graph: Graph) -> dict[str, list[tuple[str, str, int]]]:
    """The Browser's view of the records (docs/guide/review.md): per ark, the complete Records and how many
    components each has."""
    seen: dict[str, list[tuple[str, str, int]]] = {}
    for r in rows(graph, "MATCH (r:Record {ingest_state: 'complete'}) OPTIONAL MATCH (r)-[:HAS_COMPONENT]->(c) "
                         "RETURN r.ark AS ark, r.id AS id, r.title AS title, count(c) AS n"):
        seen.setdefault(str(r["ark"]), []).append((str(r["id"]), str(r["title"]), int(r["n"])))
    return seen


@pytest.mark.timeout(1200)
def test_concurrent_ingests_lose_no_record_and_readers_never_see_a_hole(graph: Graph, tmp_path: Path) -> None:
    shared = [[_record(tmp_path / f"s{k}v{v}", f"ark:/88434/mds2-66{k:02d}", f"shared {k} version {v}", held=3 + v)
               for v in (1, 2)] for k in range(SHARED)]
    for versions in shared:
        assert ingest_paths([versions[0]], graph).errors == []
    whole = {ark: entries[0][2] for ark, entries in _view(graph).items()}
    own: dict[str, Path] = {}
    plans = []
    for w in range(WORKERS):
        folders = []
        for r in range(ROUNDS):
            ark = f"ark:/88434/mds2-5{w}{r:03d}"
            own[ark] = _record(tmp_path / f"w{w}r{r}", ark, f"worker {w} round {r}", held=r % 4)
            folders += [own[ark], shared[(w + r) % SHARED][(w + r) % 2]]
        plans.append(folders)

    findings: list[str] = []
    glimpses: list[str] = []  # seen by one read only
    stop = threading.Event()

    landed: set[str] = set()

    def read() -> None:
        """That query over and over. One Cypher read that overlaps a commit may see part of it (Neo4j reads
        are read-committed: the old Record already superseded and the new not yet complete, or both); a hole is
        what two reads in a row find."""
        reads, before = 0, set()
        while not stop.is_set():
            view = _view(graph)
            reads += 1
            now = set()
            for ark, count in whole.items():
                if len(view.get(ark, [])) != 1 or view[ark][0][2] != count:
                    now.add(f"{ark}: {view.get(ark)}")
            for ark, entries in view.items():
                if ark in own and (len(entries) != 1 or entries[0][2] != COMPONENTS + 1):
                    now.add(f"{ark} (first-time): {entries}")
                if ark in own:
                    landed.add(ark)
            now |= {f"{ark} (first-time) is gone" for ark in landed - set(view)}
            findings.extend(f"{time.time():.3f} {f}" for f in sorted(now & before))
            glimpses.extend(f"{time.time():.3f} {f}" for f in sorted(now - before))
            before = now
        findings.append(f"reads: {reads}")

    reader = threading.Thread(target=read)
    reader.start()
    logs = [tmp_path / f"worker{w}.jsonl" for w in range(WORKERS)]
    procs = [_worker(logs[w], plans[w], graph.settings.uri) for w in range(WORKERS)]
    killed = []
    kill_log = tmp_path / "killed.jsonl"
    for k, step in enumerate(KILLS):  # each a replacement of a shared record (a version of its own) killed at `step`
        target = _record(tmp_path / f"kill{k}", f"ark:/88434/mds2-66{k % SHARED:02d}", f"shared {k % SHARED} kill {k}",
                         held=2)
        child = _worker(kill_log, [target], graph.settings.uri, fault=step)
        child.wait(timeout=300)
        killed.append((step, child.returncode))
    errs = [p.communicate(timeout=900)[1].decode() for p in procs]
    stop.set()
    reader.join()
    for p, err in zip(procs, errs, strict=True):
        assert p.returncode == 0, err
    # a later ingest (of anything) finishes the swaps the killed writers left
    assert ingest_paths([shared[0][0]], graph).errors == []

    lines = [json.loads(line) for log in logs for line in log.read_text().splitlines()]
    story = "\n".join(json.dumps(line) for line in lines[-40:]) + "\n" + "\n".join(findings[-40:])
    assert len(lines) == WORKERS * ROUNDS * 2, story
    view = _view(graph)
    for ark, folder in own.items():
        done = [line for line in lines if line["folder"] == str(folder)]
        assert done and done[0]["errors"] == [], story
        assert view.get(ark) == [(f"record:{ark}@1.0.0", f"worker {ark[-4]} round {int(ark[-3:])}", COMPONENTS + 1)], \
            f"{ark} ingested (exit 0) is not whole afterwards: {view.get(ark)}\n{story}"
    for ark, count in whole.items():
        assert len(view[ark]) == 1 and view[ark][0][2] == count, story
    busy = [e for line in lines for e in line["errors"] if "is being written by another ingest" not in e]
    assert busy == [], story
    assert [f for f in findings if not f.startswith("reads:")] == [], "\n".join(findings + glimpses)
    print(f"{findings[-1]}, {len(glimpses)} single-read glimpses of a commit, kills: {killed}")
    assert any(rc == -9 for _, rc in killed), killed
    leftovers = rows(graph, "MATCH (r:Record) WHERE r.ingest_state <> 'complete' OR r.id STARTS WITH 'staged:' "
                            "RETURN r.id AS id, r.ingest_state AS state")
    assert leftovers == [], leftovers

