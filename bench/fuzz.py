"""Fuzz every parser with seeded mutations of the real shared files; report crashes, time and memory per parser.

Seeds are the files of `../shared/archives` grouped by the format they parse as (csv, xlsx, xml (the AM Bench
XSDs), release_summary, nc, step, text, and the NERDm records), plus PDFs generated with reportlab (the shared set
holds none). Each input is a seed put through 1-4 mutations drawn from a seeded generator: bit flips, byte
insertion and deletion, truncation, duplicated chunks, splices of two seeds and interesting tokens, and per format
structural ones (XML/HTML: duplicated, nested, renamed and dropped elements, entities, attribute floods; CSV: rows,
delimiters, quotes, wide lines; JSON: type swaps, deleted keys, duplicated components, deep nesting; XLSX: any
member of the zip mutated and re-zipped, far-away cells, whole-sheet merges, bad string indices; PDF: content
streams rewritten, inflated into bombs, page trees and numbers damaged).

Every input runs through `voe.ingest.payloads.documents.parse_file` (NERDm: `voe.ingest.sources.nerdm.build.read_record` and
`NerdmBuilder(...).build()`, no database) in a worker process, with a per-input time limit (a worker that passes
it is killed and replaced) and an address-space limit. A crash is any exception escaping parse_file or build
(an InputError from the NERDm reader is its documented answer for bad input, not a crash). Peak memory is the
worker's peak RSS while the input ran (reset per input through /proc/self/clear_refs; it includes the ~130 MiB of
imports and what the worker kept from earlier inputs), and `grew` the most one input added to the RSS it started
from. `budget` counts the `parse.budget` defects the inputs produced.

    python bench/fuzz.py [--per-parser 10000] [--seed 0] [--timeout 60] [--jobs 2] [--parsers csv,pdf]
                         [--save DIR] [--journal FILE] [--json]

With --journal, every result is appended to FILE as it arrives and a rerun with the same FILE and settings goes
on where the last one stopped (the long profile takes hours on two cores).

Exit 1 on any crash or timeout; the inputs that failed are written to --save (default a temp folder) with the
parser, seed file and index that regenerate them.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import itertools
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
import traceback
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing import get_context
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "archives"
PARSERS = ("csv", "xlsx", "pdf", "xml", "release_summary", "nc", "step", "text", "nerdm")
MAX_INPUT = 24 << 20  # a mutation that grows an input past this is cut back to it
# issue 8: every input within 60 s and 1.5 GiB; an input that grows its worker by more is a failure, like a timeout
# (the worker's address-space cap turns a larger growth into a MemoryError that a parser may report as a defect)
MEMORY_AIM_MIB = 1536
MEMORY_LIMIT = 6 << 30  # address space per worker: a runaway becomes a MemoryError (a crash), not a dead machine


# -- seeds ---------------------------------------------------------------------------------------------------

@dataclass
class Seed:
    parser: str
    name: str  # the relpath parse_file sees (its extension matters)
    data: bytes


def _pdf_seeds() -> list[Seed]:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    from tests.pdf_pages import ruled_table

    out = []
    for variant in range(3):
        buf = io.BytesIO()
        c = canvas.Canvas(buf, pagesize=A4, invariant=1, pageCompression=1 if variant != 1 else 0)
        c.setFont("Helvetica", 11)
        c.drawString(72, 770, "AM Bench 2025 readme: laser power 285 W, spot 80 um")
        c.drawString(72, 752, "Specimen S01 1200000 cycles; S02 runout")
        ruled_table(c)
        c.showPage()
        if variant == 2:
            from PIL import Image
            from reportlab.lib.utils import ImageReader

            c.drawImage(ImageReader(Image.new("RGB", (20, 20), (90, 90, 90))), 72, 600, 100, 100)
            c.showPage()
        c.drawString(72, 770, f"page {2 + (variant == 2)}: notes")
        c.showPage()
        c.save()
        out.append(Seed("pdf", f"generated/readme-{variant}.pdf", buf.getvalue()))
    return out


def load_seeds(max_seed_bytes: int) -> dict[str, list[Seed]]:
    """The shared files by the parser their bytes go to (`voe.ingest.payloads.parsers.sniff`, as parse_file decides)."""
    from voe.ingest.payloads.parsers.sniff import sniff

    seeds: dict[str, list[Seed]] = {p: [] for p in PARSERS}
    for path in sorted(SHARED.rglob("*")):
        if not path.is_file() or path.stat().st_size > max(max_seed_bytes, 4 << 20):
            continue
        rel = path.relative_to(SHARED).as_posix()
        data = path.read_bytes()
        if path.name == "nerdm.json":
            fmt = "nerdm"
        elif rel.startswith("schemas/"):
            fmt = "xml" if path.suffix == ".xsd" else ""
        else:
            fmt = sniff(path, data[:8192])
        if fmt == "release_summary" and len(data) > 64 << 10:  # the real summaries are 0.8 MB: keep a head
            cut = data.rfind(b"</tr>", 0, 48 << 10)
            data = data[: cut + 5] + b"</table></td></tr></table></body></html>\n"
        if fmt in seeds and len(data) <= max_seed_bytes:
            seeds[fmt].append(Seed(fmt, rel, data))
    seeds["pdf"] = _pdf_seeds()
    return seeds


# -- mutations -----------------------------------------------------------------------------------------------

TOKENS = [b"\x00", b"\xff\xfe", b"\xef\xbb\xbf", b"99999999999999999999999999999", b"-1", b"1e309", b"NaN", b"-0",
          b"\r", b"\r\n", b"\n" * 40, b'"', b",", b";", b"<", b">", b"&", b"&amp;", b"&#0;", b"&#x110000;", b"]]>",
          b"%PDF-1.7", b"PK\x03\x04", b"\xed\xb2\x80", b"\\u0000", b"\\udc80", b"{", b"[", b"(", b")", b"#901=",
          b"ISO-10303-21;", b"HEADER;", b"ENDSEC;", b"obj", b"endobj", b"stream", b"endstream", b"/Length 99999999",
          b"/Count 2147483648", b"R", b"0 0 R", b"XFD1048576", b"A1:XFD1048576"]
NUMBER_RE = re.compile(rb"-?\d+(?:\.\d+)?")


def odd_value(rng: random.Random) -> bytes:
    """Issue 30's classes where a value belongs: NaN and infinities, numbers past a double, integers of thousands
    of digits (past Python's int-from-string limit), lone surrogates (UTF-8-encoded, or as JSON and OOXML escapes)."""
    return rng.choice([b"NaN", b"nan", b"-Infinity", b"inf", b"1e309", b"-1e-400", b"9" * rng.choice([400, 5000, 60_000]),
                       b"-" + b"1" * 4301, b"0x" + b"f" * 3000, b"\xed\xa0\x80", b"a\xed\xb2\x80b", b"\\udc80",
                       b"_xD800_", b"&#xD800;"])


def _pos(rng: random.Random, data: bytes) -> int:
    return rng.randrange(len(data) + 1)


def byte_mutation(rng: random.Random, data: bytes, others: list[bytes]) -> tuple[bytes, str]:
    op = rng.choice(["flip", "set", "insert", "delete", "truncate", "dup", "splice", "token", "number"])
    b = bytearray(data)
    if op == "flip" and b:
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
    elif op == "set" and b:
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif op == "insert":
        i = _pos(rng, data)
        b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    elif op == "delete" and b:
        i = rng.randrange(len(b))
        del b[i:i + rng.randint(1, max(1, min(4096, len(b) // 4)))]
    elif op == "truncate":
        b = b[: _pos(rng, data)]
    elif op == "dup" and b:
        i = rng.randrange(len(b))
        chunk = bytes(b[i:i + rng.randint(1, 4096)])
        times = rng.choice([1, 2, 16, 256, 4096])
        j = _pos(rng, data)
        b[j:j] = chunk * times
    elif op == "splice" and others:
        other = rng.choice(others)
        b = b[: _pos(rng, data)] + other[rng.randrange(len(other) + 1):]
    elif op == "token":
        i = _pos(rng, data)
        b[i:i] = rng.choice(TOKENS) * rng.choice([1, 1, 3, 1000])
    elif op == "number":
        nums = list(itertools.islice(NUMBER_RE.finditer(data), 100_000))
        if nums:
            m = rng.choice(nums)
            b[m.start():m.end()] = rng.choice([b"0", b"-1", b"2147483648", b"1e309", b"99999999999999999999",
                                                b"-99999999", b"1.5", b"0x10", b""])
    return bytes(b), op


SIMPLE_ELEMENT_RE = re.compile(rb"<([A-Za-z_][\w.:-]*)(?:\s[^<>]*)?>[^<]*</\1>")
TAG_RE = re.compile(rb"</?[A-Za-z_][\w.:-]*[^<>]*>")


def xml_mutation(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    op = rng.choice(["dup_element", "nest", "drop_tag", "rename_tag", "entities", "attributes", "long_text",
                     "namespace", "comment"])
    tags = list(TAG_RE.finditer(data[: 1 << 20]))
    at = rng.choice(tags).end() if tags else _pos(rng, data)
    if op == "dup_element":
        elements = list(SIMPLE_ELEMENT_RE.finditer(data[: 1 << 20]))
        if elements:
            m = rng.choice(elements)
            return data[: m.end()] + m.group() * rng.choice([2, 50, 2000, 20000]) + data[m.end():], op
    if op == "nest":
        depth = rng.choice([10, 70, 200, 300, 5000])
        return data[:at] + b"<n>" * depth + b"x" + b"</n>" * depth + data[at:], op
    if op == "drop_tag" and tags:
        m = rng.choice(tags)
        return data[: m.start()] + data[m.end():], op
    if op == "rename_tag" and tags:
        m = rng.choice(tags)
        return data[: m.start()] + re.sub(rb"^(</?)[\w.:-]+", rb"\1zz", m.group()) + data[m.end():], op
    if op == "entities":
        dtd = (b'<!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
               b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY x SYSTEM "file:///etc/passwd">]>')
        start = data.find(b"?>") + 2 if data.startswith(b"<?xml") else 0
        body = data[start:]
        return data[:start] + dtd + body[:at] + rng.choice([b"&c;", b"&x;", b"&undefined;", b"&#xD800;"]) + body[at:], op
    if op == "attributes":
        i = data.find(b">", at)
        if i > 0:
            # up to 100,000 attributes on one element (issue 30: quadratic fact building took minutes)
            count = rng.choice([5, 500, 5000, 100_000])
            attrs = b"".join(b' a%d="%s"' % (k, b"v" * rng.choice([1, 1000] if count < 100_000 else [1]))
                             for k in range(count))
            return data[:i] + attrs + data[i:], op
    if op == "long_text":
        return data[:at] + b"t" * rng.choice([1000, 40_000, 2 << 20, 11 << 20]) + data[at:], op
    if op == "namespace":
        i = data.find(b">", at)
        if i > 0:
            return data[:i] + rng.choice([b' xmlns="urn:x"', b' xmlns:p="urn:p"', b' xmlns:="bad"']) + data[i:], op
    return data[:at] + b"<!-- " + b"-" * rng.choice([0, 3]) + b" --><?pi x?>" + data[at:], "comment"


def _room(chunk: list[bytes]) -> int:
    """How many copies of `chunk` fit in MAX_INPUT (at least one): a line an earlier mutation made huge is not
    copied thousands of times (the mutator would need gigabytes before the input is cut back)."""
    return max(1, MAX_INPUT // max(1, sum(len(x) + 1 for x in chunk)))


def csv_mutation(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    lines = data.split(b"\n")
    op = rng.choice(["dup_rows", "drop_commas", "add_commas", "quote", "wide_line", "field", "bom", "newlines", "nul",
                     "values", "wide_header"])
    i = rng.randrange(len(lines))
    if op == "dup_rows":
        chunk = lines[i:i + rng.randint(1, 20)]
        lines[i:i] = chunk * min(rng.choice([2, 100, 5000]), _room(chunk))
    elif op == "drop_commas":
        lines[i] = lines[i].replace(b",", b"", rng.randint(1, 3))
    elif op == "add_commas":
        lines[i] = lines[i] + b"," * rng.choice([1, 5, 1000])
    elif op == "quote":
        lines[i] = b'"' + lines[i] + rng.choice([b"", b'""', b'"x'])
    elif op == "wide_line":
        lines[i] = rng.choice([b"x,", b",", b"1.5,", b'"a,b",']) * rng.choice([1000, 100_000, 600_000])
    elif op == "field":
        lines[i] = lines[i] + b"," + b"f" * rng.choice([200, 140_000, 1 << 20])
    elif op == "bom":
        return b"\xef\xbb\xbf" + data, op
    elif op == "newlines":
        return data.replace(b"\n", rng.choice([b"\r", b"\r\n", b"\n\n", b"\x0b"])), op
    elif op == "values":  # issue 30: odd numbers and surrogates in fields, a whole column of them at times
        fields = lines[i].split(b",")
        fields[rng.randrange(len(fields))] = odd_value(rng)
        lines[i] = b",".join(fields)
        value = odd_value(rng)
        if rng.random() < 0.3 and (len(value) + 1) * len(lines) <= MAX_INPUT:  # a column, not gigabytes of one
            lines = [line + b"," + value for line in lines]
    elif op == "wide_header":
        lines[0] = b",".join(b"c%d" % k for k in range(rng.choice([1000, 100_000])))
    else:
        lines[i] = lines[i] + b"\x00"
    return b"\n".join(lines), op


def line_mutation(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """NC programs, STEP files and text: lines duplicated, long, odd words and numbers."""
    lines = data.split(b"\n")
    op = rng.choice(["dup_lines", "long_line", "words", "params", "parens", "step", "empty_lines", "values"])
    i = rng.randrange(len(lines))
    if op == "dup_lines":
        chunk = lines[i:i + rng.randint(1, 30)]
        lines[i:i] = chunk * min(rng.choice([2, 100, 10000]), _room(chunk))
    elif op == "long_line":
        lines[i] = lines[i] + rng.choice([b"G1", b"X", b" ", b"(", b"a"]) * rng.choice([100, 50_000, 2 << 20])
    elif op == "words":
        lines[i] = b" ".join(rng.choice([b"G1", b"M3", b"G0.5", b"X-", b"T99999999999999999999", b"G-1", b"M"])
                             for _ in range(rng.randint(1, 50)))
    elif op == "params":
        lines[i] = rng.choice([b"#901=1e400 (E: LASER POWER [W])", b"#1=.", b"#99999999999999999999=1", b"/#5=-.5 ()"])
    elif op == "parens":
        lines[i] = lines[i] + rng.choice([b"(", b")", b"((a)", b"(E:)"])
    elif op == "step":
        lines[i:i] = [rng.choice([b"HEADER;", b"ENDSEC;", b"FILE_NAME('" + b"x" * 5000, b"FILE_SCHEMA(('a'));", b"#1=X;"])]
    elif op == "values":  # issue 30: a number replaced by NaN, a huge integer, a lone surrogate...
        found = list(NUMBER_RE.finditer(lines[i]))
        if found:
            m = rng.choice(found)
            lines[i] = lines[i][:m.start()] + odd_value(rng) + lines[i][m.end():]
        else:
            lines[i] = lines[i] + b" " + odd_value(rng)
    else:
        lines[i:i] = [b""] * rng.choice([10, 100_000])
    return b"\n".join(lines), op


def json_mutation(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return data, "json_unparsed"
    nodes: list[tuple[Any, Any]] = []  # (container, key)

    def walk(x: Any, depth: int) -> None:
        if depth > 12 or len(nodes) > 20000:
            return
        items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()
        for k, v in items:
            nodes.append((x, k))
            walk(v, depth + 1)

    walk(doc, 0)
    op = rng.choice(["type", "delete", "dup", "nest", "big", "keys", "surrogate", "number", "surrogate_key"])
    if not nodes:
        return data, "json_empty"
    parent, key = rng.choice(nodes)
    if op == "type":
        parent[key] = rng.choice([None, True, 0, -1, 10**30, 1.5e308, "", "x" * 10, [], {}, [1, "a"], {"x": 1}])
    elif op == "delete":
        del parent[key]
    elif op == "dup":
        comps = doc.get("components") if isinstance(doc, dict) else None
        if isinstance(comps, list) and comps:
            # at most about MAX_INPUT of copies: a component made huge by an earlier mutation is copied once
            count = min(rng.choice([1, 100, 3000]), max(1, MAX_INPUT * len(comps) // max(1, len(data))))
            comps.extend(rng.choice(comps) for _ in range(count))
    elif op == "nest":
        v: Any = parent[key]
        for _ in range(rng.choice([50, 600, 3000])):
            v = [v]
        parent[key] = v
    elif op == "big":
        parent[key] = "s" * rng.choice([1000, 100_000, 5 << 20])
    elif op == "keys":
        if isinstance(parent, dict):
            parent[rng.choice(["@id", "filepath", "size", "checksum", "describes", "@type", "mediaType", "valid"])] = \
                rng.choice([None, 7, "../../etc/passwd", "/abs/path", "a" * 5000, ["nrdp:DataFile"], {"hash": 5}])
    elif op == "number":  # issue 30: NaN, ±Infinity and integers of thousands of digits where a number belongs
        parent[key] = rng.choice([float("nan"), float("inf"), float("-inf"), 10**1000, -(10**4000), 2**64, -(2**63) - 1])
    elif op == "surrogate_key":
        if isinstance(parent, dict):
            parent["\udc80" + str(key)[:20]] = parent.pop(key)
    else:
        parent[key] = "\udc80" + str(parent[key])[:20]
    try:
        return json.dumps(doc, indent=rng.choice([None, 1, 2])).encode("utf-8", "surrogatepass"), op
    except (ValueError, RecursionError):
        return data, "json_undumpable"


def xlsx_mutation(rng: random.Random, data: bytes, others: list[bytes]) -> tuple[bytes, str]:
    if rng.random() < 0.15:
        return byte_mutation(rng, data, others)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            members = {n: z.read(n) for n in z.namelist()}
    except Exception:  # noqa: BLE001 - an earlier mutation broke the zip: mutate its bytes instead
        return byte_mutation(rng, data, others)
    sheets = [n for n in members if n.startswith("xl/worksheets/sheet")]
    op = rng.choice(["member", "member", "far_cell", "merge", "string_index", "drop", "cells", "values",
                     "cell_attributes", "many_strings"])
    if op == "many_strings":  # issue 44: a string table longer than the cells that may use it (5 million strings)
        name = next((n for n in members if "sharedStrings" in n), None)
        if name is not None:
            members[name] = (b'<?xml version="1.0"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/'
                             b'main">' + b"<si><t>x</t></si>" * 5_000_000 + b"</sst>")
            out = io.BytesIO()
            with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
                for n, body in members.items():
                    z.writestr(n, body)
            return out.getvalue(), op
    if op == "member" or not sheets:
        weights = [5 if n in sheets else 3 if "sharedStrings" in n else 1 for n in members]
        name = rng.choices(list(members), weights)[0]
        body, what = (xml_mutation(rng, members[name]) if rng.random() < 0.6 else
                      byte_mutation(rng, members[name], [members[name]]))
        members[name] = body
        op = f"member:{name}:{what}"
    elif op == "far_cell":
        name = rng.choice(sheets)
        members[name] = re.sub(rb'<c r="[A-Z]+\d+"', rng.choice([b'<c r="XFD1048576"', b'<c r="A1048576"',
                                                                   b'<c r="ZZZ1"', b'<c r="A0"', b'<c r="1A"']),
                               members[name], count=rng.choice([1, 5]))
    elif op == "merge":
        name = rng.choice(sheets)
        ranges = b"".join(b'<mergeCell ref="%s"/>' % rng.choice([b"A1:XFD1048576", b"A1:B2", b"B2:A1", b"A1"])
                          for _ in range(rng.choice([1, 3, 20000])))
        merge = b'<mergeCells count="1">' + ranges + b"</mergeCells>"
        members[name] = members[name].replace(b"</sheetData>", b"</sheetData>" + merge, 1)
    elif op == "string_index":
        name = rng.choice(sheets)
        members[name] = re.sub(rb'(t="s"[^>]*>\s*<v>)\d+', rb"\g<1>" + rng.choice([b"999999", b"-1", b"x"]),
                               members[name], count=rng.choice([1, 10]))
    elif op == "drop":
        del members[rng.choice(list(members))]
    elif op == "values":  # issue 30: cell values that are NaN, infinite, huge, or strings with lone surrogates
        name = rng.choice(sheets)
        members[name] = re.sub(rb"<v>[^<]*</v>", lambda m: b"<v>" + odd_value(rng) + b"</v>", members[name],
                               count=rng.choice([1, 10, 0]))
        if rng.random() < 0.5:
            value = odd_value(rng)
            members[name] = re.sub(rb'(<c r="[A-Z]+\d+")[^>]*>',
                                   lambda m: m.group(1) + b' t="inlineStr"><is><t>' + value + b'</t></is></c><c r="ZZ1">',
                                   members[name], count=1)
    elif op == "cell_attributes":  # issue 30: attribute floods on the elements the workbook reader walks
        name = rng.choice(sheets)
        flood = b"".join(b' a%d="%d"' % (k, k) for k in range(rng.choice([100, 10_000, 100_000])))
        tag = rng.choice([b"<c ", b"<row ", b"<worksheet "])
        members[name] = members[name].replace(tag, tag + flood + b" ", 1)
    else:
        name = rng.choice(sheets)
        row = b'<row r="%d">' + b"".join(b'<c r="%s%%d"><v>1</v></c>' % col for col in (b"A", b"B", b"C")) + b"</row>"
        rows = b"".join(row.replace(b"%d", str(r).encode()) for r in range(1, rng.choice([100, 50_000]) + 1))
        members[name] = re.sub(rb"<sheetData>.*</sheetData>|<sheetData/>", lambda m: b"<sheetData>" + rows + b"</sheetData>",
                               members[name], count=1, flags=re.S)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, body in members.items():
            z.writestr(name, body)
    return out.getvalue(), op


def _streams(data: bytes, limit: int = 200) -> list[tuple[int, int]]:
    """(start, end) of the first `limit` stream bodies: `stream` + EOL ... EOL `endstream` (found in linear time)."""
    out: list[tuple[int, int]] = []
    pos = 0
    while len(out) < limit:
        i = data.find(b"stream", pos)
        if i < 0:
            break
        start = i + 6
        if data[start:start + 2] == b"\r\n":
            start += 2
        elif data[start:start + 1] in (b"\n", b"\r"):
            start += 1
        else:
            pos = start
            continue
        j = data.find(b"endstream", start)
        if j < 0:
            break
        end = j - 2 if data[j - 2:j] == b"\r\n" else j - 1 if data[j - 1:j] in (b"\n", b"\r") else j
        out.append((start, max(start, end)))
        pos = j + 9
    return out
PDF_OPS = [b"q", b"Q", b"BT", b"ET", b"1 0 0 1 10 10 cm", b"/F1 12 Tf", b"(text) Tj", b"[(a) -20 (b)] TJ", b"0 0 m",
           b"100 100 l", b"S", b"0 0 10 10 re f", b"/Im1 Do", b"/Fm1 Do", b"1 g", b"/x g", b"T*", b"(\\377) '",
           b"0.5 0 0 0.5 0 0 cm", b"BI /W 1 /H 1 /BPC 8 /CS /G ID \x00 EI", b"[", b"]", b"<<", b">>", b"99999999999 w"]


def pdf_mutation(rng: random.Random, data: bytes, others: list[bytes]) -> tuple[bytes, str]:
    streams = _streams(data)
    op = rng.choice(["bytes", "bytes", "content", "content", "bomb", "numbers", "pages", "width_range", "cmap_range"])
    if op in ("width_range", "cmap_range") and rng.random() < 0.3:  # the generated file whole (issue 44's tests)
        from tests.ingest.payloads.hostile import cmap_bomb, widths_bomb

        return (widths_bomb() if op == "width_range" else cmap_bomb()), op + ":generated"
    if op == "width_range":  # issue 44: one CID width range of 2^31 (pdfminer expands it entry by entry)
        found = re.search(rb"/W\s*\[", data[: 16 << 20])
        if found:
            return data[: found.end()] + b"0 2147483647 500 " + data[found.end():], op
    if op == "cmap_range":  # issue 44: a ToUnicode bfrange over a whole 3-byte code space
        for a, b in streams:
            try:
                content, compressed = zlib.decompressobj().decompress(data[a:b], 16 << 20), True
            except zlib.error:
                content, compressed = data[a:b], False
            found = re.search(rb"beginbfrange\s*<[0-9A-Fa-f]+>\s*<[0-9A-Fa-f]+>", content)
            if found:
                new = content[: found.start()] + b"beginbfrange <000000> <FFFFFF>" + content[found.end():]
                body = zlib.compress(new) if compressed else new
                return data[:a] + body + data[b:], op
    if op == "content" and streams:
        a, b = rng.choice(streams)
        try:
            content = zlib.decompressobj().decompress(data[a:b], 64 << 20)
            compressed = True
        except zlib.error:
            content, compressed = data[a:b], False
        pieces = content.split(b"\n")
        for _ in range(rng.randint(1, 20)):
            i = rng.randrange(len(pieces) + 1)
            pieces[i:i] = [b" ".join(rng.choice(PDF_OPS) for _ in range(rng.randint(1, 8)))
                           * rng.choice([1, 1, 50, 20_000])]
        new = b"\n".join(pieces)
        body = zlib.compress(new) if compressed else new
        return data[:a] + body + data[b:], op
    if op == "bomb" and streams:
        a, b = rng.choice(streams)
        z = zlib.compressobj(9)
        fill = rng.choice([b"\0", b" ", b"q Q ", b"(x) Tj "]) * (1 << 18)
        size = rng.choice([1, 16, 300])  # MiB
        bomb = b"".join(z.compress(fill) for _ in range(size * 4 // max(1, len(fill) >> 18))) + z.flush()
        if rng.random() < 0.3:
            bomb = bomb[: len(bomb) // 2]  # a cut stream: pdfminer falls back to its byte-by-byte inflater
        return data[:a] + bomb + data[b:], op + f":{size}MiB"
    if op == "numbers":
        nums = list(itertools.islice(NUMBER_RE.finditer(data), 100_000))
        if nums:
            b = bytearray(data)
            for m in sorted(rng.sample(nums, min(len(nums), rng.randint(1, 5))), key=lambda m: -m.start()):
                b[m.start():m.end()] = rng.choice([b"0", b"-1", b"99999999999", b"1e309", b"3.5", b"2147483648"])
            return bytes(b), op
    if op == "pages":
        kids = re.search(rb"/Kids\s*\[([^\]]{0,10000})\]", data[: 1 << 20])
        if kids:
            refs = kids.group(1) * rng.choice([2, 100, 5000])
            return data[: kids.start(1)] + refs + data[kids.end(1):], op
    return byte_mutation(rng, data, others)


def mutate(parser: str, data: bytes, others: list[bytes], rng: random.Random,
           max_input: int = MAX_INPUT) -> tuple[bytes, list[str]]:
    ops = []
    for _ in range(rng.choice([1, 1, 1, 2, 2, 3, 4])):
        if parser == "xlsx":
            data, op = xlsx_mutation(rng, data, others)
        elif parser == "pdf":
            data, op = pdf_mutation(rng, data, others)
        elif rng.random() < 0.45:
            data, op = byte_mutation(rng, data, others)
        elif parser in ("xml", "release_summary"):
            data, op = xml_mutation(rng, data)
        elif parser == "csv":
            data, op = csv_mutation(rng, data)
        elif parser == "nerdm":
            data, op = json_mutation(rng, data)
        else:
            data, op = line_mutation(rng, data)
        ops.append(op)
        if len(data) > max_input:
            data = data[:max_input]
            ops.append("cut")
    return data, ops


def make_input(seeds: list[Seed], parser: str, seed: int, index: int,
               max_input: int = MAX_INPUT) -> tuple[Seed, bytes, list[str]]:
    rng = random.Random(f"{seed}:{parser}:{index}")
    base = rng.choice(seeds)
    data, ops = mutate(parser, base.data, [s.data for s in seeds], rng, max_input)
    return base, data, ops


# -- the worker ----------------------------------------------------------------------------------------------

def _memory_kib(field: str = "VmHWM") -> int:
    """The worker's peak (VmHWM) or current (VmRSS) resident memory."""
    try:
        with open("/proc/self/status") as fh:
            m = re.search(field + r":\s+(\d+)", fh.read())
        return int(m.group(1)) if m else 0
    except OSError:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def _run_one(parser: str, path: Path, name: str) -> dict[str, Any]:
    if parser == "nerdm":
        from voe.errors import InputError
        from voe.ingest.sources.nerdm.build import NerdmBuilder, read_record

        try:
            doc, raw = read_record(path)
            rg = NerdmBuilder(path, raw, doc, False).build()
        except InputError as exc:
            return {"outcome": "input_error", "detail": str(exc)[:200]}
        return {"outcome": "ok", "facts": rg.facts, "defects": dict(rg.defects)}
    from voe.ingest.payloads.documents import parse_file

    parsed = parse_file(path, name)
    if parsed is None:
        return {"outcome": "ok", "facts": 0, "defects": {}, "format": None}
    if parsed.summary.get("parser_bug"):  # a bug hidden as a defect is still a bug (issue 30)
        return {"outcome": "parser_bug", "error": f"parser bug: {parsed.summary['parser_bug']}", "format": parsed.format}
    return {"outcome": "ok", "facts": len(parsed.facts), "format": parsed.format,
            "defects": dict(Counter(d.rule for d in parsed.defects))}


def worker(conn: Connection, seeds: dict[str, list[Seed]], seed: int, max_input: int, limits: dict[str, str]) -> None:
    import logging
    import resource

    os.environ.update(limits)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    os.chdir(REPO)
    sys.path.insert(0, str(REPO))
    logging.disable(logging.CRITICAL)  # the parsers' warnings are not what is measured here
    import voe.ingest.payloads.documents  # noqa: F401 - warm the imports before the first input is timed
    import voe.ingest.payloads.parsers.instruments  # noqa: F401
    import voe.ingest.payloads.parsers.pdf  # noqa: F401
    import voe.ingest.sources.nerdm.build  # noqa: F401

    tmp = Path(tempfile.mkdtemp(prefix="voe-fuzz-"))
    while True:
        task = conn.recv()
        if task is None:
            break
        parser, index = task
        base, data, ops = make_input(seeds[parser], parser, seed, index, max_input)
        folder = tmp / f"{parser}-{index}"
        folder.mkdir()
        path = folder / Path(base.name).name
        path.write_bytes(data)
        _reset_peak()
        before = _memory_kib("VmRSS")
        start = time.perf_counter()
        try:
            result = _run_one(parser, path, base.name)
        except BaseException as exc:  # noqa: BLE001 - what the fuzzer looks for
            result = {"outcome": "crash", "error": f"{type(exc).__name__}: {str(exc)[:300]}",
                      "traceback": traceback.format_exc()[-3000:]}
        peak = _memory_kib()
        result.update(seconds=time.perf_counter() - start, peak_kib=peak, grew_kib=max(0, peak - before),
                      size=len(data), ops=ops, seed_file=base.name)
        for p in folder.iterdir():
            p.unlink()
        folder.rmdir()
        conn.send(result)


# -- the driver ----------------------------------------------------------------------------------------------

@dataclass
class Stats:
    parser: str
    inputs: int = 0
    crashes: list[dict[str, Any]] = field(default_factory=list)
    timeouts: list[dict[str, Any]] = field(default_factory=list)
    over_memory: list[dict[str, Any]] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    max_seconds: float = 0.0
    slowest: str = ""
    peak_mib: float = 0.0
    grew_mib: float = 0.0
    heaviest: str = ""
    outcomes: Counter[str] = field(default_factory=Counter)
    defects: Counter[str] = field(default_factory=Counter)
    # per mutation class (an op's name before its first ':'): inputs, slowest, most grown, what did not end ok
    classes: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, index: int, r: dict[str, Any]) -> None:
        self.inputs += 1
        for op in {str(o).split(":", 1)[0] for o in r.get("ops") or []}:
            row = self.classes.setdefault(op, {"inputs": 0, "max_seconds": 0.0, "grew_mib": 0.0, "not_ok": 0})
            row["inputs"] += 1
            row["max_seconds"] = round(max(row["max_seconds"], float(r.get("seconds", 0.0))), 3)
            row["grew_mib"] = round(max(row["grew_mib"], r.get("grew_kib", 0) / 1024), 1)
            row["not_ok"] += r["outcome"] not in ("ok", "input_error")  # a crash, a parser bug, a timeout
        self.outcomes[r["outcome"]] += 1
        where = f"#{index} {r.get('seed_file')} {r.get('ops')} ({r.get('size')} B)"
        if r["outcome"] in ("crash", "parser_bug"):
            self.crashes.append({"index": index, **r})
        if r["outcome"] == "timeout":
            self.timeouts.append({"index": index, **r})
        self.defects.update(r.get("defects") or {})
        s = float(r.get("seconds", 0.0))
        self.seconds.append(s)
        if s >= self.max_seconds:
            self.max_seconds, self.slowest = s, where
        self.peak_mib = max(self.peak_mib, r.get("peak_kib", 0) / 1024)
        grew = r.get("grew_kib", 0) / 1024
        if grew > MEMORY_AIM_MIB:
            self.over_memory.append({"index": index, **r, "error": f"grew the worker by {grew:.0f} MiB"})
        if grew >= self.grew_mib:
            self.grew_mib, self.heaviest = grew, where

    def summary(self) -> dict[str, Any]:
        return {"parser": self.parser, "inputs": self.inputs, "total_seconds": round(sum(self.seconds), 1),
                "crashes": len(self.crashes), "parser_bugs": self.outcomes.get("parser_bug", 0),
                "timeouts": len(self.timeouts), "over_memory": len(self.over_memory), "max_seconds": round(self.max_seconds, 3),
                "median_seconds": round(statistics.median(self.seconds), 4) if self.seconds else 0.0,
                "peak_mib": round(self.peak_mib, 1), "grew_mib": round(self.grew_mib, 1), "slowest": self.slowest,
                "heaviest": self.heaviest,
                "outcomes": dict(self.outcomes), "budget_defects": self.defects.get("parse.budget", 0),
                "by_class": dict(sorted(self.classes.items()))}


class Pool:
    """Worker processes, each running one input at a time; one that passes the time limit is killed and replaced."""

    def __init__(self, jobs: int, seeds: dict[str, list[Seed]], seed: int, max_input: int,
                 limits: dict[str, str]) -> None:
        self.ctx = get_context("spawn")
        self.seeds, self.seed, self.max_input, self.limits = seeds, seed, max_input, limits
        self.workers: list[dict[str, Any]] = [self._start() for _ in range(jobs)]

    def _start(self) -> dict[str, Any]:
        parent, child = self.ctx.Pipe()
        proc = self.ctx.Process(target=worker, args=(child, self.seeds, self.seed, self.max_input, self.limits),
                                daemon=True)
        proc.start()
        child.close()
        return {"proc": proc, "conn": parent, "task": None, "since": 0.0}

    def run(self, tasks: list[tuple[str, int]], timeout: float,
            on_result: Callable[[str, int, dict[str, Any]], None]) -> None:
        todo = list(reversed(tasks))
        while todo or any(w["task"] for w in self.workers):
            for w in self.workers:
                if w["task"] is None and todo:
                    w["task"] = todo.pop()
                    w["since"] = time.monotonic()
                    w["conn"].send(w["task"])
            busy = [w for w in self.workers if w["task"]]
            ready = wait([w["conn"] for w in busy], timeout=0.5)
            now = time.monotonic()
            for i, w in enumerate(self.workers):
                if not w["task"]:
                    continue
                parser, index = w["task"]
                if w["conn"] in ready:
                    try:
                        result = w["conn"].recv()
                    except EOFError:  # the worker died (a hard crash in C code)
                        result = {"outcome": "crash", "error": f"worker died (exit {w['proc'].exitcode})",
                                  "seconds": now - w["since"]}
                        self._replace(i)
                    self.workers[i]["task"] = None
                    on_result(parser, index, result)
                elif now - w["since"] > timeout:
                    self._replace(i)
                    on_result(parser, index, {"outcome": "timeout", "seconds": now - w["since"],
                                              "error": f"no answer in {timeout} s"})

    def _replace(self, i: int) -> None:
        old = self.workers[i]
        old["proc"].kill()
        old["proc"].join(5)
        self.workers[i] = self._start()

    def close(self) -> None:
        for w in self.workers:
            try:
                w["conn"].send(None)
            except (BrokenPipeError, OSError):
                pass
        for w in self.workers:
            w["proc"].join(10)
            if w["proc"].is_alive():
                w["proc"].kill()


def run(per_parser: int, seed: int = 0, timeout: float = 60.0, jobs: int = 2, parsers: tuple[str, ...] = PARSERS,
        max_seed_bytes: int = 1 << 20, save: Path | None = None, progress: bool = False,
        max_input: int = MAX_INPUT, limits: dict[str, str] | None = None,
        journal: Path | None = None) -> dict[str, Any]:
    """Fuzz `per_parser` inputs for each parser; the summary per parser, and every crash and timeout. `max_input`
    caps the size of a mutated input and `limits` sets `VOE_LIMIT_*` in the workers (the quick profile keeps inputs
    and budgets small); by default the workers parse under the default budgets. With a `journal` (JSON Lines, one
    result per input as it arrives) an interrupted run goes on where it stopped: inputs already in the journal are
    not run again, their results count (an input's bytes depend only on the seed and its index)."""
    sys.path.insert(0, str(REPO))
    seeds = load_seeds(max_seed_bytes)
    stats = {p: Stats(p) for p in parsers if seeds.get(p)}
    tasks = [(p, i) for i in range(per_parser) for p in stats]  # interleaved: a slow parser does not starve the rest
    settings = {"seed": seed, "timeout": timeout, "max_input": max_input, "limits": dict(limits or {}),
                "max_seed_bytes": max_seed_bytes, "code": code_version(tuple(stats), seeds)}
    resumed = _read_journal(journal, settings, stats, per_parser) if journal is not None else set()
    tasks = [t for t in tasks if t not in resumed]
    pool = Pool(jobs, {p: seeds[p] for p in stats}, seed, max_input, dict(limits or {}))
    done = [0]
    start = time.monotonic()

    if journal is not None and journal.stat().st_size and not journal.read_bytes().endswith(b"\n"):
        with journal.open("rb+") as fh:  # a line cut by a kill: drop it (its input runs again)
            data = fh.read()
            fh.truncate(data.rfind(b"\n") + 1)
    log = journal.open("a") if journal is not None else None

    def on_result(parser: str, index: int, result: dict[str, Any]) -> None:
        if "seed_file" not in result:  # the worker was killed: say what the input was
            base, data, ops = make_input(seeds[parser], parser, seed, index, max_input)
            result.update(seed_file=base.name, ops=ops, size=len(data))
        stats[parser].add(index, result)
        if log is not None:
            log.write(json.dumps({"parser": parser, "index": index, "result": result}, default=str) + "\n")
            log.flush()
        if result["outcome"] in ("crash", "timeout") and save is not None:
            base, data, ops = make_input(seeds[parser], parser, seed, index, max_input)
            save.mkdir(parents=True, exist_ok=True)
            (save / f"{parser}-{index}-{Path(base.name).name}").write_bytes(data)
        done[0] += 1
        if progress and done[0] % 200 == 0:
            print(f"  {done[0]}/{len(tasks)} inputs, {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)

    try:
        pool.run(tasks, timeout, on_result)
    finally:
        pool.close()
        if log is not None:
            log.close()
    return {"seed": seed, "per_parser": per_parser, "timeout": timeout, "jobs": jobs, "max_input": max_input,
            "limits": dict(limits or {}),
            "seconds": round(time.monotonic() - start, 1), "resumed_inputs": len(resumed),
            "seeds": {p: [s.name for s in seeds[p]] for p in stats},
            "parsers": [stats[p].summary() for p in stats],
            "failures": [{"parser": p, **{k: v for k, v in f.items() if k != "defects"}}
                         for p in stats for f in stats[p].crashes + stats[p].timeouts + stats[p].over_memory]}


def code_version(parsers: tuple[str, ...], seeds: dict[str, list[Seed]]) -> str:
    """What an input's result depends on besides its index: the code it runs through (the parsers, dispatch and
    budgets; for nerdm the whole of ingest/), this harness (its mutations), the parsing libraries' versions
    and the seed files. A journal written under another of these is not resumed."""
    sys.path.insert(0, str(REPO))
    from voe.ingest.builder import parser_versions

    ingest = REPO / "ingest"
    files = sorted(ingest.rglob("*.py")) if "nerdm" in parsers else sorted(
        [*(ingest / "payloads" / "parsers").rglob("*.py"), ingest / "payloads" / "documents.py",
         ingest / "payloads" / "limits.py"])
    digest = hashlib.sha256(parser_versions())
    for path in [*files, Path(__file__).resolve()]:
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
    for parser in sorted(seeds):
        for seed in seeds[parser]:
            digest.update(f"{parser}:{seed.name}".encode() + hashlib.sha256(seed.data).digest())
    return digest.hexdigest()[:16]


def _read_journal(journal: Path, settings: dict[str, Any], stats: dict[str, Stats],
                  per_parser: int) -> set[tuple[str, int]]:
    """The inputs a journal already holds, added to `stats`; a journal of other settings is refused."""
    done: set[tuple[str, int]] = set()
    if not journal.exists():
        journal.write_text(json.dumps({"settings": settings}) + "\n")
        return done
    with journal.open() as fh:
        first = json.loads(fh.readline() or "{}")
        if first.get("settings") != settings:
            sys.exit(f"{journal}: written with other settings ({first.get('settings')}); use another journal")
        for line in fh:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:  # the last line of a run killed mid-write
                continue
            key = (row["parser"], int(row["index"]))
            if key[0] in stats and key[1] < per_parser and key not in done:
                done.add(key)
                stats[key[0]].add(key[1], row["result"])
    return done


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-parser", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds one input may take")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--parsers", default=",".join(PARSERS))
    ap.add_argument("--max-seed-bytes", type=int, default=1 << 20, help="seeds larger than this are left out")
    ap.add_argument("--max-input", type=int, default=MAX_INPUT, help="mutated inputs are cut to this many bytes")
    ap.add_argument("--save", type=Path, default=Path(tempfile.gettempdir()) / "voe-fuzz-failures")
    ap.add_argument("--journal", type=Path, help="JSON Lines of every result; a rerun with it resumes where it stopped")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    parsers = tuple(p for p in args.parsers.split(",") if p)
    unknown = set(parsers) - set(PARSERS)
    if unknown:
        ap.error(f"unknown parser(s) {sorted(unknown)}; known: {', '.join(PARSERS)}")
    report = run(args.per_parser, args.seed, args.timeout, args.jobs, parsers, args.max_seed_bytes, args.save,
                 progress=not args.json, max_input=args.max_input, journal=args.journal)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"seed {report['seed']}, {report['per_parser']} inputs per parser, {report['jobs']} workers, "
              f"limit {report['timeout']} s per input, {report['seconds']} s in all"
              + (f" ({report['resumed_inputs']} inputs from the journal)" if report["resumed_inputs"] else ""))
        print(f"{'parser':<16}{'inputs':>8}{'crashes':>9}{'timeouts':>10}{'>1.5 GiB':>10}{'max s':>9}{'median s':>10}"
              f"{'peak MiB':>10}{'grew MiB':>10}{'budget':>8}")
        for s in report["parsers"]:
            print(f"{s['parser']:<16}{s['inputs']:>8}{s['crashes']:>9}{s['timeouts']:>10}{s['over_memory']:>10}"
                  f"{s['max_seconds']:>9.2f}{s['median_seconds']:>10.3f}{s['peak_mib']:>10.0f}{s['grew_mib']:>10.0f}"
                  f"{s['budget_defects']:>8}")
        for s in report["parsers"]:
            print(f"  {s['parser']}: slowest {s['slowest']}; heaviest {s['heaviest']}")
        for f in report["failures"][:20]:
            print(f"FAIL {f['parser']} #{f['index']} {f.get('seed_file')} {f.get('ops')}: {f.get('error')}")
            if f.get("traceback"):
                print("    " + f["traceback"].strip().replace("\n", "\n    ")[-1500:])
        if report["failures"]:
            print(f"{len(report['failures'])} failing input(s) written to {args.save}")
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
