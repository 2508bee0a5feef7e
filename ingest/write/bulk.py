"""`voe db import`: a first load of many records into an empty local database with neo4j-admin's offline importer.

The records are read and built exactly as `voe ingest` builds them (the same pipeline, the schema check's rows
included); their rows are merged as the online writer's MERGE of every row would merge them (a node's labels
added up and the last row's properties, one edge per endpoints and type with the last row's properties), each
record checked whole first (labels and edge endpoints against the ontology, every edge's endpoints present with
their declared labels), so a record lands whole or not at all. The rows go to CSV files, the local server stops,
`neo4j-admin database import full` builds the database from them, and the server starts again with voe's schema.
The graph is the one `voe ingest` of the same paths gives (tests/ingest/write/test_bulk.py compares them).

What it does not do: load into a database that holds anything (the importer replaces a whole database), or into
a server `voe db` does not run (a remote server or a cluster: use `voe ingest`). Each record is built whole in
memory (a record file that `voe ingest` would stream is read whole here), and one record id comes from one path.
"""

from __future__ import annotations

import csv
import math
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from voe.config import Neo4jSettings
from voe.errors import InputError, OntologyViolation, VoeError
from voe.graph import EdgeRow, Graph, NodeRow, WriteCounts
from voe.ingest.builder import RecordGraph
from voe.ingest.pipeline import IngestReport, ingest_paths
from voe.ontology import Label, Ontology

if TYPE_CHECKING:
    from voe.neo4j_server import LocalNeo4j

ARRAY_DELIMITER = "\x1f"  # a control character no real value holds (checked: a value holding it is refused)
ADMIN_TOOL = "org.neo4j.cli.AdminTool"
RECORD_LEASE = ("writer", "writing_since", "replaces")  # what mark_complete removes from a Record


class BulkError(VoeError):
    """The bulk path cannot load these paths (the database is not empty, a value the CSV cannot carry, the
    importer failed); nothing was loaded."""


class BulkRows:
    """Every record's rows, merged as MERGE of every row would merge them in the graph."""

    def __init__(self, ontology: Ontology) -> None:
        self.ontology = ontology
        self.nodes: dict[str, tuple[list[str], dict[str, Any]]] = {}
        self.edges: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.records: dict[str, str] = {}  # record id -> the path it came from

    def add(self, rg: RecordGraph, late: tuple[list[NodeRow], list[EdgeRow]], source: str) -> WriteCounts:
        """One record's rows, checked whole before any is kept; what a first write would count as created."""
        if rg.record_id in self.records:
            raise InputError(f"{rg.record_id} comes from {self.records[rg.record_id]} too; a bulk load takes each "
                             "record once (load one, then `voe ingest` the other)", path=source)
        nodes, edges = [*rg.nodes, *late[0]], [*rg.edges, *late[1]]
        staged: dict[str, tuple[list[str], dict[str, Any]]] = {}
        for row in nodes:
            for label in row.labels:
                self.ontology.check_label(label)
            if Label.NODE in row.labels:
                raise OntologyViolation("the Node label is added by the writer, not by callers")
            held = staged.get(row.id) or self.nodes.get(row.id)
            labels = list(held[0]) if held else []
            labels += [label for label in row.labels if label not in labels]
            props = {k: v for k, v in row.props.items() if v is not None}
            props["id"] = row.id
            if Label.RECORD in row.labels and row.id == rg.record_id:
                props["ingest_state"] = "complete"
                for key in RECORD_LEASE:
                    props.pop(key, None)
            staged[row.id] = (labels, props)
        staged_edges: dict[tuple[str, str, str], dict[str, Any]] = {}
        for e in edges:
            self.ontology.check_edge(e.rel, e.src_label, e.dst_label)
            for end, label in ((e.src, e.src_label), (e.dst, e.dst_label)):
                held = staged.get(end) or self.nodes.get(end)
                if held is None or label not in held[0]:
                    raise OntologyViolation(f"{rg.record_id}: a {e.rel} edge names {end!r}, which is not in the "
                                            f"graph with the label {label}")
            staged_edges[(e.src, e.rel, e.dst)] = {k: v for k, v in e.props.items() if v is not None}
        counts = WriteCounts(nodes_created=sum(1 for i in staged if i not in self.nodes),
                             relationships_created=sum(1 for k in staged_edges if k not in self.edges))
        self.nodes.update(staged)
        self.edges.update(staged_edges)
        self.records[rg.record_id] = source
        return counts


