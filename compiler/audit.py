"""The curator's defect report (`voe audit`): for every archive and version the graph holds (or the ones named),
every defect and conflict, with the file, where it is located, what is declared against what is found, the rule
that found it, how the archive resolves it when it does, and a plain-text letter to the contact the record names.
Sorted by what blocks use first:

1. `blocks use`: a defect that breaks provenance or checkability, or an item the archive names and cannot supply
   (ingest/rules/defects.py: flag, localize);
2. `conflict`: the archive's own statements disagree (a change no changelog or release history states, release
   dates that go backwards, a calibration only claimed or named and held nowhere, an item whose material its record
   contradicts): a packet resting on it cannot be completed until the owner says which holds;
3. `stale`: the archive resolves it itself (a checksum file marked invalid while its digest agrees, a
   byte-identical copy has a valid one, or a second manifest agrees with the bytes where the first does not): the
   data stand, the metadata want fixing;
4. `note`: recorded, and fine (a record that declares no checksum at all, a schema departure, a file added,
   renamed or removed between two versions no statement speaks of);
5. `our tools`: a finding of voe's own parsers (a budget, a parser that failed), not of the archive.

The report is built from the graph alone (offline); `voe audit PATH...` ingests the paths first and reports only
their records. Files: audit.json (AuditReport, schema in schema/audit.schema.json), audit.md, audit.csv, and
letters.txt (one letter a record, to its contact).
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from voe import __version__
from voe.artifacts.run import written_whole
from voe.compiler.catalog import (
    Catalog,
    load_catalog,
    material_conflict,
    missing_calibrations,
    unstated_change,
    version_change,
)
from voe.graph import Graph
from voe.ingest.rules.defects import Decision, decision

AUDIT_VERSION = 1
Severity = Literal["blocks use", "conflict", "stale", "note", "our tools"]
ORDER: tuple[Severity, ...] = ("blocks use", "conflict", "stale", "note", "our tools")
WHY: dict[Severity, str] = {
    "blocks use": "these break provenance or checkability, or name items the archive cannot supply: fix before use",
    "conflict": "the archive's own statements disagree: say which holds",
    "stale": "the archive resolves these itself; the metadata want fixing",
    "note": "recorded and fine",
    "our tools": "findings of voe's parsers, not of the archive",
}


class Finding(BaseModel):
    severity: Severity
    kind: str
    rule: str
    file: str | None = None
    location: str | None = None  # the file and the place in it (JSON pointer, line, cell)
    detail: str  # what is declared against what is found
    resolution: str | None = None


class RecordAudit(BaseModel):
    record_id: str
    ark: str
    version: str | None = None
    title: str | None = None
    contact_name: str | None = None
    contact_email: str | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    findings: list[Finding] = Field(default_factory=list)


class AuditReport(BaseModel):
    audit_version: int = AUDIT_VERSION
    voe_version: str = __version__
    records: list[RecordAudit]


def _severity(kind: str) -> Severity:
    d = decision(kind)
    return "blocks use" if d in (Decision.FLAG, Decision.LOCALIZE) else "note" if d is Decision.NONE else "our tools"


def audit(graph: Graph, records: list[str] | None = None) -> AuditReport:
    """The report of the named records (record ids), or of every complete record of the graph."""
    cat = load_catalog(graph)
    resolved_by: dict[str, str] = {}
    for r in graph.query("compiler/resolved_defects"):
        how = (f"resolved by a byte-identical copy, {r['copy']}, whose checksum file {r['copy_sidecar']} is valid "
               "and agrees" if r["how"] == "copy" else
               f"resolved by the bag's payload manifest, which lists {r['item']} with the digest its bytes have; "
               f"the declaration in {r['stale_sidecar']} is stale" if r["how"] == "manifest" else
               f"resolved by the crate's digest list {r['copy_sidecar']}, which lists {r['item']} with the digest its "
               f"bytes have; the sha256 the crate's metadata declares ({r['stale_sidecar']}) is stale"
               if r["how"] == "crate_list" else
               f"resolved by the crate's own metadata, whose sha256 for {r['item']} is the digest its bytes have; the "
               f"line of {r['stale_sidecar']} is stale" if r["how"] == "crate_metadata" else
               f"resolved by the record's own data: what it declares of {r['stale_sidecar']} agrees with "
               f"{r['item']}'s digest; the valid: false flag is stale")
        resolved_by.setdefault(r["defect_id"], how)
    out: dict[str, RecordAudit] = {}
    for r in graph.query("compiler/audit_records", records=records):
        out[r["record_id"]] = RecordAudit(record_id=r["record_id"], ark=r["ark"], version=r["version"],
                                          title=r["title"], contact_name=r["contact_name"],
                                          contact_email=r["contact_email"])
    for r in graph.query("compiler/audit_findings", records=records):
        if r["record_id"] not in out:
            continue
        resolution: str | None = resolved_by.get(r["defect_id"])
        out[r["record_id"]].findings.append(Finding(
            severity="stale" if resolution else _severity(str(r["kind"])), kind=str(r["kind"]), rule=str(r["rule"]),
            file=r["file"], location=f"{r['at_path']} {r['at']}" if r["at_path"] else None,
            detail=str(r["detail"]), resolution=resolution))
    for rid, finding in _conflicts(cat):
        if rid in out:
            out[rid].findings.append(finding)
    for rec in out.values():
        rec.findings.sort(key=lambda f: (ORDER.index(f.severity), f.file or "", f.kind, f.detail))
        rec.counts = {s: n for s in ORDER if (n := sum(1 for f in rec.findings if f.severity == s))}
    ranked = sorted(out.values(), key=lambda a: (-a.counts.get("blocks use", 0), -a.counts.get("conflict", 0),
                                                a.record_id))
    return AuditReport(records=ranked)


def _version_detail(row: dict[str, Any]) -> str:
    """What the versions show of the item: `renamed between 1.0 and 1.1 (a.csv -> b.csv)`."""
    try:
        before = json.loads(row.get("version_before_json") or "[]")
    except ValueError:
        before = []
    moves = [f"{b['path']} -> {b['renamed_to']}" for b in before if isinstance(b, dict) and b.get("renamed_to")]
    return (f"{row.get('version_status')} between {row.get('version_from')} and {row.get('version_to')}"
            + (f" ({'; '.join(moves)})" if moves else ""))


def _conflicts(cat: Catalog) -> list[tuple[str, Finding]]:
    """The archive's statements that disagree, from the evidence catalog (compiler/catalog.py)."""
    out: list[tuple[str, Finding]] = []
    dated: set[str] = set()
    for e, row in sorted(cat.rows.items()):
        rid = str(row["record_id"])
        where = _where(row)
        if unstated_change(row):
            delta = row.get("release_size_delta")
            out.append((rid, Finding(severity="conflict", kind="unstated_change", rule="release.changelog",
                                     file=row["name"], location=where,
                                     detail=f"{row['name']} changed from {row.get('release_from')} to "
                                            f"{row.get('release_to')} ({delta:+d} bytes) and no changelog item "
                                            "names or covers the change" if delta is not None else
                                            f"{row['name']} changed and no changelog item names or covers it")))
        if (cover := version_change(row)) in ("denied", "none"):
            out.append((rid, Finding(severity="conflict", kind="version_change_unstated", rule="nerdm.versions",
                                     file=row.get("filepath") or row["title"], location=where,
                                     detail=f"{_version_detail(row)}; the release history says: "
                                            f"{row.get('version_statement') or 'nothing'} ({cover})")))
        elif cover is None and row.get("version_status"):  # no statement at all: recorded, decides nothing
            out.append((rid, Finding(severity="note", kind="version_change", rule="versions",
                                     file=row.get("filepath") or row["title"], location=where,
                                     detail=f"{_version_detail(row)}; no statement (release note, commit "
                                            "message) speaks of the versions")))
        if row.get("release_dates_backwards") and rid not in dated:
            dated.add(rid)
            out.append((rid, Finding(severity="conflict", kind="release_dates_backwards", rule="nerdm.release_history",
                                     detail=str(row["release_dates_backwards"]))))
        if (found := material_conflict(cat, e)) is not None:
            mine, theirs = found
            out.append((rid, Finding(severity="conflict", kind="material_conflict", rule="materials",
                                     file=row.get("filepath") or row["title"], location=where,
                                     detail=f"the item's description names {', '.join(sorted(mine))}; the record "
                                            f"names {', '.join(sorted(theirs))}")))
        if row.get("provenance") == "measurement":
            for claim in row.get("calibration_claims") or []:
                out.append((rid, Finding(severity="conflict", kind="calibration_claimed", rule="calibration.claim",
                                         file=row.get("workbook"), location=where,
                                         detail=f"{row['title']}: calibration stated as {claim!r}, with no record "
                                                "of it in the archive")))
            for x in missing_calibrations(cat, e):
                out.append((rid, Finding(severity="blocks use", kind="calibration_held_nowhere",
                                         rule="calibration.named", file=row.get("workbook"), location=where,
                                         detail=f"{row['title']}: names its calibration {cat.rows[x]['title']!r}; "
                                                "no file, row or record of the archive holds it")))
    return out


