"""Machine programs and CAD headers: NC/EIA/G-code (line-located commands and parameters) and the HEADER
section of ISO 10303-21 (STEP) files. Plain text files get one fact per non-empty line."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path

from voe.ingest.payloads.limits import Meter
from voe.ingest.payloads.parsers.encoding import decode_text
from voe.ingest.payloads.parsers.model import Fact, FileDefect, Parsed, Role
from voe.ingest.payloads.parsers.registry import Probe, parser
from voe.ingest.payloads.parsers.tabular import split_unit

COMMENT_RE = re.compile(r"\(([^()]*)\)")
# possessive (`*+`): the same matches, without backtracking quadratically over a long run of spaces or digits
PARAM_RE = re.compile(r"^\s*+/?\d*+\s*+#(?P<var>\d++)\s*+=\s*+(?P<value>-?(?:\d++(?:\.\d*+)?+|\.\d++))(?![\d.])")
WORD_RE = re.compile(r"(?<![A-Z#])([GMTFSXYZIJKRPQHDE])(-?\d+(?:\.\d*)?)")


def _lines(data: bytes) -> list[str]:
    return decode_text(data).splitlines()


# what str.splitlines splits at
LINE_BREAK_RE = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def iter_lines(text: str) -> Iterator[str]:
    """text.splitlines(), one line at a time (a file of a million lines is not held as a list)."""
    pos = 0
    for m in LINE_BREAK_RE.finditer(text):
        yield text[pos:m.start()]
        pos = m.end()
    if pos < len(text):
        yield text[pos:]


def count_lines(text: str) -> int:
    """len(text.splitlines()) without building the list."""
    breaks = sum(text.count(c) for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029") - text.count("\r\n")
    return breaks + (1 if text and not LINE_BREAK_RE.fullmatch(text[-2:] if text.endswith("\r\n") else text[-1]) else 0)


def _stopped(parsed: Parsed, n: int) -> None:
    last = parsed.facts[-1].locator if parsed.facts else "the start"
    parsed.defects.append(FileDefect(
        "parse.budget", f"stopped after {len(parsed.facts)} facts (budget facts_per_file); lines after {last} are not "
        "located", f"L{n}"))


def _looks_nc(p: Probe) -> bool:
    """G-code / EIA: mostly lines of G/M/T/N/#/O words or (comments)."""
    lines = p.lines
    if not lines:
        return False
    codes = sum(1 for ln in lines if ln.lstrip("/0123456789 ").startswith(("G", "M", "N", "#", "(", "T", "O", "%", ";")))
    gwords = sum(1 for ln in lines if any(tok[:1] in "GM" and tok[1:2].isdigit() for tok in ln.split()))
    return codes / len(lines) > 0.7 and gwords >= 3


@parser("nc", order=90, detect=_looks_nc, extensions=(".eia", ".nc", ".gcode"))
def _nc_file(path: Path) -> Parsed:
    """NC / EIA / G-code programs: line-located commands, parameters and comments."""
    return parse_nc(path.read_bytes())


def parse_nc(data: bytes) -> Parsed:
    """Every line with a command or parameter becomes a fact; `#901=3025. (E: LASER POWER [W])` becomes
    the parameter `LASER POWER` = 3025 W, so later steps can cite the exact program line."""
    parsed = Parsed(format="nc", role=Role.PROCESS_RECORD)
    commands: dict[str, int] = {}
    params = []
    text = decode_text(data)
    meter = Meter()
    room = meter.room("facts_per_file")
    words_left = meter.room("cells_per_workbook")
    width = meter.limit("field_length")
    for n, line in enumerate(iter_lines(text), start=1):
        if not line.strip():
            continue
        head = line[:width]  # a longer line is read up to field_length (its fact text is cut there too)
        comments = COMMENT_RE.findall(head)
        code = COMMENT_RE.sub(" ", head)
        words = [f"{a}{b}" for a, b in WORD_RE.findall(code.upper())]
        m = PARAM_RE.match(head)
        if not m and not words and not comments:
            continue
        words_left -= len(words)
        if room == 0 or words_left < 0:
            if room == 0:
                _stopped(parsed, n)
            else:
                parsed.defects.append(FileDefect(
                    "parse.budget", f"stopped after {meter.limit('cells_per_workbook')} words (budget "
                    f"cells_per_workbook); line L{n} and later lines are not located", f"L{n}"))
            break
        room -= 1
        for w in words:
            if w[0] in "GM":
                number = float(w[1:]) if w[1:].replace(".", "").lstrip("-").isdigit() else None
                key = w[0] + str(int(number)) if number is not None and math.isfinite(number) else w
                commands[key] = commands.get(key, 0) + 1
        name = unit = None
        value: object = None
        if m:
            value = float(m.group("value"))
            label = comments[0].split(":", 1)[-1].strip() if comments else f"#{m.group('var')}"
            name, unit = split_unit(label)
            params.append({"variable": f"#{m.group('var')}", "name": name, "value": value, "unit": unit, "line": n})
        parsed.facts.append(Fact("line", f"L{n}", line, name, unit, value, Role.PROCESS_RECORD,
                                 {"line": n, "words": words, "comment": " ".join(c.strip() for c in comments) or None}))
    first_comment = next((f.extra["comment"] for f in parsed.facts if f.extra.get("comment")), None)
    parsed.summary = {"program": first_comment, "lines": count_lines(text), "parameters": params,
                      "command_counts": dict(sorted(commands.items()))}
    return parsed


