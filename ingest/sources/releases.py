"""Evidence for what a record's release notes say changed (the rules are written in ingest/rules/evidence.py).

Called by a builder once every file of the record is parsed: the release file summaries
(`release_summary`) give the rows, the record's changelog text files the lines that name a file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from voe.graph import EdgeRow, NodeRow
from voe.ingest.payloads.files import LocalBytes
from voe.ingest.payloads.parsers.model import Fact, Parsed
from voe.ingest.payloads.parsers.release import version_key
from voe.ingest.rules import ids
from voe.ingest.rules.evidence import evidence_kind
from voe.ontology import Label, Rel

if TYPE_CHECKING:
    from voe.ingest.builder import BuilderCore

NAME_CHARS = r"A-Za-z0-9_\-"


@dataclass
class ParsedFile:
    relpath: str
    parsed: Parsed
    local: LocalBytes


def is_changelog(relpath: str, parsed: Parsed) -> bool:
    return parsed.format == "text" and relpath.rsplit("/", 1)[-1].lower().startswith("changelog")


def release_evidence(builder: BuilderCore, summaries: list[ParsedFile], changelogs: list[ParsedFile]) -> None:
    """One Evidence per file a release summary lists as removed, renamed (old and new name) or changed.

    `release_stated` says whether a changelog of that release states what happened to the file: an item
    (a numbered paragraph) that names it, or, for a rename, an item that states the prefix replacement
    mapping the old name to the new one ("Replaced the prefixes 'Composition-' ... by 'Composition_' ...").
    The summary's table alone shows that bytes moved, not why: a gold rests only on a stated change, and the
    stating lines are among the item's locations."""
    items = [(c, item) for c in changelogs for item in changelog_items(c.parsed.facts)]
    for s in summaries:
        summary = s.parsed.summary
        rows: dict[str, list[Fact]] = {}
        for fact in s.parsed.facts:
            if fact.kind == "html_row":
                rows.setdefault(str(fact.extra["file"]), []).append(fact)
        current = summary["releases"][-1] if summary.get("releases") else None
        release_items = [(c, item) for c, item in items if changelog_release(c) in (None, summary.get("to"))]
        for name, status, extra in _statuses(summary):
            facts = sorted(rows.get(name, []), key=lambda f: version_key(str(f.extra["release"])))
            if not facts:
                continue
            newest = facts[-1].extra
            old, new = (name, extra.get("renamed_to")) if status == "renamed" else (extra.get("renamed_from"), name)
            stating = [(c, item) for c, item in release_items
                       if _names(item, name) or (status in ("renamed", "rename_target") and old and new
                                                 and (_names(item, old) or _states_prefix_rename(item, old, new)))]
            kind, rule = evidence_kind(name, None, None, None)
            eid = ids.evidence_id(builder.rec_id, f"{s.relpath}#{name}")
            props: dict[str, Any] = {
                "canonical_id": eid, "kind": kind, "kind_rule": rule, "title": name, "record_ark": builder.ark,
                "provenance": "release_notes", "release_status": status, "release_from": summary["from"],
                "release_to": summary["to"], "sha1": newest["sha1"], "size": newest["size"],
                "releases": [str(f.extra["release"]) for f in facts], "listed_in": s.relpath,
                "current_release": current, "available": any(f.extra["release"] == current for f in facts),
                "held": False, "release_stated": bool(stating), **extra,
            }
            builder.g.nodes.append(NodeRow(eid, (Label.EVIDENCE,),
                                           builder._owned({k: v for k, v in props.items() if v is not None})))
            locs = [builder.fact_location(f, s.relpath, s.local) for f in facts]
            locs += [builder.fact_location(f, c.relpath, c.local) for c, item in stating for f in item]
            for loc in dict.fromkeys(locs):  # byte-identical changelogs share their locations
                builder.g.edges.append(EdgeRow(Rel.LOCATED_AT, eid, Label.EVIDENCE, loc, Label.SOURCE_LOCATION))
            builder.g.evidence[kind] += 1


ITEM_START = re.compile(r"^\s*(?:\d+|[a-z])[.)]\s")
CHANGELOG_RELEASE = re.compile(r"\bto (?:version )?(\d+(?:\.\d+)*)", re.I)
QUOTED = re.compile(r"['\u2018\u2019\"]([^'\u2018\u2019\"\s]{2,})['\u2018\u2019\"]")


def changelog_items(facts: list[Fact]) -> list[list[Fact]]:
    """The changelog's numbered items ("2. Changed the measurement identifiers ..."), each the list of its line
    facts, a sub-item ("a. ...") its own item; a blank line ends an item."""
    items: list[list[Fact]] = []
    current: list[Fact] | None = None
    for f in facts:
        if f.kind != "line":
            continue
        if not f.text.strip():
            current = None
        elif ITEM_START.match(f.text):
            current = [f]
            items.append(current)
        elif current is not None:
            current.append(f)
    return items


def changelog_release(c: ParsedFile) -> str | None:
    """The release a changelog describes: its first lines ("List of changes from version 2.0.0 to version 2.1.0"),
    else its name (`changelog_2.1.0.txt`); None when neither says."""
    for f in c.parsed.facts[:5]:
        if f.kind == "line" and (m := CHANGELOG_RELEASE.search(f.text)):
            return m.group(1)
    m = re.search(r"(\d+(?:\.\d+)+)", c.relpath.rsplit("/", 1)[-1])
    return m.group(1) if m else None


def _text(item: list[Fact]) -> str:
    return " ".join(f.text.strip() for f in item)


def _names(item: list[Fact], basename: str) -> bool:
    return bool(_mention_re(basename).search(_text(item)))


def _states_prefix_rename(item: list[Fact], old: str, new: str) -> bool:
    """The item quotes a prefix of the old name and, for it, the prefix that replaces it in the new name."""
    quoted = QUOTED.findall(_text(item))
    return any(old.startswith(p) and new == q + old[len(p):] for p in quoted for q in quoted if p != q)


def _statuses(summary: dict[str, Any]) -> list[tuple[str, str, dict[str, str]]]:
    out: list[tuple[str, str, dict[str, str]]] = [(n, "removed", {}) for n in summary.get("removed", [])]
    for old, new in summary.get("renamed", {}).items():
        out += [(old, "renamed", {"renamed_to": new}), (new, "rename_target", {"renamed_from": old})]
    out += [(n, "changed", {}) for n in summary.get("changed", [])]
    return out


def _mention_re(basename: str) -> re.Pattern[str]:
    """The basename, or its stem without `.xml`, as a whole name (`...-L7` does not match `...-L7-L8-L9-O1`)."""
    names = {basename, basename.removesuffix(".xml")}
    alts = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(f"(?<![{NAME_CHARS}])(?:{alts})(?![{NAME_CHARS}])")
