"""`ingest_paths`: the library entry point behind `voe ingest`."""

from __future__ import annotations

import logging
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from pydantic import BaseModel, Field

from voe import collector
from voe.errors import GraphBusy, GraphUnavailable, InputError
from voe.graph import EdgeRow, Graph, NodeRow, WriteCounts, storable, storable_key
from voe.ingest.builder import BuilderCore, RecordGraph
from voe.ingest.payloads.files import SPECIAL_NAMES, entry_kind, hash_file, iter_entries
from voe.ingest.payloads.parse_ahead import Workers
from voe.ingest.rules import ids
from voe.ingest.sources.bagit import bag_builders, bag_paths, is_bag
from voe.ingest.sources.catalog import catalog_builders, looks_like_catalog
from voe.ingest.sources.folder import FolderBuilder, distinct_folder_ark, folder_ark
from voe.ingest.sources.nerdm import schema as nerdm_schema
from voe.ingest.sources.nerdm.build import NERDM_FILENAME, find_record_file, open_record
from voe.ingest.sources.nerdm.collection import collection_builders, looks_like_collection
from voe.ingest.sources.nerdm.stream import NerdmStream, NotStreamable, open_streamed
from voe.ingest.sources.rocrate import MESSAGE, crate_builders, crate_files, is_bagged_crate, is_crate_file, is_crate_folder
from voe.ingest.sources.unknown import looks_like, may_be_json
from voe.ingest.write.loader import clean_stale, write_record, write_streamed
from voe.settings import settings

REPORT_VERSION = 1
# where a bulk load's rows go instead of the graph: (record rows, the schema check's rows, path) -> counts
Sink = Callable[[RecordGraph, tuple[list[NodeRow], list[EdgeRow]], str], WriteCounts]
log = logging.getLogger(__name__)


def _clean(text: str) -> str:
    """Text a report (and its JSON) can carry: lone surrogates (from file names that are not UTF-8) escaped."""
    return str(storable(text)[0])


class IngestProblem(BaseModel):
    path: str
    pointer: str | None = None
    message: str

    @classmethod
    def of(cls, path: str, message: str, pointer: str | None = None) -> IngestProblem:
        return cls(path=_clean(path), pointer=None if pointer is None else _clean(pointer), message=_clean(message))


class RecordSummary(BaseModel):
    record_id: str
    ark: str
    version: str | None
    title: str | None
    source: str
    components: dict[str, int]
    files: int
    held: int
    defects: dict[str, int]
    facts: int = 0
    evidence: dict[str, int] = Field(default_factory=dict)
    seconds: float
    stamp: str = ""
    # what the graph held under this record id before: nothing (both false), the same stamp (`unchanged`),
    # or another one (`replaced`, the record's nodes and edges of `previous_stamp` pruned in the same write)
    replaced: bool = False
    unchanged: bool = False
    previous_stamp: str | None = None
    source_root: str | None = None  # plain folders: the resolved absolute path
    # plain folders: another folder of the same name holds this record id, so this one got its own id
    shares_name_with: str | None = None


class IngestReport(BaseModel):
    report_version: int = REPORT_VERSION
    records: int = 0
    components: dict[str, int] = Field(default_factory=dict)
    files: int = 0
    defects: dict[str, int] = Field(default_factory=dict)
    facts: int = 0
    evidence: dict[str, int] = Field(default_factory=dict)
    records_replaced: int = 0
    records_unchanged: int = 0
    formats: dict[str, int] = Field(default_factory=dict)
    pages: int = 0
    cells: int = 0
    elements_written: int = 0
    graph: dict[str, int] = Field(default_factory=dict)
    schema_dir: str | None = None
    seconds: float = 0.0
    per_record: list[RecordSummary] = Field(default_factory=list)
    errors: list[IngestProblem] = Field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 2 if self.errors else 0


