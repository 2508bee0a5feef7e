"""The Croissant (MLCommons, 1.1) description written beside an export's RO-Crate: croissant.json.

Machine-learning tools read tables, not RDF, so the crate also holds the package's own JSON Lines files
(tasks.jsonl, evidence.jsonl, and answers.jsonl only with include_answers), byte for byte as `voe compile` wrote
them, and croissant.json declares them as FileObjects (sha256 each) with record sets describing every field of
their lines, nested ones included: a task's menu entries, an evidence object's facts (with their source
locations) and metadata (its checksum files, a folder's members), an answer's reference steps (with their
payloads) and binding rules, a training row's messages and actions. A nested value is read from its column with
JSON paths, one per level (mlcroissant applies each to every element of a list). The `mlcroissant` package
validates it and loads the records offline (tests/export/test_export.py). The context is Croissant 1.1's own,
inline, so no tool has to fetch it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from voe.artifacts.package import TERMINALS, Manifest

CROISSANT = "croissant.json"
CONFORMS_TO = "http://mlcommons.org/croissant/1.1"
JSONL = "application/jsonlines"

# Croissant 1.1's context, as mlcroissant writes it (names and descriptions may be language maps)
CONTEXT: dict[str, Any] = {
    "@language": "en", "@vocab": "https://schema.org/", "sc": "https://schema.org/",
    "cr": "http://mlcommons.org/croissant/", "rai": "http://mlcommons.org/croissant/RAI/",
    "dct": "http://purl.org/dc/terms/", "arrayShape": "cr:arrayShape", "citeAs": "cr:citeAs", "column": "cr:column",
    "conformsTo": "dct:conformsTo", "containedIn": "cr:containedIn", "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"}, "description": {"@container": "@language"},
    "equivalentProperty": "cr:equivalentProperty", "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract", "field": "cr:field", "fileObject": "cr:fileObject", "fileProperty": "cr:fileProperty",
    "fileSet": "cr:fileSet", "format": "cr:format", "includes": "cr:includes", "isArray": "cr:isArray",
    "isLiveDataset": "cr:isLiveDataset", "jsonPath": "cr:jsonPath", "key": "cr:key", "md5": "cr:md5",
    "name": {"@container": "@language"}, "parentField": "cr:parentField", "path": "cr:path",
    "recordSet": "cr:recordSet", "references": "cr:references", "regex": "cr:regex", "repeated": "cr:repeated",
    "replace": "cr:replace", "samplingRate": "cr:samplingRate", "separator": "cr:separator", "source": "cr:source",
    "subField": "cr:subField", "transform": "cr:transform",
}

TEXT, INTEGER, FLOAT, BOOLEAN = "sc:Text", "sc:Integer", "sc:Float", "sc:Boolean"


@dataclass(frozen=True)
class Col:
    """A field of a record set: a column of the JSON Lines file, or a value inside one. `key` is its JSON path
    from its parent's value (default: its name; `source.path` reaches into an object mlcroissant would otherwise
    nest one level too deep); `sub` the fields of an object, or of each object of a list (`array`)."""

    name: str
    data_type: str | None
    description: str
    array: bool = False
    sub: tuple[Col, ...] = ()
    key: str | None = None


def _ids(name: str, what: str) -> Col:
    return Col(name, TEXT, what, array=True)


MENU_ENTRY = (Col("entry_id", TEXT, "the entry's id in this menu (E1, E2, ...)"),
              Col("evidence_id", TEXT, "the evidence object it offers (evidence/evidence_id)"),
              Col("kind", TEXT, "the kind of evidence"), Col("title", TEXT, "its title"),
              Col("request_action", TEXT, "the request action that pulls it"))
SOURCE = (Col("source/path", TEXT, "the file the fact is read from (null: a fact with no source)", key="source.path"),
          Col("source/locator", TEXT, "the place in that file (JSON pointer, page, cell, line)", key="source.locator"),
          Col("source/sha256", TEXT, "sha256 of the bytes at that place", key="source.sha256"))
CHECKSUM_FILE = (Col("path", TEXT, "the checksum file"), Col("valid", BOOLEAN, "the record's own valid flag"),
                 Col("declared_sha256", TEXT, "its digest as the record lists it"),
                 Col("declared_size", INTEGER, "its size as the record lists it (bytes)"),
                 Col("held", BOOLEAN, "whether this copy holds its bytes"),
                 Col("content", TEXT, "the text it holds, when held"),
                 Col("sha256_of_target_digest", TEXT, "sha256 of the target's declared digest as 64 hex characters"))
FILE_META = (Col("path", TEXT, "the item's path in its record"), Col("media_type", TEXT, "its media type as listed"),
             Col("declared_size", INTEGER, "its size as the record lists it (bytes)"),
             Col("declared_sha256", TEXT, "its digest as the record lists it"),
             Col("held", BOOLEAN, "whether this copy holds its bytes"),
             Col("local_sha256", TEXT, "sha256 of the held bytes"), Col("local_size", INTEGER, "size of the held bytes"),
             Col("parsed_as", TEXT, "the format its bytes parse as"),
             Col("checksum_files", None, "the record's checksum files for it", array=True, sub=CHECKSUM_FILE))
METADATA = (*FILE_META, Col("download_url", TEXT, "where the record says the bytes are"),
            Col("files", INTEGER, "a folder: how many files it holds"), _ids("folders", "a folder: its sub-folders"),
            Col("members", None, "a folder: its files", array=True, sub=FILE_META),
            Col("location", TEXT, "a reference: where it resolves"), Col("ref_type", TEXT, "a reference: its relation"),
            Col("listed_in", TEXT, "release notes: the summary that lists it"),
            Col("release_from", TEXT, "release notes: the release it was in"),
            Col("release_to", TEXT, "release notes: the release it went to"),
            Col("release_sha1", TEXT, "release notes: the SHA-1 they give"),
            Col("release_size", INTEGER, "release notes: the size they give (bytes)"))
STEP = (Col("action", TEXT, "the action"), Col("evidence_id", TEXT, "the evidence a request pulls"),
        _ids("payload", "the evidence ids a terminal action names"))
BINDING = tuple(_ids(a.value, f"the evidence ids for a {a.value} payload (null: not this class)") for a in TERMINALS)
MESSAGE = (Col("role", TEXT, "system, user or assistant"), Col("content", TEXT, "the turn's text"))


def _messages(name: str, what: str) -> Col:
    return Col(name, None, what, array=True, sub=MESSAGE)


# record set -> (file, key column, fields)
RECORD_SETS: dict[str, tuple[str, str, tuple[Col, ...]]] = {
    "tasks": ("tasks.jsonl", "task_id", (
        Col("task_id", TEXT, "the task's id"),
        Col("question", TEXT, "what the policy is asked to decide"),
        Col("horizon", INTEGER, "the most actions the policy may take"),
        Col("workflow_id", TEXT, "the archive workflow the task was compiled from"),
        Col("workflow_title", TEXT, "that workflow's title"),
        _ids("actions", "the actions the policy may take"),
        Col("menu", None, "the evidence the task offers, in menu order", array=True, sub=MENU_ENTRY))),
    "evidence": ("evidence.jsonl", "evidence_id", (
        Col("evidence_id", TEXT, "the evidence object's id, as menus offer it"),
        Col("status", TEXT, "archived, referenced or unavailable"),
        Col("kind", TEXT, "what kind of evidence it is"),
        Col("title", TEXT, "its title (a file name or record title)"),
        Col("record", TEXT, "the archive record it belongs to"),
        Col("provenance", TEXT, "where it comes from (the record's files, its references, release notes)"),
        Col("facts", None, "what a request returns, stated as facts, each at its source location", array=True,
            sub=(Col("statement", TEXT, "the fact"), *SOURCE)),
        Col("metadata", None, "the same facts in structured form (which keys an item has depends on its kind)",
            sub=METADATA))),
    "answers": ("answers.jsonl", "task_id", (
        Col("task_id", TEXT, "the task answered"),
        Col("family", TEXT, "the task family"),
        Col("moment_id", TEXT, "the decision moment the task was compiled from"),
        _ids("accepted_classes", "the terminal action classes the verifier accepts"),
        _ids("binding", "the evidence the decision must bind"),
        _ids("needed", "what the reference needs pulled to justify its class"),
        _ids("useful", "the decision-changing evidence"),
        Col("reference", None, "the reference policy's steps", array=True, sub=STEP),
        Col("reference_class", TEXT, "the reference terminal action class (verifier-only)"),
        _ids("reference_payload", "the reference terminal's payload"),
        Col("must_bind", None, "per accepted class, the evidence ids its payload must name", sub=BINDING),
        Col("may_bind", None, "per terminal class, the only evidence ids its payload may name", sub=BINDING),
        Col("decision", TEXT, "hash of the visible question and the gold: tasks sharing it are one decision"),
        _ids("source_facts", "the graph facts the moment was computed from"),
        _ids("gold_facts", "the independent archive facts the gold rests on"))),
}

# training set format -> fields (export/training.py; files training/FORMAT/SPLIT.jsonl)
_TRAINING_ROW = (Col("task_id", TEXT, "the task"), Col("workflow_id", TEXT, "its workflow (the split's unit)"))
TRAINING_FIELDS: dict[str, tuple[Col, ...]] = {
    "sft": (*_TRAINING_ROW, Col("source", TEXT, "reference, or the run the trajectory comes from"),
            Col("trajectory_id", TEXT, "the trajectory"),
            _messages("messages", "the conversation; the assistant turns are the actions to learn"),
            Col("count", INTEGER, "trajectories that are this same conversation (identical rows merged)"),
            _ids("sources", "the source of each of those trajectories")),
    "preference": (*_TRAINING_ROW, Col("source", TEXT, "the run the rejected action comes from"),
                   Col("trajectory_id", TEXT, "the run trajectory of the rejected action"),
                   Col("t", INTEGER, "the step"), _ids("state", "the menu entries pulled before the step"),
                   _messages("prompt", "the conversation up to the step"),
                   _messages("chosen", "the reference's action"), _messages("rejected", "the action the run took"),
                   Col("chosen_value", FLOAT, "Q - V of the chosen action (0)"),
                   Col("rejected_value", FLOAT, "Q - V of the action the run took"),
                   Col("count", INTEGER, "steps of the runs that are this same pair at this state"),
                   _ids("sources", "the run of each of those steps")),
    "value": (*_TRAINING_ROW, _ids("state", "the menu entries pulled"),
              Col("left", INTEGER, "requests still possible"),
              Col("sufficient", BOOLEAN, "some terminal is already valid"),
              Col("cost_to_go", INTEGER, "the fewest further requests before a sufficient state (null: none)"),
              Col("action", None, "the action, as the json protocol writes it", sub=(
                  Col("action", TEXT, "the action"), Col("evidence_id", TEXT, "the menu entry a request pulls"),
                  _ids("payload", "the menu entries a terminal names"))),
              Col("value", FLOAT, "Q(s, a) - V(s) under the cost score")),
}


def _field(file: str, col: Col, at: str, column: str | None = None, path: tuple[str, ...] = (),
           depth: int = 0) -> dict[str, Any]:
    """One cr:Field. `column` is the file's column the value sits in, `path` the JSON paths from it down to the
    value's parent (one per level), `depth` how many lists lie above the value (its array dimensions)."""
    here = path + ((col.key or col.name),) if column is not None else path
    depth += int(col.array)
    node: dict[str, Any] = {"@type": "cr:Field", "@id": f"{at}/{col.name}", "name": col.name,
                            "description": col.description}
    if col.sub:
        node["subField"] = [_field(file, s, f"{at}/{col.name}", column or col.name, here, depth) for s in col.sub]
    else:
        source: dict[str, Any] = {"fileObject": {"@id": file}, "extract": {"column": column or col.name}}
        if here:
            source["transform"] = [{"jsonPath": p} for p in here]
        node.update(dataType=col.data_type, source=source)
    if depth:
        node.update(isArray=True, arrayShape=",".join(["-1"] * depth))
    return node


