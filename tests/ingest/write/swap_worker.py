"""A worker process of the swap stress test (tests/ingest/write/test_swap_stress.py): ingests its list of record
folders one by one with small chunk sizes (so every record is written in several transactions, and every
replacement is staged and swapped) and logs one JSON line per ingest: which folder, when, the outcome.

    python -m tests.ingest.write.swap_worker LOG FOLDER...

`VOE_FAULT_AT` (ingest/write/loader.py) kills it at a step of its first chunked replacement."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import voe.ingest.sources.nerdm.stream as nerdm_stream
import voe.ingest.write.loader as loader
from voe.graph import Graph
from voe.ingest import ingest_paths

SMALL = {"SINGLE_TX_ELEMENTS": 400, "CHUNK_ELEMENTS": 600}


def main(log: Path, folders: list[Path]) -> None:
    for name, value in SMALL.items():
        setattr(loader, name, value)
    nerdm_stream.CHUNK_COMPONENTS = 100
    graph = Graph()
    with log.open("a", encoding="utf-8") as out:
        for folder in folders:
            start = time.time()
            report = ingest_paths([folder], graph)
            out.write(json.dumps({"folder": str(folder), "start": start, "end": time.time(),
                                  "errors": [e.message for e in report.errors],
                                  "records": report.records, "replaced": report.records_replaced,
                                  "unchanged": report.records_unchanged}) + "\n")
            out.flush()
    graph.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]])