def ingest_paths(
    paths: Sequence[Path],
    graph: Graph,
    *,
    schema_dir: Path | None = None,
    validate_schema: bool = True,
    progress: Callable[[str], None] | None = None,
    bar: Callable[[int, int], None] | None = None,
    sink: Sink | None = None,
) -> IngestReport:
    """Ingest each path (a record folder or a nerdm.json). A path that fails is reported and skipped;
    the others are still ingested, each in its own transaction. Input voe cannot read is an InputError's
    message; any other failure while reading, building or writing one path is reported for that path as
    what failed (the traceback goes to the debug log); only GraphUnavailable (Neo4j down) stops the call.
    `progress` gets messages, `bar` (paths done, paths) is called after each path. With `sink`, each record's
    rows (and its schema check's) go to `sink(rows, late rows, path)` instead of the graph, every record read
    whole (ingest/write/bulk.py)."""
    say = progress or (lambda _m: None)
    started = time.perf_counter()
    report = IngestReport()
    schemas = None
    if validate_schema:
        sdir = schema_dir or nerdm_schema.default_schema_dir()
        if sdir is not None:
            try:
                schemas = nerdm_schema.load(sdir)
                report.schema_dir = str(sdir)
            except (FileNotFoundError, ValueError) as exc:
                report.errors.append(IngestProblem.of(str(sdir), f"NERDm schemas unusable: {exc}"))
        else:
            say("warning: no NERDm schemas found (set VOE_SCHEMA_DIR); schema validation skipped")
    graph.apply_schema()
    for rid in clean_stale(graph):
        say(f"cleaned {rid}: a killed or failed ingest left it unfinished")
    totals = Totals()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="voe-schema") as pool, Workers() as parsers:
        for done, path in enumerate(paths):
            if bar is not None:
                bar(done, len(paths))
            stage = ["reading it"]
            try:
                _ingest_one(Path(path), graph, schemas, (pool, parsers), report, totals, say, stage, sink)
            except GraphUnavailable:
                raise
            except InputError as exc:
                report.errors.append(IngestProblem.of(exc.path or str(path), exc.message, exc.pointer))
            except GraphBusy as exc:
                report.errors.append(IngestProblem.of(str(path), str(exc)))
            except Exception as exc:  # noqa: BLE001 - one path's failure must not abort the others
                log.debug("ingest of %s failed while %s", path, stage[0], exc_info=True)
                detail = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
                report.errors.append(IngestProblem.of(
                    str(path), f"could not be ingested: {type(exc).__name__} while {stage[0]}"
                               + (f": {detail}" if detail else "")))
    if bar is not None:
        bar(len(paths), len(paths))
    report.components = dict(sorted(totals.components.items()))
    report.defects = dict(sorted(totals.defects.items()))
    report.evidence = dict(sorted(totals.evidence.items()))
    report.formats = dict(sorted(totals.formats.items()))
    report.graph = totals.graph
    report.seconds = round(time.perf_counter() - started, 3)
    return report


class Totals:
    def __init__(self) -> None:
        self.components: Counter[str] = Counter()
        self.defects: Counter[str] = Counter()
        self.evidence: Counter[str] = Counter()
        self.formats: Counter[str] = Counter()
        self.graph = {"nodes_created": 0, "relationships_created": 0, "nodes_deleted": 0, "relationships_deleted": 0}


