"""AM Bench release file summaries (`release-file-change-summary-A-to-B.html`): an HTML table listing each
file basename with one inner row per release (Version, File Hash = SHA-1, File Size), followed by the
generator's lists of files that changed, are new, or remained unchanged.

One fact per (basename, release) row, located at the source line of its inner `<tr>`. The summary says
what release B did to release A, computed from the table rows alone:

- removed: a row for A (or an older release) but none for B, unless B lists a new file whose name equals
  it with `-` and `_` taken as the same character (case-insensitive): then it is renamed to that file
  (release 2.0.0 renamed `AMB2022-Composition-...` to `AMB2022_Composition_...`);
- added: a row for B but none for A, and not a rename target;
- changed: rows for A and B with different SHA-1s; unchanged: the same SHA-1.

A table may hold rows for releases after B (the 1.0.0-to-2.0.0 summary lists 2.1.0 too); those rows are
facts but do not decide what B did. The bottom lists are counted into `summary["listed"]` as the HTML
states them: the generator compares a file's whole history, and its "new" list holds every file it did
not call changed (so it contains the unchanged list, and files present in a single release).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lxml import etree

from voe.ingest.payloads.limits import Meter
from voe.ingest.payloads.parsers.encoding import text_encoding
from voe.ingest.payloads.parsers.model import Fact, Parsed, Role
from voe.ingest.payloads.parsers.registry import Probe, parser

# An AM Bench release file summary: an HTML document whose <h1> reads "Release File Summary: A to B".
RELEASE_TITLE_RE = re.compile(r"Release File Summary: (\d+(?:\.\d+)*) to (\d+(?:\.\d+)*)")
RELEASE_HEAD_RE = re.compile(rb"(?i:<!DOCTYPE html[^>]*>\s*)?(?i:<html)[\s>].*?(?i:<h1>)\s*Release File Summary: "
                             rb"\d+(?:\.\d+)* to \d+(?:\.\d+)*\s*(?i:</h1>)", re.S)


@dataclass(frozen=True)
class ReleaseRow:
    basename: str
    release: str
    sha1: str
    size: int | None
    line: int


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version))


def rename_key(basename: str) -> str:
    return basename.lower().replace("-", "_")


def _is_release_summary(p: Probe) -> bool:
    return RELEASE_HEAD_RE.match(p.text_head) is not None


def _widest_tag(data: bytes, limit: int) -> int:
    """The most attributes (counted as `=` signs) in one tag, among the tags long enough to hold more than
    `limit` of them (each takes at least two bytes), so the scan costs one regex pass."""
    long_tags = re.finditer(rb"<[^<>]{%d,}" % (2 * limit), data)
    return max((m.group().count(b"=") for m in long_tags), default=0)


@parser("release_summary", order=40, detect=_is_release_summary, libraries=("lxml",))
def _release_file(path: Path) -> Parsed:
    """AM Bench release file summary (HTML): removed, renamed, changed and new files between two releases."""
    return parse_release_summary(path.read_bytes())


def parse_release_summary(data: bytes) -> Parsed:
    parsed = Parsed(format="release_summary", role=Role.SOURCE_DOCUMENT)
    meter = Meter()
    meter.take("xml_elements", data.count(b"<") - data.count(b"</"), "nodes of the HTML document (not parsed)")
    # libxml2's HTML parser checks each attribute against the element's earlier ones: quadratic in a flood
    meter.take("xml_attributes", _widest_tag(data, meter.limit("xml_attributes")),
               "attributes of one HTML element (not parsed)")
    parser = etree.HTMLParser(encoding=text_encoding(data), no_network=True, huge_tree=False,
                              remove_comments=True, remove_pis=True)
    root = etree.fromstring(data, parser)
    if root is None:
        raise ValueError("empty HTML document")
    title = next((m for h1 in root.iter("h1") if (m := RELEASE_TITLE_RE.fullmatch(_text(h1)))), None)
    if title is None:
        raise ValueError("no <h1> 'Release File Summary: A to B'")
    old, new = title.group(1), title.group(2)
    table = _file_table(root)
    if table is None:
        raise ValueError("no table with a 'File Basename' column")
    rows: dict[str, list[ReleaseRow]] = {}
    used: dict[int, int] = {}
    for tr in _rows(table):
        cells = tr.findall("td")
        inner = cells[1].find(".//table") if len(cells) >= 2 else None
        if inner is None:
            continue
        basename = _text(cells[0])
        for itr in _rows(inner):
            vals = [_text(td) for td in itr.findall("td")]
            if len(vals) < 3 or not basename:
                continue
            line = int(itr.sourceline or 0)
            used[line] = used.get(line, 0) + 1
            locator = f"L{line}" if used[line] == 1 else f"L{line}.{used[line]}"
            size = int(vals[2]) if vals[2].isdigit() else None
            row = ReleaseRow(basename, vals[0], vals[1].lower(), size, line)
            rows.setdefault(basename, []).append(row)
            parsed.facts.append(Fact(
                "html_row", locator, f"{basename} | {vals[0]} | {vals[1]} | {vals[2]}", basename, None, row.sha1,
                Role.SOURCE_DOCUMENT,
                {"line": line, "file": basename, "release": row.release, "sha1": row.sha1, "size": size}))
    parsed.summary = {"from": old, "to": new, "files": len(rows), **changes(rows, old, new),
                      "releases": sorted({r.release for rs in rows.values() for r in rs}, key=version_key),
                      "listed": _listed(root)}
    return parsed


def changes(rows: dict[str, list[ReleaseRow]], old: str, new: str) -> dict[str, Any]:
    """removed / renamed / added / changed from release `old` to `new`, and how many files are unchanged or
    listed only for releases after `new` (`later`)."""
    removed: list[str] = []
    added: list[str] = []
    changed: list[str] = []
    unchanged = later = 0
    for name, rs in sorted(rows.items()):
        by_release = {r.release: r for r in rs}
        if new not in by_release:
            if any(version_key(r.release) <= version_key(old) for r in rs):
                removed.append(name)
            else:
                later += 1  # listed only for releases after `new`
        elif old not in by_release:
            added.append(name)
        elif by_release[old].sha1 != by_release[new].sha1:
            changed.append(name)
        else:
            unchanged += 1
    targets: dict[str, str] = {}
    for name in added:
        targets.setdefault(rename_key(name), name)
    renamed: dict[str, str] = {}
    for name in removed:
        target = targets.get(rename_key(name))
        if target is not None and target != name and target not in renamed.values():
            renamed[name] = target
    return {"removed": [n for n in removed if n not in renamed], "renamed": renamed,
            "added": [n for n in added if n not in set(renamed.values())], "changed": changed, "unchanged": unchanged,
            "later": later}


def _text(el: Any) -> str:
    return " ".join(str(el.xpath("string()")).split())


def _rows(table: Any) -> list[Any]:
    return list(table.xpath("./tr | ./tbody/tr | ./thead/tr"))


def _file_table(root: Any) -> Any:
    for table in root.iter("table"):
        if table.xpath("ancestor::table"):
            continue
        heads = [_text(th) for th in table.xpath("(./tr | ./thead/tr | ./tbody/tr)[1]/th")]
        if heads and heads[0].lower() == "file basename":
            return table
    return None


LIST_KEYS = (("unchanged", "unchanged"), ("new", "new"), ("changed", "changed"))  # "unchanged" contains "changed"


def _listed(root: Any) -> dict[str, int]:
    """How many files each bottom list (`<h3>Files that ...</h3>` and the `<li>` up to the next `<h3>`) names."""
    out: dict[str, int] = {}
    key: str | None = None
    for el in root.iter("h3", "li"):
        if el.tag == "h3":
            heading = _text(el).lower()
            key = next((k for word, k in LIST_KEYS if word in heading), None)
            if key is not None:
                out.setdefault(key, 0)
        elif key is not None:
            out[key] += 1
    return out