def _where(row: dict[str, object]) -> str | None:
    locs = row.get("locations") or []
    for loc in locs if isinstance(locs, list) else []:
        if isinstance(loc, dict) and loc.get("path"):
            return f"{loc['path']} {loc.get('locator') or ''}".strip()
    return None


FILES = {"json": "audit.json", "markdown": "audit.md", "csv": "audit.csv", "letters": "letters.txt",
         "schema": "schema/audit.schema.json"}


def write(report: AuditReport, out: Path, *, force: bool = False) -> dict[str, Path]:
    """audit.json (and its schema), audit.md, audit.csv and letters.txt into `out`, by the one --out rule of every
    command (voe/artifacts/outdir.py): a folder that holds something is refused unless `force`, which replaces an
    earlier defect report only; written aside and swapped in whole, so no file of an earlier report stays."""
    with written_whole(out, "defect report", force=force) as folder:
        (folder / "schema").mkdir()
        (folder / FILES["json"]).write_text(report.model_dump_json(indent=2) + "\n")
        (folder / FILES["schema"]).write_text(json.dumps(AuditReport.model_json_schema(), indent=2, sort_keys=True)
                                              + "\n")
        (folder / FILES["markdown"]).write_text(markdown(report))
        (folder / FILES["csv"]).write_text(table(report))
        (folder / FILES["letters"]).write_text("\n\n".join(letter(r) for r in report.records) + "\n")
    return {kind: out / name for kind, name in FILES.items()}