def _ingest_one(path: Path, graph: Graph, schemas: nerdm_schema.NerdmSchemas | None,
                pools: tuple[ThreadPoolExecutor, Workers], report: IngestReport, totals: Totals,
                say: Callable[[str], None], stage: list[str], sink: Sink | None = None) -> None:
    """`stage[0]` says what is being done, for the report of a failure nobody foresaw; `pools`: the schema
    check's thread and the parser processes."""
    pool, parsers = pools
    problems: list[IngestProblem] = []
    built = _builders(path, schemas, graph, whole=sink is not None, problems=problems)
    report.errors += problems
    for kind, builder in built:
        builder.parse_workers = parsers
        t0 = time.perf_counter()
        if isinstance(builder, NerdmStream):
            stage[0] = f"building and writing {builder.rec_id} a chunk of components at a time"
            builder.on_document = _files_progress(path, say)
            counts = write_streamed(graph, builder)
            if builder.g.previous_state == "complete" and builder.g.previous_stamp == builder.g.stamp:
                _held_counts(graph, builder)
            _account(builder.g, counts, t0, path, report, totals, say)
            stage[0] = "reading it"
            continue
        # Schema validation (pure Python) runs in a thread while the subgraph is built and Neo4j applies the
        # first writes; its defects are written last, in the same transaction.
        late = None
        if schemas is not None and kind == "nerdm":
            pending = pool.submit(schemas.validate, builder.doc)
            late = lambda b=builder, p=pending: b.schema_defects(_violations(p, path, say))  # noqa: E731
        stage[0] = f"building the {kind} record"
        builder.on_document = _files_progress(path, say)
        with collector.relaxed():
            rg = builder.build()
            stage[0] = f"writing {rg.record_id} to the graph"
            if sink is not None:
                counts = sink(rg, late() if late is not None else ([], []), str(path))
            else:
                counts = write_record(graph, rg, late)
        _account(rg, counts, t0, path, report, totals, say)
        stage[0] = "reading it"


def _held_counts(graph: Graph, stream: NerdmStream) -> None:
    """An unchanged streamed record is not built again: its report counts what the graph holds of it (pages and
    cells of its payloads are not kept there, and read as 0)."""
    g = stream.g
    g.components.update(stream.kinds)
    row = graph.query("ingest/record_counts", record_id=g.record_id)[0]
    g.defects.update({str(k): int(n) for k, n in row["defects"]})
    g.evidence.update({str(k): int(n) for k, n in row["evidence"]})
    g.parsed_files.update({str(k): int(n) for k, n in row["formats"]})
    g.facts, g.files, g.held = int(row["facts"] or 0), int(row["files"]), int(row["held"])


def _files_progress(path: Path, say: Callable[[str], None], every: float = 5.0) -> Callable[[str], None]:
    """A line every few seconds while a record's held files are parsed (a record can hold thousands)."""
    count = [0]
    last = [time.monotonic()]

    def seen(relpath: str) -> None:
        count[0] += 1
        now = time.monotonic()
        if now - last[0] >= every:
            last[0] = now
            say(_clean(f"{path}: {count[0]} files parsed, now {relpath}"))

    return seen


def _violations(pending: Future[list[nerdm_schema.Violation]], path: Path,
                say: Callable[[str], None]) -> list[nerdm_schema.Violation]:
    """The schema check's findings; a check that failed outright is a one-line warning, not a failed record."""
    try:
        return pending.result()
    except Exception as exc:  # noqa: BLE001 - validation never stops an ingest (nerdm_schema reports what it can)
        log.debug("schema validation of %s failed", path, exc_info=True)
        say(_clean(f"warning: {path}: NERDm schema check failed ({type(exc).__name__}: {str(exc)[:200]}); "
                   "its schema defects are missing"))
        return []


def _folder_builder(path: Path, graph: Graph) -> FolderBuilder:
    """`folder:<name>`, unless the graph holds a complete record of that id read from another folder (its
    `source_root`): then the folder gets an id of its own. A record with no `source_root` (written before it
    was stored) counts as this folder, so re-ingesting it replaces it as before."""
    ark = folder_ark(path)
    first = storable_key(ids.record_id(ark, None))[0]  # as FolderBuilder stores it
    held = graph.query("ingest/record_state", record_id=first)
    other = held[0]["source_root"] if held and held[0]["state"] == "complete" else None
    if other is not None and other != storable(str(path.resolve()))[0]:
        return FolderBuilder(path, ark=distinct_folder_ark(path), shares_name_with=first)
    return FolderBuilder(path)


def _nerdm(path: Path, schemas: nerdm_schema.NerdmSchemas | None, whole: bool = False) -> BuilderCore:
    """A NERDm record: read whole, or in passes when its file is VOE_STREAM_BYTES or larger and the first pass
    finds nothing that the in-memory reader should name (ingest/sources/nerdm/stream.py)."""
    record_file = find_record_file(path)
    try:
        large = record_file.stat().st_size >= settings().voe_stream_bytes
    except OSError:
        large = False  # open_record says what is wrong with it
    if large and not whole:
        try:
            return open_streamed(record_file, schemas)
        except NotStreamable as exc:
            log.info("%s: read whole (%s)", record_file, exc)
    return open_record(path, schemas is not None)


