"""Instrument and process spreadsheets recognised by content: thermocouple logger exports and PrintTracker
build logs. Both are parsed as workbooks first (every cell located); this adds what they mean."""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from voe.ingest.payloads.parsers.model import Fact, Parsed, Role
from voe.ingest.payloads.parsers.registry import Probe, parser
from voe.ingest.payloads.parsers.tabular import parse_xlsx


def _cells(parsed: Parsed) -> dict[str, dict[str, Fact]]:
    by_sheet: dict[str, dict[str, Fact]] = defaultdict(dict)
    for f in parsed.facts:
        by_sheet[f.extra["sheet"]][f.extra["cell"]] = f
    return by_sheet


def kind_of_workbook(parsed: Parsed) -> str | None:
    for cells in _cells(parsed).values():
        a1 = cells.get("A1")
        if a1 and a1.text.strip().startswith("Device Name"):
            return "thermocouple"
        if a1 and a1.text.strip() == "Program Name":
            return "printtracker"
    if any(s.lower().startswith("laserpower") for s in parsed.summary.get("sheets", [])):
        return "printtracker"
    return None


def thermocouple(path: Path, parsed: Parsed) -> Parsed:
    """Device, serial, channels, sample count and time span of a multi-channel logger export."""
    parsed.format = "thermocouple_xlsx"
    parsed.role = Role.CHARACTERIZATION
    sheets = []
    for sheet, cells in _cells(parsed).items():
        meta = {}
        for label, key in (("Device Name", "device"), ("Device Description", "description"),
                           ("Serial Number", "serial"), ("Device ID", "device_id")):
            for coord, fact in cells.items():
                if coord.startswith("A") and fact.text.startswith(label):
                    row = coord[1:]
                    value = cells.get(f"C{row}")
                    if value:
                        meta[key] = value.text
                        value.name = key
                        value.role = Role.CHARACTERIZATION
        channels = [f.text for c, f in sorted(cells.items()) if f.text.startswith("Channel ")]
        stamps = sorted(f.value for c, f in cells.items() if c.startswith("A") and isinstance(f.value, str)
                        and re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d", f.value))
        for f in cells.values():
            f.role = Role.CHARACTERIZATION
        sheets.append({"sheet": sheet, **meta, "channels": channels, "samples": len(stamps),
                       "start": stamps[0] if stamps else None, "end": stamps[-1] if stamps else None,
                       "seconds": (dt.datetime.fromisoformat(stamps[-1]) - dt.datetime.fromisoformat(stamps[0])).total_seconds()
                       if len(stamps) > 1 else 0.0})
    parsed.summary.update({"instrument": "thermocouple_logger", "loggers": sheets})
    return parsed


# a match never starts inside a run of digits (it would end where the run's own match ends), and the quantifiers
# are possessive: a long number with no W after it is read once, not once per digit
POWER_RE = re.compile(r"(-?(?<!\d)\d++(?:\.\d++)?+)\s*+W\b", re.I)


def printtracker(path: Path, parsed: Parsed) -> Parsed:
    """Build events (program, iterator, note) and laser power checks of an AM Bench PrintTracker log."""
    parsed.format = "printtracker_xlsx"
    parsed.role = Role.PROCESS_RECORD
    events: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []
    for sheet, cells in _cells(parsed).items():
        for f in cells.values():
            f.role = Role.PROCESS_RECORD
        rows: dict[int, dict[str, Fact]] = defaultdict(dict)
        for coord, f in cells.items():
            col = re.match(r"[A-Z]+", coord)
            assert col is not None
            rows[int(coord[col.end():])][col.group()] = f
        program = None
        for r in sorted(rows):
            row = rows[r]
            if r == 1:
                continue
            if sheet.lower().startswith("laserpower"):
                label, val = row.get("A"), row.get("B")
                if label is None or val is None:
                    continue
                watts = float(val.value) if isinstance(val.value, (int, float)) else None
                if watts is None and (m := POWER_RE.search(val.text)):
                    watts = float(m.group(1))
                val.name, val.unit, val.value = f"laser power {label.text.lower()}", "W", watts
                checks.append({"check": label.text, "watts": watts, "recorded": watts is not None,
                               "raw": val.text, "cell": f"{sheet}!{val.extra['cell']}"})
                continue
            if rows.get(1, {}).get("A") is None or rows[1]["A"].text.strip() != "Program Name":
                continue  # events live in the build sheet (A1 "Program Name"); others are tables of their own
            if "A" in row:
                program = row["A"].text
            note = row.get("C")
            if note is not None:
                note.name = "event"
                events.append({"program": program, "iterator": row["B"].value if "B" in row else None,
                               "event": note.text, "cell": f"{sheet}!{note.extra['cell']}"})
    summary: dict[str, Any] = {"log": "printtracker", "events": events, "laser_power_checks": checks}
    pre = next((c["watts"] for c in checks if c["check"].lower().startswith("pre")), None)
    post = next((c["watts"] for c in checks if c["check"].lower().startswith("post")), None)
    if pre and post:
        summary["laser_power_change_pct"] = round((post - pre) / pre * 100, 2)
    parsed.summary.update(summary)
    return parsed


def _is_workbook(p: Probe) -> bool:
    return p.zip_names is not None and "xl/workbook.xml" in p.zip_names


@parser("xlsx", order=20, detect=_is_workbook, extensions=(".xlsx", ".xlsm"), libraries=("openpyxl",))
def parse_workbook(path: Path) -> Parsed:
    """XLSX: every cell at sheet and cell, formulas with their cached values; thermocouple and print tracker
    workbooks also get their instrument summary."""
    parsed = parse_xlsx(path)
    kind = kind_of_workbook(parsed)
    if kind == "thermocouple":
        return thermocouple(path, parsed)
    if kind == "printtracker":
        return printtracker(path, parsed)
    return parsed