def table(report: AuditReport) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["record", "version", "severity", "kind", "rule", "file", "location", "detail", "resolution"])
    for r in report.records:
        for f in r.findings:
            w.writerow([r.ark, r.version or "", f.severity, f.kind, f.rule, f.file or "", f.location or "", f.detail,
                        f.resolution or ""])
    return buf.getvalue()


def markdown(report: AuditReport) -> str:
    parts = ["# Curator's defect report", "",
             f"{len(report.records)} archives and versions; voe {report.voe_version}. Sorted by what blocks use first: "
             + "; ".join(f"**{s}**: {WHY[s]}" for s in ORDER) + "."]
    for r in report.records:
        parts += ["", f"## {r.ark} {r.version or ''} {('— ' + r.title) if r.title else ''}".rstrip(), "",
                  ", ".join(f"{s} {n}" for s, n in r.counts.items()) or "nothing found"]
        if r.findings:
            parts += ["", "| severity | kind | file | location | declared against found | resolution |",
                      "|---|---|---|---|---|---|"]
            parts += [f"| {f.severity} | {f.kind} | {_cell(f.file)} | {_cell(f.location)} | {_cell(f.detail)} | "
                      f"{_cell(f.resolution)} |" for f in r.findings]
    return "\n".join(parts) + "\n"


def _cell(text: str | None) -> str:
    return " ".join((text or "").split()).replace("|", "\\|")


def letter(r: RecordAudit) -> str:
    """A plain-text letter to the record's contact: what to fix first, then the rest, each with its place."""
    who = r.contact_name or "the record's curator"
    lines = [f"To: {who}" + (f" <{r.contact_email}>" if r.contact_email else " (the record names no contact)"),
             f"About: {r.ark} version {r.version or 'unversioned'}" + (f" ({r.title})" if r.title else ""), "",
             f"Dear {who},", ""]
    if not r.findings:
        return "\n".join([*lines, "a read of this record found nothing to fix. Thank you.", ""])
    counts = Counter(f.severity for f in r.findings)
    lines.append("a read of this record found " + ", ".join(f"{n} {s}" for s, n in
                                                            ((s, counts[s]) for s in ORDER) if n) + ":")
    for s in ORDER:
        group = [f for f in r.findings if f.severity == s]
        if not group:
            continue
        lines += ["", f"{s.capitalize()} ({WHY[s]}):"]
        shown = group[:20]
        for f in shown:
            detail = f.detail.removeprefix(f"{f.file}: ") if f.file else f.detail
            line = f"- {f.file or '(the record)'}: {detail}"
            if f.location:
                line += f" [{f.location}]"
            if f.resolution:
                line += f" -- {f.resolution}"
            lines.append(line)
        if len(group) > len(shown):
            lines.append(f"- and {len(group) - len(shown)} more of this kind (audit.csv lists every one)")
    return "\n".join([*lines, "", "The full list, each finding located, is in audit.md and audit.csv.", ""])