def _type(value: Any) -> str | None:
    """The importer's type of a property value; None for an empty list (set after the import)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        if not value:
            return None
        kinds = {_type(v) for v in value}
        if len(kinds) == 1 and next(iter(kinds)) in ("boolean", "long", "double", "string"):
            return f"{next(iter(kinds))}[]"
    raise BulkError(f"a property value of type {type(value).__name__} ({str(value)[:80]!r}) cannot be imported "
                    "from CSV; load these paths with `voe ingest`")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if isinstance(value, list):
        parts = [_text(v) for v in value]
        if any(ARRAY_DELIMITER in p for p in parts):
            raise BulkError("a list value holds the character U+001F, which the import uses between list items; "
                            "load these paths with `voe ingest`")
        return ARRAY_DELIMITER.join(parts)
    return str(value)


class _Files:
    """CSV files by header: one per distinct (columns and their types), as the importer types a column per file."""

    def __init__(self, folder: Path, prefix: str, fixed: list[str]) -> None:
        self.folder, self.prefix, self.fixed = folder, prefix, fixed
        self.writers: dict[tuple[tuple[str, str], ...], Any] = {}
        self.handles: list[Any] = []
        self.paths: list[Path] = []
        self.longest = 0

    def write(self, fixed: list[str], props: dict[str, Any], empty: list[tuple[Any, str]], key: Any) -> None:
        typed = []
        for name, value in sorted(props.items()):
            kind = _type(value)
            if kind is None:
                empty.append((key, name))
            else:
                typed.append((name, kind))
        signature = tuple(typed)
        writer = self.writers.get(signature)
        if writer is None:
            path = self.folder / f"{self.prefix}-{len(self.paths):04d}.csv"
            handle = path.open("w", encoding="utf-8", newline="")
            writer = csv.writer(handle, quoting=csv.QUOTE_ALL, lineterminator="\n")
            writer.writerow([*self.fixed, *(f"{name}:{kind}" for name, kind in typed)])
            self.writers[signature] = writer
            self.paths.append(path)
            self.handles.append(handle)
        row = [*fixed, *(_text(props[name]) for name, _ in typed)]
        self.longest = max(self.longest, *(len(v) for v in row))
        writer.writerow(row)

    def close(self) -> None:
        for handle in self.handles:
            handle.close()


def write_csv(rows: BulkRows, folder: Path) -> tuple[list[Path], list[Path], list[dict[str, Any]], int]:
    """Node and relationship CSV files; the nodes' empty-list properties (the importer cannot write an empty
    array: they are set afterwards); the longest field in characters."""
    nodes = _Files(folder, "nodes", ["id:ID(Node)", ":LABEL"])
    rels = _Files(folder, "rels", [":START_ID(Node)", ":END_ID(Node)", ":TYPE"])
    empty_nodes: list[tuple[Any, str]] = []
    empty_rels: list[tuple[Any, str]] = []
    try:
        for node_id, (labels, props) in rows.nodes.items():
            rest = {k: v for k, v in props.items() if k != "id"}
            nodes.write([node_id, _text([Label.NODE.value, *labels])], rest, empty_nodes, node_id)
        for (src, rel, dst), props in rows.edges.items():
            rels.write([src, dst, rel], props, empty_rels, (src, rel, dst))
    finally:
        nodes.close()
        rels.close()
    if empty_rels:
        raise BulkError("a relationship property is an empty list, which the import cannot write; load these paths "
                        "with `voe ingest`")
    empty: dict[str, dict[str, Any]] = {}
    for node_id, name in empty_nodes:
        empty.setdefault(node_id, {})[name] = []
    fixes = [{"id": node_id, "props": props} for node_id, props in empty.items()]
    return nodes.paths, rels.paths, fixes, max(nodes.longest, rels.longest)


def run_import(server: LocalNeo4j, database: str, node_files: Sequence[Path], rel_files: Sequence[Path], longest: int,
               report_file: Path) -> None:
    """neo4j-admin's full import into `database` of the stopped local server."""
    from voe.java import find_java
    from voe.neo4j_server import JVM_OPENS

    java = find_java()
    lib = server.resolve()
    conf = server.home / "conf"
    buffer_mib = max(4, (longest * 4) // (1 << 20) + 2)  # UTF-8: up to 4 bytes a character
    cmd = [java.path, f"-Xmx{server.heap}", *JVM_OPENS, "-cp", f"{lib}/*", ADMIN_TOOL,
           "database", "import", "full", database, "--overwrite-destination=true", f"--array-delimiter={ARRAY_DELIMITER}",
           "--multiline-fields=true", f"--read-buffer-size={buffer_mib}m", f"--report-file={report_file}",
           *(f"--nodes={p}" for p in node_files), *(f"--relationships={p}" for p in rel_files)]
    env = {"NEO4J_HOME": str(server.home), "NEO4J_CONF": str(conf), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        said = (done.stdout + done.stderr).strip().splitlines()
        tail = "\n".join(line for line in said if not line.startswith("\tat "))[-3000:]  # not the Java stack
        raise BulkError(f"neo4j-admin database import failed (exit {done.returncode}):\n{tail}")


def bulk_import(paths: Sequence[Path], server: LocalNeo4j, *, schema_dir: Path | None = None, validate_schema: bool = True,
                progress: Callable[[str], None] | None = None,
                bar: Callable[[int, int], None] | None = None) -> IngestReport:
    """Build every path as `voe ingest` would, then load them all into the local server's empty database with the
    offline importer (the server is stopped meanwhile and started again). Paths that fail are reported and left
    out, as `voe ingest` does; BulkError when the database is not empty or the import cannot run."""
    say = progress or (lambda _m: None)
    started = time.perf_counter()
    server.up()
    local = Neo4jSettings(uri=server.bolt_uri, password=server.password())  # its one database "neo4j"
    with Graph(local) as graph:
        graph.verify()
        held = graph.counts()
        if held["nodes"] or held["relationships"]:
            raise BulkError(f"the database at {graph.settings.uri} holds {held['nodes']} nodes; a bulk import loads "
                            "an empty database only (`voe db clear`, or `voe ingest` to add to it)")
        database = graph.settings.database
        rows = BulkRows(graph.ontology)
        report = ingest_paths(paths, graph, schema_dir=schema_dir, validate_schema=validate_schema,
                              progress=progress, bar=bar, sink=rows.add)
    with tempfile.TemporaryDirectory(prefix="voe-bulk-") as tmp:
        node_files, rel_files, fixes, longest = write_csv(rows, Path(tmp))
        say(f"importing {len(rows.nodes)} nodes and {len(rows.edges)} relationships with neo4j-admin")
        server.down()
        try:
            run_import(server, database, node_files, rel_files, longest, Path(tmp) / "import.report")
        finally:
            server.up()
    with Graph(local) as graph:
        graph.apply_schema()
        if fixes:
            graph.execute("ingest/bulk_empty_lists", rows=fixes)
        graph.execute("ingest/prune_orphan_files")
        counts = graph.counts()
    report.graph = {"nodes_created": counts["nodes"], "relationships_created": counts["relationships"],
                    "nodes_deleted": 0, "relationships_deleted": 0}
    report.seconds = round(time.perf_counter() - started, 3)
    return report