def _builders(path: Path, schemas: nerdm_schema.NerdmSchemas | None, graph: Graph,
              whole: bool = False, problems: list[IngestProblem] | None = None) -> list[tuple[str, BuilderCore]]:
    """What the path is, by content: a NERDm record (folder or file), a collection of NERDm records (a file or
    folder of them in the shapes NIST saves), an RO-Crate or a BagIt bag (folder or zip), a plain folder, or a
    facts catalog; a file that is none of these and not JSON is an InputError saying what it looks like
    (ingest/sources/unknown.py). `problems` gets what a collection holds that is not a record."""
    problems = problems if problems is not None else []
    if not path.exists():
        raise InputError("path does not exist", path=str(path))
    kind = entry_kind(path.stat().st_mode)  # a path the user names is followed if it is a symlink
    if kind not in ("file", "dir"):
        raise InputError(f"is {SPECIAL_NAMES[kind]}, not a record folder, a nerdm.json or a facts catalog",
                         path=str(path))
    if path.is_dir():
        if (path / NERDM_FILENAME).exists() or (path / NERDM_FILENAME).is_symlink():
            return [("nerdm", _nerdm(path, schemas, whole))]
        if is_bagged_crate(path):  # the bag's manifests are read as the crate's second statement
            return _crates(path, problems)
        if is_bag(path) or bag_paths(path):
            return _bags(path, problems)
        if all(kind == "dir" for _, kind in iter_entries(path)):  # stops at the first entry that is not a folder
            raise InputError("folder is empty: no nerdm.json and no files to ingest", path=str(path))
        if looks_like_collection(path):
            return _collection(path, schemas, problems)
        if crate_files(path):
            return _crates(path, problems)
        return [("folder", _folder_builder(path, graph))]
    try:
        with path.open("rb") as fh:
            head = fh.read(1 << 20)
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror or exc}", path=str(path)) from exc
    if looks_like_catalog(head):
        return [("catalog", b) for b in catalog_builders(path, hash_file(path, follow_symlinks=True),
                                                          path.read_bytes())]
    if not may_be_json(path, head):  # a zip of a crate or a bag, or a format voe does not read (said as such)
        if is_crate_file(path):
            return _crates(path, problems)
        if is_bag(path):
            return _bags(path, problems)
        raise InputError(f"is a format voe cannot read yet ({looks_like(path, head)})", path=str(path))
    if looks_like_collection(path):
        return _collection(path, schemas, problems)
    return [("nerdm", _nerdm(path, schemas, whole))]


def _bags(path: Path, problems: list[IngestProblem]) -> list[tuple[str, BuilderCore]]:
    """BagIt bags (ingest/sources/bagit.py): a builder per dataset (multibag members grouped), a problem per bag or
    file voe cannot read (a folder's notes, licences and the bags' sidecars excepted); the rest lands."""
    builders, errors = bag_builders(path)
    problems += [IngestProblem.of(e.path or str(path), e.message, e.pointer) for e in errors]
    if path.is_dir() and not is_bag(path):
        bags = {b.source for builder in builders for b in builder.bags} | {Path(e.path) for e in errors if e.path}
        for f in sorted(p for p in path.iterdir() if p.is_file() and not p.is_symlink()):
            if f not in bags and not NOT_DATA.search(f.name):
                problems.append(IngestProblem.of(str(f), "is a format voe cannot read yet in a folder of bags; left out"))
    if not builders:
        raise InputError("holds no BagIt bag voe can read", path=str(path))
    return [("bag", b) for b in builders]


NOT_DATA = re.compile(r"^(license|licence|readme|copying|notice)|\.(md|txt|sha256)$", re.I)


