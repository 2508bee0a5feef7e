"""Evidence for what a record's release notes say changed (the rules are written in ingest/evidence.py).

Called by a builder once every file of the record is parsed: the release file summaries
(`release_summary`) give the rows, the record's changelog text files the lines that name a file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ingest import ids
from ingest.evidence import evidence_kind
from ingest.files import LocalBytes
from ingest.parsers.model import Fact, Parsed
from ingest.parsers.release import version_key
from voe.graph import EdgeRow, NodeRow
from voe.ontology import Label, Rel

if TYPE_CHECKING:
    from ingest.builder import BuilderCore

NAME_CHARS = r"A-Za-z0-9_\-"


@dataclass
class ParsedFile:
    relpath: str
    parsed: Parsed
    local: LocalBytes


def is_changelog(relpath: str, parsed: Parsed) -> bool:
    return parsed.format == "text" and relpath.rsplit("/", 1)[-1].lower().startswith("changelog")


def release_evidence(builder: BuilderCore, summaries: list[ParsedFile], changelogs: list[ParsedFile]) -> None:
    """One Evidence per file a release summary lists as removed, renamed (old and new name) or changed."""
    lines = [(c, f) for c in changelogs for f in c.parsed.facts if f.kind == "line"]
    for s in summaries:
        summary = s.parsed.summary
        rows: dict[str, list[Fact]] = {}
        for fact in s.parsed.facts:
            if fact.kind == "html_row":
                rows.setdefault(str(fact.extra["file"]), []).append(fact)
        current = summary["releases"][-1] if summary.get("releases") else None
        for name, status, extra in _statuses(summary):
            facts = sorted(rows.get(name, []), key=lambda f: version_key(str(f.extra["release"])))
            if not facts:
                continue
            newest = facts[-1].extra
            kind, rule = evidence_kind(name, None, None, None)
            eid = ids.evidence_id(builder.rec_id, f"{s.relpath}#{name}")
            props: dict[str, Any] = {
                "canonical_id": eid, "kind": kind, "kind_rule": rule, "title": name, "record_ark": builder.ark,
                "provenance": "release_notes", "release_status": status, "release_from": summary["from"],
                "release_to": summary["to"], "sha1": newest["sha1"], "size": newest["size"],
                "releases": [str(f.extra["release"]) for f in facts], "listed_in": s.relpath,
                "current_release": current, "available": any(f.extra["release"] == current for f in facts),
                "held": False, **extra,
            }
            builder.g.nodes.append(NodeRow(eid, (Label.EVIDENCE,),
                                           builder._owned({k: v for k, v in props.items() if v is not None})))
            locs = [builder.fact_location(f, s.relpath, s.local) for f in facts]
            mention = _mention_re(name)
            locs += [builder.fact_location(f, c.relpath, c.local) for c, f in lines if mention.search(f.text)]
            for loc in dict.fromkeys(locs):  # byte-identical changelogs share their locations
                builder.g.edges.append(EdgeRow(Rel.LOCATED_AT, eid, Label.EVIDENCE, loc, Label.SOURCE_LOCATION))
            builder.g.evidence[kind] += 1


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
