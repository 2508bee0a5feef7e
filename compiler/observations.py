"""What a request returns: the facts a reviewer holding the archive would see for an item (DESIGN §4).

Each observation states what the record declares (path, media type, size, digest, download URL, the
record's own flags such as a checksum file's `valid`, and their wording), what we hold (the digest and size
recomputed from the local bytes, the format the bytes parse as), each checksum file beside the digest it
should match (its content when we hold it; otherwise its declared sha256 beside sha256 of the target's
declared digest written as the 64 hex characters a NIST sidecar holds), for a folder the same for each
member file, and for release-note items and references the lines of the archive's own documents that name
them. Every statement carries the place it comes from.

Nothing here says what the facts mean: no defect kind, rule name, defect list, or a field derived from
them. Comparing a digest with another, or a media type with an extension, is the agent's judgment.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from voe.artifacts.package import EvidenceObject, ObservedFact
from voe.ingest.rules.defects import STATED_AS_FACTS

MAX_DESCRIPTION = 300


def _digest_of_digest(declared: str | None) -> str | None:
    """sha256 of a declared digest as the 64 lowercase hex characters a NIST sidecar holds (no newline)."""
    if not declared:
        return None
    return hashlib.sha256(declared.lower().encode("ascii", errors="replace")).hexdigest()


def _source(path: Any, locator: Any, sha256: Any) -> dict[str, Any] | None:
    """A fact's source location: the file, the place in it and the sha256 of the bytes there. A location always
    names its digest (DESIGN §2, §3; the export's shapes check it), so a fact whose place has no path or no
    digest in the graph keeps its statement and gets no source, never one that cannot be checked."""
    if not path or not sha256:
        return None
    return {"path": path, "locator": locator, "sha256": sha256}


def _record_source(row: dict[str, Any]) -> dict[str, Any] | None:
    for loc in row["locations"]:
        if loc.get("kind") == "json_pointer" or loc.get("kind") == "file_region":
            return _source(loc.get("path"), loc.get("locator"), loc.get("sha256"))
    return None


def _declared(path: str, media_type: str | None, size: Any, sha: str | None) -> str:
    parts = [f"media type {media_type}" if media_type else "no media type",
             f"{size} bytes" if size is not None else "no size",
             f"sha256 {sha}" if sha else "no checksum"]
    return f"The record lists {path}: " + ", ".join(parts) + "."


def _file_meta(item: dict[str, Any]) -> dict[str, Any]:
    target_digest = item.get("declared_sha256")
    sidecars = []
    for s in sorted(item.get("sidecars") or [], key=lambda x: x["path"] or ""):
        sidecars.append({
            "path": s["path"], "valid": s.get("valid"), "declared_sha256": s.get("declared_sha256"),
            "declared_size": s.get("declared_size"), "held": bool(s.get("held")), "content": s.get("content"),
            "sha256_of_target_digest": _digest_of_digest(target_digest),
        })
    return {k: v for k, v in {
        "path": item.get("path"), "media_type": item.get("media_type"), "declared_size": item.get("declared_size"),
        "declared_sha256": target_digest, "held": bool(item.get("held")), "local_sha256": item.get("sha256"),
        "local_size": item.get("size"), "parsed_as": item.get("format"), "checksum_files": sidecars,
        "parse_summary": item.get("summary"),
    }.items() if v is not None}


def _parsed(path: str, summary_json: str | None) -> str | None:
    """What the parser saw in the bytes, for every held file alike (a finding is not a tell by its presence)."""
    try:
        summary = json.loads(summary_json) if summary_json else {}
    except (TypeError, ValueError):
        return None
    if "rows" in summary and "columns" in summary:
        text = f"{path} parses as a table of {summary['rows']} rows and {summary['columns']} columns"
        if summary.get("encoding"):
            text += f", encoding {summary['encoding']}"
        if summary.get("bom"):
            text += ", beginning with a UTF-8 byte order mark"
        if "crlf" in summary:
            text += ", lines ending in CRLF" if summary["crlf"] else ", lines ending in LF"
        return text + "."
    if summary.get("sheets"):
        return f"{path} parses as a workbook with the sheets {', '.join(map(str, summary['sheets']))}."
    if "pages" in summary:
        missing = summary.get("pages_without_text") or []
        return (f"{path} has {summary['pages']} pages; pages without a text layer: "
                f"{', '.join(map(str, missing)) if missing else 'none'}.")
    return None


def _findings(row: dict[str, Any]) -> list[ObservedFact]:
    """The parsers' statements about what the bytes hold (ingest/rules/defects.py STATED_AS_FACTS), at their place."""
    out = []
    for d in sorted(row.get("defects") or [], key=lambda d: (d.get("pointer") or "", d.get("detail") or "")):
        if d.get("rule") in STATED_AS_FACTS and d.get("detail"):
            # the digest of the bytes the finding is about (its own location's, else its file's; the catalog query)
            locator = str(d.get("pointer") or "").rsplit("#", 1)[-1] or "file"
            out.append(ObservedFact(statement=str(d["detail"]), source=_source(d.get("path"), locator, d.get("sha256"))))
    return out


def _file_facts(meta: dict[str, Any], source: dict[str, Any] | None) -> list[ObservedFact]:
    path = meta["path"]
    summary = meta.pop("parse_summary", None)
    out = [ObservedFact(statement=_declared(path, meta.get("media_type"), meta.get("declared_size"),
                                            meta.get("declared_sha256")), source=source)]
    if meta.get("held"):
        held = f"The local copy of {path} is {meta.get('local_size')} bytes with sha256 {meta.get('local_sha256')}."
        if meta.get("parsed_as"):
            held += f" Its bytes parse as {meta['parsed_as']}."
        out.append(ObservedFact(statement=held, source=source))
        if parsed := _parsed(path, summary):
            out.append(ObservedFact(statement=parsed, source=source))
    else:
        out.append(ObservedFact(statement=f"This copy of the archive does not hold the bytes of {path}.", source=source))
    for s in meta.get("checksum_files", []):
        text = (f"{s['path']} is the record's checksum file for {path}; the record marks it valid: "
                f"{str(s['valid']).lower() if s['valid'] is not None else 'not stated'}, and lists it with "
                f"{s.get('declared_size')} bytes, sha256 {s.get('declared_sha256')}.")
        if s.get("content") is not None:
            text += f" It holds the text {s['content']}."
        elif s.get("sha256_of_target_digest"):
            text += (f" This copy does not hold its bytes; sha256 of {path}'s declared digest written as 64 hex "
                     f"characters is {s['sha256_of_target_digest']}.")
        out.append(ObservedFact(statement=text, source=source))
    return out


def observe(row: dict[str, Any]) -> EvidenceObject:
    """The observation for one evidence catalog row (cypher/compiler/evidence_catalog.cypher)."""
    common = {"evidence_id": row["evidence_id"], "kind": row["kind"], "title": row["title"], "record": row["ark"],
              "provenance": row["provenance"]}
    facts: list[ObservedFact] = []
    meta: dict[str, Any] = {}
    located = [loc for loc in row["locations"] if loc.get("text")]
    if row["provenance"] == "referenced":
        source = _record_source(row)
        meta = {"location": row.get("target"), "ref_type": row.get("ref_type")}
        facts.append(ObservedFact(statement=f"The record's references list {row.get('target')} "
                                  f"({row.get('ref_type') or 'no relation given'}), titled '{row['title']}'.",
                                  source=source))
        return EvidenceObject(status="referenced", metadata=meta, facts=facts, **common)
    if row["provenance"] == "release_notes":
        meta = {k: row[k] for k in ("listed_in", "release_from", "release_to", "release_sha1", "release_size")
                if row.get(k) is not None}
        for loc in sorted(located, key=lambda x: (x.get("path") or "", x.get("line") or 0, x.get("locator") or "")):
            where = f"{loc.get('path')} line {loc.get('line')}" if loc.get("line") else f"{loc.get('path')}"
            facts.append(ObservedFact(statement=f"{where}: {loc['text'].strip()}",
                                      source=_source(loc.get("path"), loc.get("locator"), loc.get("sha256"))))
        return EvidenceObject(status="archived" if row["available"] else "unavailable", metadata=meta, facts=facts,
                              **common)
    if row["provenance"] == "measurement" and row["available"]:
        return _measurement(row, common)
    if row["provenance"] == "version_notes":  # a file an earlier version listed and this one does not
        return EvidenceObject(status="unavailable", metadata={"version": row.get("version_to")},
                              facts=[*_version_facts(row), *_record_facts(row)], **common)
    if row["provenance"] == "named":
        # what the archive says of a calibration it names and does not hold: the cells that name it
        cells = sorted((loc for loc in located if loc.get("cell")), key=_cell_order)
        facts = [ObservedFact(statement=f"{row.get('workbook')} {loc.get('sheet')}!{loc.get('cell')}"
                                        f"{' (' + str(loc['name']) + ')' if loc.get('name') else ''} names it: "
                                        f"{loc['text']}",
                              source=_source(loc.get("path"), loc.get("locator"), loc.get("sha256")))
                 for loc in cells]
        return EvidenceObject(status="unavailable", metadata={"named_in": row.get("workbook")}, facts=facts, **common)
    if not row["available"]:
        return EvidenceObject(evidence_id=row["evidence_id"], status="unavailable")
    source = _record_source(row)
    if row["is_folder"]:
        members = [_file_meta(m) for m in row["members"]]
        meta = {"path": row["component_path"], "files": row["member_count"], "folders": sorted(row["subfolders"]),
                "members": members}
        text = f"The folder {row['component_path']} holds {row['member_count']} files"
        if row["subfolders"]:
            text += " and the folders " + ", ".join(sorted(row["subfolders"]))
        facts.append(ObservedFact(statement=text + ".", source=source))
        for m in members:
            facts.extend(_file_facts(m, source))
    else:
        meta = _file_meta({"path": row["component_path"], "media_type": row["media_type"],
                           "declared_size": row["declared_size"], "declared_sha256": row["declared_sha256"],
                           "held": row["held"], "sha256": row["local_sha256"], "size": row["local_size"],
                           "format": row["local_format"], "sidecars": row["sidecars"],
                           "summary": row["local_summary"]})
        meta["download_url"] = row["download_url"]
        if row["provenance"] == "crate":
            facts.extend(_crate_facts(row, meta, source))
        else:
            facts.extend(_file_facts(meta, source))
    facts.extend(_findings(row))
    if row["kind"] == "source_document":  # a readme or changelog is read for what it says
        for ln in row.get("lines") or []:
            facts.append(ObservedFact(statement=f"{ln.get('path')} line {ln.get('line')}: {ln.get('text')}",
                                      source=_source(ln.get("path"), ln.get("locator"), ln.get("sha256"))))
    if row.get("description"):
        facts.append(ObservedFact(statement=f"The record describes it: {str(row['description'])[:MAX_DESCRIPTION]}",
                                  source=source))
    facts.extend(_record_facts(row))
    facts.extend(_version_facts(row))
    return EvidenceObject(status="archived", metadata=meta, facts=facts, **common)


def _crate_facts(row: dict[str, Any], meta: dict[str, Any], source: dict[str, Any] | None) -> list[ObservedFact]:
    """What a reviewer of an RO-Crate sees for a file: what its entity declares (its @id, encodingFormat,
    contentSize, sha256), and what the container holds at that path, or under that name elsewhere, or nothing."""
    root = row.get("crate_root") or "(the container's top)"
    container = row.get("record_source")
    path = meta.get("path")
    out = []
    if row.get("crate_described") is False:
        out.append(ObservedFact(statement=f"No entity of the crate ({container}, root {root}) describes {path}.",
                                source=None))
    else:
        parts = [f"encodingFormat {meta['media_type']}" if meta.get("media_type") else "no encodingFormat",
                 f"contentSize {meta['declared_size']}" if meta.get("declared_size") is not None else "no contentSize",
                 f"sha256 {meta['declared_sha256']}" if meta.get("declared_sha256") else "no sha256"]
        out.append(ObservedFact(statement=f"The crate ({container}, root {root}) describes the file "
                                f"{row.get('crate_entity')!r}: " + ", ".join(parts) + ".", source=source))
    held = f"{meta.get('local_size')} bytes with sha256 {meta.get('local_sha256')}"
    if meta.get("local_sha256") and row.get("crate_found_at"):
        out.append(ObservedFact(statement=f"The container holds no member at {root}/{path}; it holds "
                                f"{row['crate_found_at']}: {held}.", source=source))
    elif meta.get("local_sha256"):
        out.append(ObservedFact(statement=f"The container holds {root}/{path}: {held}.", source=source))
        if summary := _parsed(str(path), meta.get("parse_summary")):
            out.append(ObservedFact(statement=summary, source=source))
    else:
        out.append(ObservedFact(statement=f"The container holds nothing at {root}/{path}.", source=source))
    return out


def _record_facts(row: dict[str, Any]) -> list[ObservedFact]:
    """What the record says of its data and of its versions, for every item of it alike."""
    out = []
    if row.get("record_description"):
        out.append(ObservedFact(statement=f"The record {row['ark']} describes its data: "
                                f"{str(row['record_description'])[:MAX_DESCRIPTION]}", source=_record_root(row)))
    if row.get("record_history"):
        at = row.get("record_history_at") or {}
        out.append(ObservedFact(statement=f"The record's release history (version, issued, description): "
                                f"{row['record_history']}",
                                source=_source(at.get("path"), at.get("locator"), at.get("sha256"))))
    return out


def _version_facts(row: dict[str, Any]) -> list[ObservedFact]:
    """What an earlier version of the record held of the item (another snapshot of the record, an earlier export),
    or that it did not list it, beside what the release histories or commit messages say of the versions since:
    the comparison is the agent's."""
    if not row.get("version_status"):
        return []
    try:
        before = json.loads(row.get("version_before_json") or "[]")
    except ValueError:
        before = []
    out = []
    for b in before:
        at = b.get("source") or {}
        if b.get("listed") is False:  # a file the later version lists for the first time
            out.append(ObservedFact(statement=f"Version {row.get('version_from')} of the record does not list "
                                    f"{b.get('path')}.",
                                    source=_source(at.get("path"), at.get("locator"), at.get("sha256"))))
            continue
        out.append(ObservedFact(statement=f"Version {row.get('version_from')} of the record lists {b.get('path')}: "
                                f"{b.get('size') if b.get('size') is not None else 'no'} bytes, "
                                f"sha256 {b.get('sha256') or 'not stated'}.",
                                source=_source(at.get("path"), at.get("locator"), at.get("sha256"))))
    for loc in row["locations"]:
        if loc.get("text") and (loc.get("kind") == "commit_message" or str(loc.get("locator") or "").endswith(
                "/description") and "hasRelease" in str(loc.get("locator"))):
            out.append(ObservedFact(statement=f"{loc.get('path')} {loc.get('locator')}: {loc['text']}",
                                    source=_source(loc.get("path"), loc.get("locator"), loc.get("sha256"))))
    return out


def _record_root(row: dict[str, Any]) -> dict[str, Any] | None:
    """Where the record's own description sits (its JSON pointer in the record file)."""
    loc = row.get("record_description_at") or {}
    return _source(loc.get("path"), loc.get("locator"), loc.get("sha256"))


def _cell_order(loc: dict[str, Any]) -> tuple[int, int, str]:
    cell = str(loc.get("cell") or "")
    letters = "".join(ch for ch in cell if ch.isalpha())
    digits = "".join(ch for ch in cell if ch.isdigit())
    column = 0
    for ch in letters:
        column = column * 26 + (ord(ch.upper()) - 64)
    return (int(digits or 0), column, cell)


def _measurement(row: dict[str, Any], common: dict[str, Any]) -> EvidenceObject:
    """A measurement of a metadata workbook: the cells of its rows that identify it and state its calibration,
    each with its sheet and cell; what the cells mean (which calibration, held or not) is the agent's to find."""
    cells = sorted((loc for loc in row["locations"] if loc.get("text") is not None), key=_cell_order)
    book = str(row.get("workbook") or "")
    facts = [ObservedFact(statement=f"{book} {loc.get('sheet')}!{loc.get('cell')}"
                                    f"{' (' + str(loc['name']) + ')' if loc.get('name') else ''}: {loc['text']}",
                          source=_source(loc.get("path"), loc.get("locator"), loc.get("sha256")))
             for loc in cells]
    meta = {"workbook": book, "sheet": row.get("sheet"), "measurement_id": row.get("measurement_id"),
            "rows": list(row.get("sheet_rows") or [])}
    return EvidenceObject(status="archived", metadata=meta, facts=facts, **common)