def _crates(path: Path, problems: list[IngestProblem]) -> list[tuple[str, BuilderCore]]:
    """RO-Crates (ingest/sources/rocrate.py): a builder per crate, a problem per crate or file voe cannot read
    (a folder's notes, licences and versions' commit messages excepted); the rest of the call lands."""
    builders, errors = crate_builders(path)
    problems += [IngestProblem.of(e.path or str(path), e.message, e.pointer) for e in errors]
    if path.is_dir() and not is_crate_folder(path):
        crates = {b.crate.source for b in builders} | {Path(e.path) for e in errors if e.path}
        for f in sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink()):
            if f not in crates and not NOT_DATA.search(f.name) and not MESSAGE.match(f.name):
                problems.append(IngestProblem.of(str(f), "is a format voe cannot read yet in a folder of crates; "
                                                         "left out"))
    if not builders:
        raise InputError("holds no RO-Crate voe can read", path=str(path))
    return [("crate", b) for b in builders]


def _collection(path: Path, schemas: nerdm_schema.NerdmSchemas | None,
                problems: list[IngestProblem]) -> list[tuple[str, BuilderCore]]:
    """A file or folder of NERDm records (ingest/sources/nerdm/collection.py): a builder per record, and a problem
    per file or entry that is not one (the rest of the call lands)."""
    builders, errors = collection_builders(path, schemas is not None)
    problems += [IngestProblem.of(e.path or str(path), e.message, e.pointer) for e in errors]
    if not builders:
        raise InputError("holds no NERDm record (a record, an array of records or RMM search results)",
                         path=str(path))
    return [("nerdm", b) for b in builders]


def _account(rg: RecordGraph, counts: WriteCounts, t0: float, path: Path, report: IngestReport, totals: Totals,
             say: Callable[[str], None]) -> None:
    for problem in rg.problems:
        report.errors.append(IngestProblem.of(problem.path or str(path), problem.message))
    seconds = time.perf_counter() - t0
    totals.components.update(rg.components)
    totals.defects.update(rg.defects)
    totals.evidence.update(rg.evidence)
    totals.formats.update(rg.parsed_files)
    report.facts += rg.facts
    report.pages += rg.pages
    report.cells += rg.cells
    report.records += 1
    report.files += rg.files
    report.elements_written += len(rg.nodes) + len(rg.edges) + rg.late_elements + rg.streamed_elements
    for key in totals.graph:
        totals.graph[key] += getattr(counts, key)
    unchanged = rg.previous_stamp == rg.stamp and rg.previous_state == "complete"
    replaced = rg.previous_stamp is not None and not unchanged
    report.records_replaced += replaced
    report.records_unchanged += unchanged
    report.per_record.append(RecordSummary(
        record_id=rg.record_id, ark=rg.ark, version=rg.version, title=rg.title, source=_clean(str(rg.source)),
        components=dict(sorted(rg.components.items())), files=rg.files, held=rg.held,
        defects=dict(sorted(rg.defects.items())), facts=rg.facts, evidence=dict(sorted(rg.evidence.items())),
        seconds=round(seconds, 3), stamp=rg.stamp, replaced=replaced, unchanged=unchanged,
        previous_stamp=rg.previous_stamp, source_root=_clean(rg.source_root) if rg.source_root else None,
        shares_name_with=rg.shares_name_with,
    ))
    name = f"{rg.ark} v{rg.version or '-'}"
    say(f"{name}: {sum(rg.components.values())} components, {rg.held} payloads held, "
        f"{rg.facts} facts, {sum(rg.evidence.values())} evidence, {sum(rg.defects.values())} defects ({seconds:.1f}s)")
    if rg.shares_name_with:
        say(f"{name}: the graph already holds {rg.shares_name_with} from another folder of the same name; "
            f"{rg.source_root} is its own record {rg.record_id}")
    if replaced:
        say(f"{name}: replaced the previous ingest (stamp {rg.previous_stamp} -> {rg.stamp})")
    elif unchanged:
        say(f"{name}: unchanged since the previous ingest (stamp {rg.stamp})")
