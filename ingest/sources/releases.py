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
        blanket = [(c, item) for c, item in release_items if BLANKET.search(_text(item))]
        added = set(summary.get("added", []))
        replacements: dict[str, tuple[str, list[tuple[ParsedFile, list[Fact]]]]] = {}
        for name, status, extra0 in _statuses(summary):
            facts = sorted(rows.get(name, []), key=lambda f: version_key(str(f.extra["release"])))
            if not facts:
                continue
            newest = facts[-1].extra
            old, new = (name, extra0.get("renamed_to")) if status == "renamed" else (extra0.get("renamed_from"), name)
            stating = [(c, item) for c, item in release_items
                       if _names(item, name) or (status in ("renamed", "rename_target") and old and new
                                                 and (_names(item, old) or _states_prefix_rename(item, old, new)))]
            extra: dict[str, Any] = dict(extra0)
            if status == "removed" and stating:
                # a statement that removes the file and names a file the release adds: the replacement
                named = [n for _, item in stating for n in _quoted_files(item) if n != name and n in added]
                if named:
                    extra["replaced_by"] = named[0]
                    replacements.setdefault(named[0], (name, stating))
            if status == "changed":
                sizes = {str(f.extra["release"]): f.extra.get("size") for f in facts}
                before, after = sizes.get(str(summary["from"])), sizes.get(str(summary["to"]))
                if isinstance(before, int) and isinstance(after, int):
                    extra["release_size_delta"] = after - before
                extra["release_coverage"] = "named" if stating else "blanket" if blanket else "none"
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
        for name, (replaced, stating) in sorted(replacements.items()):
            _replacement(builder, s, rows.get(name, []), name, replaced, current, stating)


def _replacement(builder: BuilderCore, s: ParsedFile, facts: list[Fact], name: str, replaced: str,
                 current: str | None, stating: list[tuple[ParsedFile, list[Fact]]]) -> None:
    """An Evidence for a file the release adds that a changelog item names as replacing a removed one: the item
    is where the removed file's content went (the item's lines and the summary's rows are its locations)."""
    if not facts:
        return
    facts = sorted(facts, key=lambda f: version_key(str(f.extra["release"])))
    newest = facts[-1].extra
    summary = s.parsed.summary
    kind, rule = evidence_kind(name, None, None, None)
    eid = ids.evidence_id(builder.rec_id, f"{s.relpath}#{name}")
    props: dict[str, Any] = {
        "canonical_id": eid, "kind": kind, "kind_rule": rule, "title": name, "record_ark": builder.ark,
        "provenance": "release_notes", "release_status": "replacement", "release_from": summary["from"],
        "release_to": summary["to"], "sha1": newest["sha1"], "size": newest["size"],
        "releases": [str(f.extra["release"]) for f in facts], "listed_in": s.relpath, "current_release": current,
        "available": any(f.extra["release"] == current for f in facts), "held": False, "release_stated": True,
        "replaces": replaced,
    }
    builder.g.nodes.append(NodeRow(eid, (Label.EVIDENCE,), builder._owned(props)))
    locs = [builder.fact_location(f, s.relpath, s.local) for f in facts]
    locs += [builder.fact_location(f, c.relpath, c.local) for c, item in stating for f in item]
    for loc in dict.fromkeys(locs):
        builder.g.edges.append(EdgeRow(Rel.LOCATED_AT, eid, Label.EVIDENCE, loc, Label.SOURCE_LOCATION))
    builder.g.evidence[kind] += 1


# a changelog item that speaks for every document of the release at once: the schema they follow changed, or
# all documents (blobs, files) of a kind were replaced; a change it covers and no item names is explained but
# decides nothing (no item says what happened to that file)
BLANKET = re.compile(r"\bschema\b|\ball (?:the )?(?:\w+ )?(?:blobs|documents|files)\b", re.I)
FILE_NAME = re.compile(r"^[A-Za-z0-9_.\-]+\.[A-Za-z0-9]{1,5}$")


def _quoted_files(item: list[Fact]) -> list[str]:
    """File names an item quotes ('AMB2022-718-AMMT-B6-P2-L7-L8-L9-O1.xml')."""
    return [q for q in QUOTED.findall(_text(item)) if FILE_NAME.match(q)]


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
