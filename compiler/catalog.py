"""The evidence catalog the compiler decides with: every item of the graph with what a request returns for it
(compiler/observations.py) and the verifier-only facts (defects bound to the nearest item, items our own tools
could not decide), and what a packet or a menu asks of an item: its file, whether this copy holds it, whether
it looks odd while being fine (ingest/rules/defects.py HARD_NEGATIVES), its readme and its calibration."""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from voe.artifacts.package import EvidenceObject
from voe.compiler.observations import observe
from voe.graph import Graph
from voe.ingest.rules.defects import Decision, decision
from voe.ingest.rules.materials import conflict
from voe.ingest.rules.media_types import unusual
from voe.ingest.rules.versions import STATUSES

README_RE = re.compile(r"read_?me", re.I)
DEFECTS_QUERY = "compiler/defects_by_evidence"  # each defect with the evidence objects on its folder chain
RESOLVED_QUERY = "compiler/resolved_defects"  # checksum-file defects a valid, agreeing copy resolves
BATCH = 3  # unstated changes of one release with the same size change, at least this many: one batch edit, one fact


def h(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


@dataclass
class Catalog:
    objects: dict[str, EvidenceObject]
    rows: dict[str, dict[str, Any]]
    by_workflow: dict[str, list[str]]
    workflows: dict[str, str]  # id -> title
    workflow_of: dict[str, str]  # evidence id -> workflow id
    own_defects: dict[str, list[str]] = field(default_factory=dict)  # evidence id -> flag-worthy defect ids
    undecided: set[str] = field(default_factory=set)  # items carrying a finding of our own tools only
    # evidence id -> the evidence items holding a valid, agreeing copy that resolves its checksum-file defects
    resolved: dict[str, list[str]] = field(default_factory=dict)
    defect_kinds: dict[str, set[str]] = field(default_factory=dict)  # evidence id -> kinds of its flag-worthy defects
    kind_count: dict[tuple[str, str], int] = field(default_factory=dict)  # (record, kind) -> items carrying it

    def defect_fact(self, e: str) -> str:
        """The defects bound to one item are one fact: a folder of 36 disagreeing checksum files is one. A kind of
        defect that BATCH or more items of one record share is one fact too (an exporter that writes
        text/markdown for every file made one mistake, not six)."""
        kinds = self.defect_kinds.get(e, set())
        record = self.rows[e]["record_id"]
        for kind in sorted(kinds):
            if self.kind_count.get((record, kind), 0) >= BATCH:
                return f"defects:{record}|{kind}"
        return f"defect:{e}"

    def statement_facts(self, e: str) -> list[str]:
        """The changelog statement a release item's gold rests on: its item's first line (one statement that
        names three removed files is one fact)."""
        lines = [loc for loc in self.rows[e]["locations"] if loc.get("kind") == "line" and loc.get("id")]
        if not lines:
            return [f"release:{e}"]
        first = min(lines, key=lambda loc: (int(loc.get("line") or 0), str(loc["id"])))
        return [f"statement:{first['id']}"]

    def gap_facts(self, e: str) -> list[str]:
        if self.rows[e]["provenance"] == "release_notes":
            return self.statement_facts(e)
        return [f"attested:{e}"]

    def calibration_facts(self, e: str, targets: list[str]) -> list[str]:
        """A measurement's calibration rests on what its metadata states, not on the row: two measurements that
        name the same calibration share one fact (a sheet and its older copy too)."""
        row = self.rows[e]
        said = sorted({str(c["statement"]) for c in row.get("calibrated_by") or [] if c["target"] in targets})
        return [f"calibration:{row.get('workbook')}|{s}" for s in said]

    def claim_facts(self, e: str) -> list[str]:
        row = self.rows[e]
        return [f"claim:{row.get('workbook')}|" + "|".join(sorted(map(str, row.get("calibration_claims") or [])))]

    def change_facts(self, e: str) -> list[str]:
        """An unstated change between releases: one batch edit (the same size change on BATCH or more files the
        release changed without a statement) is one fact, any other change its own."""
        row = self.rows[e]
        delta = row.get("release_size_delta")
        same = [x for x in self.by_workflow[self.workflow_of[e]]
                if self.rows[x].get("listed_in") == row.get("listed_in") and unstated_change(self.rows[x])
                and self.rows[x].get("release_size_delta") == delta]
        if delta is not None and len(same) >= BATCH:
            return [f"batch:{row.get('listed_in')}|{row.get('release_to')}|{delta:+d}"]
        return [f"change:{e}"]


def workflow_key(row: dict[str, Any]) -> tuple[str, str]:
    """A NERDm record is one workflow; a plain folder record is one workflow per top-level folder (a
    release-note item belongs to the folder of the summary that lists it); the measurements of a metadata
    workbook's sheet are one workflow (a measurement type: Mechanical_testing, Digital_image_correlation)."""
    record = str(row["record_id"]).removeprefix("record:")  # versioned: two versions are two workflows
    if row.get("sheet") and row.get("workbook"):
        book = str(row["workbook"]).rsplit("/", 1)[-1]
        return f"wf:{record}/{row['workbook']}#{row['sheet']}", f"{row['record_title']} / {book} / {row['sheet']}"
    if row.get("provenance") == "release_notes" and row.get("listed_in"):  # one release: one workflow
        summary = str(row["listed_in"])
        return f"wf:{record}/{summary}", f"{row['record_title']} / {summary.rsplit('/', 1)[-1]}"
    path = row.get("filepath") or row.get("listed_in")
    if str(row["ark"]).startswith("folder:") and path and "/" in path:
        top = path.split("/", 1)[0]
        return f"wf:{record}/{top}", f"{row['record_title']} / {top}"
    return f"wf:{record}", str(row["record_title"])


def load_catalog(graph: Graph) -> Catalog:
    objects: dict[str, EvidenceObject] = {}
    rows: dict[str, dict[str, Any]] = {}
    by_wf: dict[str, list[str]] = defaultdict(list)
    titles: dict[str, str] = {}
    wf_of: dict[str, str] = {}
    for row in graph.query("compiler/evidence_catalog"):
        if row["record_provenance"] == "reconstructed":
            continue  # a catalog written from facts about records NIST publishes: no decision rests on it
        eid = row["evidence_id"]
        row["name"] = row["title"]
        if row["provenance"] == "release_notes":  # two summaries list the same basename: say which one
            row["title"] = f"{row['name']} ({str(row.get('listed_in')).rsplit('/', 1)[-1]})"
        rows[eid] = row
        wf, title = workflow_key(row)
        titles[wf] = title
        wf_of[eid] = wf
        by_wf[wf].append(eid)
        objects[eid] = observe(row)
    # an archive held in several versions (or snapshots kept apart): each workflow says which one it is, so that the
    # same question is never asked of two versions with two answers
    versions: dict[str, set[str]] = defaultdict(set)
    for row in rows.values():
        versions[str(row["ark"])].add(str(row["record_id"]))
    for wf in titles:
        eid = by_wf[wf][0]
        row = rows[eid]
        if len(versions[str(row["ark"])]) > 1:
            titles[wf] = f"{titles[wf]} (version {row.get('version') or 'unversioned'}" + (
                f", snapshot {str(row['record_id']).rsplit('~', 1)[-1]})" if "~" in str(row["record_id"]) else ")")
    cat = Catalog(objects, rows, {k: sorted(v) for k, v in by_wf.items()}, titles, wf_of)
    copies = _copies(graph, cat)
    cat.own_defects, cat.undecided, cat.resolved = _bind_defects(graph, cat, copies)
    return cat


def _copies(graph: Graph, cat: Catalog) -> dict[str, str | None]:
    """defect id -> how the archive resolves it: the nearest evidence item holding a valid, agreeing copy of the
    item, or None when the record's own declarations agree (a stale `valid: false`: the data resolve it). A copy
    is preferred: it is what a reader checks the item by."""
    best: dict[str, tuple[int, int, str, str | None]] = {}
    for r in graph.query(RESOLVED_QUERY):
        if r["copy_evidence"] not in cat.rows:
            continue
        by_copy = r["how"] == "copy"  # a manifest or the record's own data: nothing more to read than the item
        key = (0 if by_copy else 1, int(r["depth"]), str(r["copy_evidence"]), r["copy_evidence"] if by_copy else None)
        if r["defect_id"] not in best or key[:3] < best[r["defect_id"]][:3]:
            best[r["defect_id"]] = key
    return {d: k[3] for d, k in best.items()}


def _bind_defects(graph: Graph, cat: Catalog, copies: dict[str, str | None]
                  ) -> tuple[dict[str, list[str]], set[str], dict[str, list[str]]]:
    """A defect in Cross_Sections/Tracks_Results shows on Cross_Sections too: bind it to the nearest folder.
    Only defects whose kind leads to a flag bind (ingest/rules/defects.py GOLDS); an item with a finding of our own
    tools (a parser that failed, a budget) is undecided; a checksum-file defect a valid, agreeing copy resolves
    binds as resolved (the item stands; the copy is what a reader checks it by)."""
    nearest: dict[str, dict[str, Any]] = {}
    undecided: set[str] = set()
    for r in graph.query(DEFECTS_QUERY):
        if r["evidence_id"] not in cat.rows:
            continue
        best = nearest.get(r["defect_id"])
        if best is None or (r["depth"], r["evidence_id"]) < (best["depth"], best["evidence_id"]):
            nearest[r["defect_id"]] = r
    out: dict[str, list[str]] = defaultdict(list)
    resolved: dict[str, list[str]] = defaultdict(list)
    for did, r in sorted(nearest.items()):
        verdict = decision(str(r["defect_kind"]))
        if did in copies and copies[did] != r["evidence_id"]:
            resolved[r["evidence_id"]].extend([c for c in [copies[did]] if c is not None])
        elif verdict is Decision.FLAG:
            out[r["evidence_id"]].append(did)
            cat.defect_kinds.setdefault(r["evidence_id"], set()).add(str(r["defect_kind"]))
        elif verdict is Decision.UNDECIDED:
            undecided.add(r["evidence_id"])
    for e, kinds in cat.defect_kinds.items():
        for kind in kinds:
            key = (str(cat.rows[e]["record_id"]), kind)
            cat.kind_count[key] = cat.kind_count.get(key, 0) + 1
    return dict(out), undecided - set(out), {e: sorted(set(c)) for e, c in resolved.items() if e not in out}


def is_resolved(cat: Catalog, e: str) -> bool:
    """The item's checksum-file defects are all resolved by the archive (a copy, or the record's own data)."""
    return e in cat.resolved


def readme_of(cat: Catalog, e: str) -> str | None:
    wf = cat.workflow_of[e]
    readmes = [x for x in cat.by_workflow[wf] if x != e and cat.rows[x]["kind"] == "source_document"
               and cat.objects[x].status == "archived" and x not in cat.undecided
               and README_RE.search(f"{cat.rows[x].get('filepath') or ''} {cat.rows[x]['title']}")]
    return readmes[0] if readmes else None


def named_calibrations(cat: Catalog, e: str) -> list[str]:
    """What the subject's own metadata names as its calibration (CALIBRATED_BY: a measurement row's calibration
    cells), held or not. A keyword in a title is not a statement: nothing else is a calibration."""
    return sorted({str(c["target"]) for c in cat.rows[e].get("calibrated_by") or [] if c["target"] in cat.rows})


def calibrators(cat: Catalog, e: str) -> list[str]:
    """The calibrations the subject's metadata names that the archive holds (same workflow, clean)."""
    return [x for x in named_calibrations(cat, e) if cat.objects[x].status == "archived" and x not in cat.undecided
            and cat.workflow_of.get(x) == cat.workflow_of[e]]


def missing_calibrations(cat: Catalog, e: str) -> list[str]:
    """The calibrations the subject's metadata names that the archive holds nowhere (same workflow)."""
    return [x for x in named_calibrations(cat, e) if cat.objects[x].status == "unavailable"
            and cat.workflow_of.get(x) == cat.workflow_of[e]]


def unstated_change(row: dict[str, Any]) -> bool:
    """A file the release changed (its hash differs from the previous release's) that no changelog item names
    and no item covers wholesale (a schema change, all documents of a kind replaced)."""
    return row.get("provenance") == "release_notes" and row.get("release_status") == "changed" \
        and row.get("release_coverage") == "none"


def version_change(row: dict[str, Any]) -> str | None:
    """How the statements of the versions since the earlier one (release histories, commit messages) cover a change
    of the item between two versions the archive holds (ingest/rules/versions.py: a file whose digest or size
    changed, that moved to another path over the same bytes, that the later version no longer lists or lists for
    the first time): `stated` (a statement speaks of data), `denied` (every statement speaks only of metadata),
    `none` (the statements say neither, or there is none); None: no such change, or a removal, rename or addition
    no statement speaks to at all (a crate exported again with no commit message): like a removal or rename a
    changelog does not state, it decides nothing (the curator's report lists it, compiler/audit.py)."""
    if row.get("version_status") not in STATUSES:
        return None
    if row.get("version_status") != "changed" and not row.get("version_statement"):
        return None
    return str(row.get("version_coverage") or "none")


def version_facts(row: dict[str, Any]) -> list[str]:
    """The statements of one release cover (or fail to cover) every change it made: one fact a transition."""
    return [f"version:{row['record_id']}|{row.get('version_from')}->{row.get('version_to')}"]


def material_conflict(cat: Catalog, e: str) -> tuple[set[str], set[str]] | None:
    """The item's own description names a material its record does not (ingest/rules/materials.py)."""
    row = cat.rows[e]
    if not row.get("description") or not row.get("record_description"):
        return None
    return conflict(str(row["description"]), f"{row.get('record_title') or ''} {row['record_description']}")


def subject_file(cat: Catalog, e: str) -> str:
    row = cat.rows[e]
    members = row.get("members") or []
    return str((members[0]["path"] if row["is_folder"] and members else row.get("filepath")) or row["name"])


def held(cat: Catalog, e: str) -> bool:
    row = cat.rows[e]
    if row["provenance"] == "measurement":
        return True  # a row of a workbook this copy holds and parsed
    return bool(all(m.get("held") for m in row["members"]) if row["is_folder"] else row.get("held"))


def extension(cat: Catalog, e: str) -> str:
    name = subject_file(cat, e).rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[-1].lower() if "." in name else ""


def odd_media_type(path: str | None, media_type: str | None) -> bool:
    """A declared type the extension allows that looks unusual (ingest/rules/media_types.py `unusual`): it looks
    wrong and is fine."""
    return bool(path) and unusual(str(path), media_type)


def looks_odd(cat: Catalog, e: str) -> bool:
    """A fact of the item that looks suspicious and is no defect under the rules (ingest/rules/defects.py
    HARD_NEGATIVES): an odd media type, a BOM or CRLF, a release's change or rename, bytes this copy does not
    hold of a declared file, a reference or an unavailable item."""
    row, obj = cat.rows[e], cat.objects[e]
    files = row.get("members") or [] if row["is_folder"] else [{"path": row.get("filepath"),
                                                                "media_type": row.get("media_type"),
                                                                "summary": row.get("local_summary")}]
    return bool(obj.status in ("referenced", "unavailable") or row.get("release_status") in ("renamed", "changed")
                or any(odd_media_type(f.get("path"), f.get("media_type")) or _bom_or_crlf(f.get("summary"))
                       for f in files))


def hard_negatives(cat: Catalog, wf: str, exclude: set[str]) -> list[str]:
    """Items whose facts look suspicious but are no defect under the rules, and defective items that are not
    the decision's (flagging them is wrong): they go on menus first so that "flag anything odd" fails."""
    return [e for e in cat.by_workflow[wf] if e not in exclude and e not in cat.undecided
            and (looks_odd(cat, e) or not held(cat, e) or bool(cat.own_defects.get(e)))]


def _bom_or_crlf(summary_json: str | None) -> bool:
    try:
        summary = json.loads(summary_json) if summary_json else {}
    except ValueError:
        return False
    return bool(summary.get("bom") or summary.get("crlf"))