def record_set(name: str, file: str, fields: tuple[Col, ...], key: str | None = None,
               description: str | None = None) -> dict[str, Any]:
    node: dict[str, Any] = {"@type": "cr:RecordSet", "@id": name, "name": name,
                            "field": [_field(file, c, name) for c in fields]}
    if key is not None:
        node["key"] = {"@id": f"{name}/{key}"}
    if description is not None:
        node["description"] = description
    return node


def source_terms(manifest: Manifest) -> str:
    """The license note of an export made without --license: the package has no license of its own."""
    sources = ", ".join(str(s.get("ark")) for s in manifest.sources)
    return (f"No license was given at export; the terms of the archive records {sources} apply (each record's "
            "landing page states them; NIST Public Data Repository records: https://www.nist.gov/open/license).")


def croissant_metadata(data_files: dict[str, bytes], manifest: Manifest, published: str, license_url: str | None,
                       description: str, training: dict[str, bytes] | None = None) -> dict[str, Any]:
    training = training or {}
    files = [{"@type": "cr:FileObject", "@id": name, "name": name, "contentUrl": name, "encodingFormat": JSONL,
              "contentSize": f"{len(data)} B", "sha256": hashlib.sha256(data).hexdigest(),
              **({"description": "verifier-only: never give this file to a policy"}
                 if name == "answers.jsonl" or name in training else {})}
             for name, data in sorted({**data_files, **training}.items())]
    record_sets = [record_set(rs, file, fields, key) for rs, (file, key, fields) in RECORD_SETS.items()
                   if file in data_files]
    for name in sorted(training):  # training/FORMAT/SPLIT.jsonl: one record set each
        _, fmt, split = name.removesuffix(".jsonl").split("/")
        record_sets.append(record_set(f"training_{fmt}_{split}", name, TRAINING_FIELDS[fmt],
                                      description=f"the {split} split of the {fmt} training set (verifier-derived)"))
    return {
        "@context": CONTEXT, "@type": "sc:Dataset", "conformsTo": CONFORMS_TO,
        "name": f"voe-task-package-{manifest.content_hash[:12]}", "description": description,
        "license": license_url or {"@type": "sc:CreativeWork", "name": "terms of the source records",
                                   "description": source_terms(manifest)},
        "url": f"https://w3id.org/voe/id/package/{manifest.content_hash}", "version": f"{manifest.package_version}.0.0",
        "datePublished": published, "citeAs": f"voe task package {manifest.content_hash}",
        "distribution": files, "recordSet": record_sets}