# a quoted STEP string ('' is a quote inside it); possessive, so a header full of quotes is read in linear time
# (an unterminated string no longer ends at an earlier doubled quote)
STRING_RE = re.compile(r"'((?:[^']++|'')*+)'")
HEADER_ENTITY_RE = re.compile(r"^\s*(FILE_DESCRIPTION|FILE_NAME|FILE_SCHEMA)\s*\(", re.M)


@parser("step", order=30, detect=lambda p: p.text_head.startswith(b"ISO-10303-21;"), extensions=(".step", ".stp"))
def _step_file(path: Path) -> Parsed:
    """STEP (ISO 10303-21): the HEADER section's description, file name and schema."""
    return parse_step(path.read_bytes())


def parse_step(data: bytes) -> Parsed:
    parsed = Parsed(format="step", role=Role.PROCESS_RECORD)
    lines = _lines(data)
    try:
        start = next(i for i, ln in enumerate(lines) if ln.strip() == "HEADER;")
        end = next(i for i in range(start, len(lines)) if lines[i].strip() == "ENDSEC;")
    except StopIteration:
        parsed.defects.append(FileDefect("step.header", "no HEADER; ... ENDSEC; section (not ISO 10303-21?)"))
        return parsed
    entity_start = None
    buffer: list[str] = []
    header: dict[str, list[str]] = {}
    for i in range(start + 1, end):
        line = lines[i]
        if HEADER_ENTITY_RE.match(line):
            entity_start, buffer = i, []
        if entity_start is None:
            continue
        buffer.append(line.strip())
        if line.rstrip().endswith(";"):
            text = " ".join(buffer)
            name = text.split("(", 1)[0].strip()
            values = STRING_RE.findall(text)
            header[name] = values
            span = "\n".join(lines[entity_start : i + 1])
            parsed.facts.append(Fact("step_header", f"L{entity_start + 1}-L{i + 1}", span, name.lower(), None,
                                     values, Role.PROCESS_RECORD, {"line": entity_start + 1, "end_line": i + 1}))
            entity_start = None
    fn = header.get("FILE_NAME", [])
    parsed.summary = {
        "description": header.get("FILE_DESCRIPTION", [None])[0], "file_name": fn[0] if fn else None,
        "timestamp": fn[1] if len(fn) > 1 else None,
        "preprocessor": fn[-3] if len(fn) >= 3 else None, "originating_system": fn[-2] if len(fn) >= 2 else None,
        "schema": header.get("FILE_SCHEMA", [None])[0],
        "data_entities": sum(1 for ln in lines[end:] if ln.lstrip().startswith("#")),
    }
    return parsed


@parser("text", order=1000, detect=None)
def _text_file(path: Path) -> Parsed:
    """Plain text (build logs, notes, anything not more specific): one fact per non-empty line."""
    return parse_text(path.read_bytes())


def parse_text(data: bytes, role: Role = Role.SOURCE_DOCUMENT) -> Parsed:
    parsed = Parsed(format="text", role=role)
    text = decode_text(data)
    room = Meter().room("facts_per_file")
    for n, line in enumerate(iter_lines(text), start=1):
        if line.strip():
            if room == 0:
                _stopped(parsed, n)
                break
            room -= 1
            parsed.facts.append(Fact("line", f"L{n}", line, role=role, extra={"line": n}))
    parsed.summary = {"lines": count_lines(text)}
    return parsed
