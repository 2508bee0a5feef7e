"""Fault injection: Neo4j stopped in the middle of an ingest (issue 8). A dedicated local server is started
and stopped here, so the suite's own database is not touched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import IN_CI
from tests.ports import free_ports
from voe.config import Neo4jSettings
from voe.errors import ServerError
from voe.graph import Graph
from voe.neo4j_server import LocalNeo4j


def _big_record(root: Path, n: int) -> Path:
    """A NERDm record of n data files (no checksums: each also gets a defect), large enough that the ingest
    is written in several committed chunks and takes seconds."""
    comps = [{"@id": f"cmps/d{i // 500}/f{i}.csv", "@type": ["nrdp:DataFile"], "filepath": f"d{i // 500}/f{i}.csv",
              "mediaType": "text/csv", "size": i} for i in range(n)]
    comps += [{"@id": f"cmps/d{k}", "@type": ["nrdp:Subcollection"], "filepath": f"d{k}"} for k in range(n // 500 + 1)]
    doc = {"@id": "ark:/88434/mds2-8888", "_schema": "https://data.nist.gov/od/dm/nerdm-schema/v0.7#",
           "@type": ["nrdp:PublicDataResource"], "title": "fault test record", "version": "1.0.0", "components": comps}
    folder = root / "mds2-8888"
    folder.mkdir()
    (folder / "nerdm.json").write_text(json.dumps(doc))
    return folder


@pytest.mark.neo4j  # starts and stops a server of its own
def test_neo4j_stopped_mid_ingest_is_one_line_exit_1_and_no_partial_record(tmp_path: Path) -> None:
    bolt, http = free_ports()
    server = LocalNeo4j("fault", bolt, http, heap="1g", pagecache="128m")
    try:
        server.up()
    except ServerError as exc:
        if IN_CI:
            pytest.fail(f"could not start the fault-test Neo4j: {exc}", pytrace=False)
        pytest.skip(f"could not start the fault-test Neo4j: {exc}")
    uri = f"bolt://127.0.0.1:{bolt}"
    try:
        with Graph(Neo4jSettings(uri=uri, password=server.password())) as g:
            g.clear()
        record = _big_record(tmp_path, 60_000)
        env = {**os.environ, "NEO4J_URI": uri}
        proc = subprocess.Popen([sys.executable, "-m", "voe.cli", "ingest", str(record), "--no-schema"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        # stop the server once the record is being written (its Record node is marked `writing`)
        deadline = time.monotonic() + 120
        with Graph(Neo4jSettings(uri=uri, password=server.password())) as g:
            while time.monotonic() < deadline and proc.poll() is None:
                rows = g.query("ingest/record_state", record_id="record:ark:/88434/mds2-8888@1.0.0")
                if rows and rows[0]["state"] == "writing":
                    break
                time.sleep(0.2)
        assert proc.poll() is None, "the ingest finished before the fault could be injected: " + proc.stderr.read()
        server.down()
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 1, err
        assert "Traceback" not in err and "Neo4j" in err
        assert len([ln for ln in err.splitlines() if ln.startswith("voe: error")]) == 1, err
        # the driver's retries are one warning line, not one multi-line reason per retry
        assert len([ln for ln in err.splitlines() if ln.startswith("voe: warning: Neo4j")]) <= 1, err
        assert not [ln for ln in err.splitlines() if ln.startswith(("Transaction failed", "Failed to "))], err
        # back up: the compiler's record query never sees the half-written record
        server.up()
        with Graph(Neo4jSettings(uri=uri, password=server.password())) as g:
            listed = {r["record_id"] for r in g.query("compiler/records")}
            state = g.query("ingest/record_state", record_id="record:ark:/88434/mds2-8888@1.0.0")
        assert "record:ark:/88434/mds2-8888@1.0.0" not in listed
        assert not state or state[0]["state"] != "complete"
    finally:
        server.down()


def test_the_next_ingest_removes_what_a_dead_writer_left(graph: Graph, archives: Path) -> None:
    """A record still `writing` whose writer process is gone (as after kill -9) is removed by the next ingest
    of anything; one whose writer is alive (this test process's parent) is left alone."""
    from voe.graph import NodeRow
    from voe.ingest import ingest_paths
    from voe.ontology import Label

    def leftover(rid: str, writer: str) -> None:
        with graph.writer() as w:
            w.run("ingest/take_lease", record_id=rid, lease=f"lease of {writer}")
            w.run("ingest/mark_writing", record_id=rid, writer=writer, lease=f"lease of {writer}", replaces=None)
            w.nodes([NodeRow(f"{rid}/c", (Label.COMPONENT,), {"record_id": rid, "filepath": "x"})])

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    import socket

    leftover("record:dead@1", f"{socket.gethostname()}:{dead.stdout.strip()}")
    leftover("record:alive@1", f"{socket.gethostname()}:{os.getppid()}")
    report = ingest_paths([archives / "mds2-2106"], graph)
    assert report.errors == []
    with graph._driver.session() as s:  # noqa: SLF001 - the test inspects the graph directly
        left = {r["rid"] for r in s.run("MATCH (n:Node) WHERE n.record_id STARTS WITH 'record:' AND "
                                        "n.record_id ENDS WITH '@1' RETURN DISTINCT n.record_id AS rid")}
    assert left == {"record:alive@1"}
