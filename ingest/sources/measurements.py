"""Evidence for the measurements a metadata workbook describes, and the calibrations their rows name (the rules of
what a calibration cell states are in ingest/rules/calibration.py).

Called by a builder once every file of the record is parsed. A workbook sheet is a measurement table when its
header row has a `Measurement_identifier` column and at least one calibration column (template, example and
documentation sheets excepted). Rows with the same identifier are one measurement (AM Bench writes a second
row for a second calibration: Force, then Displacement); rows the template marks `Human_readonly` = Y are its
guidance, not measurements.

Per measurement that states a calibration, is a calibration (`Calibration_Y_or_N` = Y) or is named as one: an
Evidence (`provenance: "measurement"`, id `<workbook>#<sheet>!<identifier>`, title `<identifier> (<sheet>)`,
kind `calibration_artifact` when it is a calibration, else `characterization`), LOCATED_AT the cells of its rows
that identify it and state its calibration. Its acquisition path is the held workbook (`in_file`). Each
statement that names a calibration is an edge `CALIBRATED_BY` to what it names: the measurement of that
identifier (a reference or a named calibration equal to an identifier), a file of the record of that name, or,
when the archive holds neither, an Evidence of its own (`provenance: "named"`, `available: false`, titled by
the statement, one per sheet and statement) LOCATED_AT the cells that name it. A claim ("calibrated
2021-02-03") is kept on the measurement as `calibration_claims`; an address outside the archive decides
nothing and is only located.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from voe.graph import EdgeRow, NodeRow
from voe.ingest.payloads.parsers.model import Fact
from voe.ingest.rules import ids
from voe.ingest.rules.calibration import (
    CALIBRATION_FLAG,
    HUMAN_READONLY,
    MEASUREMENT_ID,
    Statement,
    classify,
    is_calibration_column,
    is_template_sheet,
    normalized,
)
from voe.ingest.sources.releases import ParsedFile
from voe.ontology import Label, Rel

if TYPE_CHECKING:
    from voe.ingest.builder import BuilderCore

CELL = re.compile(r"^([A-Z]+)(\d+)$")
MAX_NAMED_LOCATIONS = 8  # a calibration 145 rows name is located at its first cells, not at every one
MAX_TITLE = 120


@dataclass
class _Measurement:
    sheet: str
    ident: str
    rows: list[int] = field(default_factory=list)
    cells: list[Fact] = field(default_factory=list)
    is_calibration: bool = False
    statements: list[tuple[Statement, str, Fact]] = field(default_factory=list)  # (kind, text, cell)


def _sheets(parsed_facts: list[Fact]) -> dict[str, dict[int, dict[str, Fact]]]:
    """sheet -> row -> column letters -> cell fact (cells of a workbook's parse)."""
    out: dict[str, dict[int, dict[str, Fact]]] = defaultdict(lambda: defaultdict(dict))
    for f in parsed_facts:
        if f.kind != "cell" or not f.extra.get("sheet"):
            continue
        m = CELL.match(str(f.extra.get("cell") or ""))
        if m:
            out[str(f.extra["sheet"])][int(m.group(2))][m.group(1)] = f
    return out


def _header(rows: dict[int, dict[str, Fact]]) -> tuple[int, dict[str, str]] | None:
    for r in sorted(rows):
        cells = rows[r]
        if any(c.extra.get("header") for c in cells.values()):
            return r, {col: normalized(c.text) for col, c in cells.items()}
    return None


def _measurements(sheet: str, rows: dict[int, dict[str, Fact]]) -> list[_Measurement]:
    found = _header(rows)
    if found is None:
        return []
    at, header = found
    ident_col = next((c for c, h in header.items() if MEASUREMENT_ID.match(h.replace(" ", ""))), None)
    cal_cols = [c for c, h in header.items() if is_calibration_column(h)]
    flag_col = next((c for c, h in header.items() if CALIBRATION_FLAG.match(h)), None)
    guide_col = next((c for c, h in header.items() if HUMAN_READONLY.match(h)), None)
    if ident_col is None or not cal_cols:
        return []
    by_ident: dict[str, _Measurement] = {}
    for r in sorted(x for x in rows if x > at):
        cells = rows[r]
        guide = cells.get(guide_col) if guide_col else None
        if guide is not None and normalized(guide.text).upper() == "Y":
            continue  # the template's guidance row, not a measurement
        ident_cell = cells.get(ident_col)
        ident = normalized(ident_cell.text) if ident_cell is not None else ""
        if not ident:
            continue
        flag = normalized(cells[flag_col].text).upper() if flag_col and flag_col in cells else ""
        if flag not in ("Y", "N"):
            continue  # no measurement says neither: a row of guidance or notes
        m = by_ident.setdefault(ident, _Measurement(sheet, ident))
        m.rows.append(r)
        m.cells.append(ident_cell)  # type: ignore[arg-type]
        if flag_col and flag_col in cells:
            m.cells.append(cells[flag_col])
        m.is_calibration = m.is_calibration or flag == "Y"
        for col in cal_cols:
            cell = cells.get(col)
            if cell is None:
                continue
            m.cells.append(cell)
            kind = classify(header[col], cell.text)
            if kind is not None and flag == "N":
                m.statements.append((kind, normalized(cell.text), cell))
    return list(by_ident.values())


def measurement_evidence(builder: BuilderCore, workbooks: list[ParsedFile], files: dict[str, str]) -> None:
    """Evidence for the measurements of every measurement table, and CALIBRATED_BY what their rows name.
    `files`: the record's file basenames (and stems) -> the evidence id of the item that holds them."""
    for wb in workbooks:
        sheets = _sheets(wb.parsed.facts)
        tables = {s: _measurements(s, rows) for s, rows in sheets.items() if not is_template_sheet(s)}
        tables = {s: ms for s, ms in tables.items() if ms}
        if not tables:
            continue
        _write(builder, wb, tables, files)


def _write(builder: BuilderCore, wb: ParsedFile, tables: dict[str, list[_Measurement]], files: dict[str, str]) -> None:
    def eid_of(m: _Measurement) -> str:
        return ids.evidence_id(builder.rec_id, f"{wb.relpath}#{m.sheet}!{m.ident}")

    by_ident: dict[str, list[_Measurement]] = defaultdict(list)
    for ms in tables.values():
        for m in ms:
            by_ident[m.ident].append(m)

    def resolve(m: _Measurement, text: str) -> str | None:
        """The measurement this text identifies (its own sheet first), or the record's file of that name."""
        targets = sorted(by_ident.get(text, []), key=lambda t: (t.sheet != m.sheet, t.sheet))
        targets = [t for t in targets if t is not m]
        if targets:
            return eid_of(targets[0])
        return files.get(text) or files.get(text.lower())

    edges: list[tuple[_Measurement, str, Statement, str, Fact]] = []
    named: dict[tuple[str, str], list[Fact]] = defaultdict(list)
    referenced: set[str] = set()
    for ms in tables.values():
        for m in ms:
            for kind, text, cell in m.statements:
                if kind in (Statement.CLAIM, Statement.ELSEWHERE):
                    continue
                target = resolve(m, text)
                if target is None:
                    named[(m.sheet, text)].append(cell)
                    target = _named_id(builder, wb, m.sheet, text)
                else:
                    referenced.add(target)
                edges.append((m, target, kind, text, cell))
    for ms in tables.values():
        for m in ms:
            eid = eid_of(m)
            if not (m.statements or m.is_calibration or eid in referenced):
                continue
            calibration = m.is_calibration or eid in referenced
            props: dict[str, Any] = {
                "canonical_id": eid, "kind": "calibration_artifact" if calibration else "characterization",
                "kind_rule": "measurement_calibration" if calibration else "measurement",
                "title": f"{m.ident} ({m.sheet})"[:MAX_TITLE + 40], "record_ark": builder.ark,
                "provenance": "measurement", "available": True, "in_file": wb.relpath, "workbook": wb.relpath,
                "sheet": m.sheet, "measurement_id": m.ident, "rows": m.rows, "calibration_flag": m.is_calibration,
                "calibration_claims": [t for k, t, _ in m.statements if k is Statement.CLAIM],
                "calibration_elsewhere": [t for k, t, _ in m.statements if k is Statement.ELSEWHERE],
            }
            builder.g.nodes.append(NodeRow(eid, (Label.EVIDENCE,), builder._owned(props)))
            for loc in dict.fromkeys(builder.fact_location(c, wb.relpath, wb.local) for c in m.cells):
                builder.g.edges.append(EdgeRow(Rel.LOCATED_AT, eid, Label.EVIDENCE, loc, Label.SOURCE_LOCATION))
            builder.g.evidence[props["kind"]] += 1
    for (sheet, text), cells in sorted(named.items()):
        nid = _named_id(builder, wb, sheet, text)
        builder.g.nodes.append(NodeRow(nid, (Label.EVIDENCE,), builder._owned({
            "canonical_id": nid, "kind": "calibration_artifact", "kind_rule": "named_calibration",
            "title": text[:MAX_TITLE], "record_ark": builder.ark, "provenance": "named", "available": False,
            "held": False, "workbook": wb.relpath, "sheet": sheet, "named_by": len(cells),
        })))
        for loc in dict.fromkeys(builder.fact_location(c, wb.relpath, wb.local) for c in cells[:MAX_NAMED_LOCATIONS]):
            builder.g.edges.append(EdgeRow(Rel.LOCATED_AT, nid, Label.EVIDENCE, loc, Label.SOURCE_LOCATION))
        builder.g.evidence["calibration_artifact"] += 1
    seen: set[tuple[str, str]] = set()
    for m, target, kind, text, cell in edges:
        if (eid_of(m), target) in seen:
            continue
        seen.add((eid_of(m), target))
        builder.g.edges.append(EdgeRow(Rel.CALIBRATED_BY, eid_of(m), Label.EVIDENCE, target, Label.EVIDENCE, {
            "statement": text, "statement_kind": kind.value, "cell": f"{m.sheet}!{cell.extra.get('cell')}",
            "location": builder.fact_location(cell, wb.relpath, wb.local)}))


def _named_id(builder: BuilderCore, wb: ParsedFile, sheet: str, text: str) -> str:
    return ids.evidence_id(builder.rec_id, f"{wb.relpath}#{sheet}#named:{text[:MAX_TITLE]}")
