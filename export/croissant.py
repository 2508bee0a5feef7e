"""The Croissant (MLCommons, 1.0) description written beside an export's RO-Crate: croissant.json.

Machine-learning tools read tables, not RDF, so the crate also holds the package's own JSON Lines files
(tasks.jsonl, evidence.jsonl, and answers.jsonl only with include_answers), byte for byte as `voe compile` wrote
them, and croissant.json declares them as FileObjects (sha256 each) with record sets whose fields are columns of
those files. The `mlcroissant` package validates it and loads the records offline (tests/compiler/test_export.py).
The context is Croissant's own, inline, so no tool has to fetch it.
"""

from __future__ import annotations

import hashlib
from typing import Any

from voe.artifacts.package import Manifest

CROISSANT = "croissant.json"
CONFORMS_TO = "http://mlcommons.org/croissant/1.0"
JSONL = "application/jsonlines"

CONTEXT: dict[str, Any] = {
    "@language": "en", "@vocab": "https://schema.org/", "sc": "https://schema.org/",
    "cr": "http://mlcommons.org/croissant/", "rai": "http://mlcommons.org/croissant/RAI/",
    "dct": "http://purl.org/dc/terms/", "citeAs": "cr:citeAs", "column": "cr:column", "conformsTo": "dct:conformsTo",
    "data": {"@id": "cr:data", "@type": "@json"}, "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "examples": {"@id": "cr:examples", "@type": "@json"}, "extract": "cr:extract", "field": "cr:field",
    "fileProperty": "cr:fileProperty", "fileObject": "cr:fileObject", "fileSet": "cr:fileSet", "format": "cr:format",
    "includes": "cr:includes", "isLiveDataset": "cr:isLiveDataset", "jsonPath": "cr:jsonPath", "key": "cr:key",
    "md5": "cr:md5", "parentField": "cr:parentField", "path": "cr:path", "recordSet": "cr:recordSet",
    "references": "cr:references", "regex": "cr:regex", "repeated": "cr:repeated", "replace": "cr:replace",
    "separator": "cr:separator", "source": "cr:source", "subField": "cr:subField", "transform": "cr:transform",
    "equivalentProperty": "cr:equivalentProperty", "samplingRate": "cr:samplingRate",
}

# record set -> (file, key column, [(column, data type, description)])
RECORD_SETS: dict[str, tuple[str, str, list[tuple[str, str, str]]]] = {
    "tasks": ("tasks.jsonl", "task_id", [
        ("task_id", "sc:Text", "the task's id"),
        ("question", "sc:Text", "what the policy is asked to decide"),
        ("horizon", "sc:Integer", "the most actions the policy may take"),
        ("workflow_id", "sc:Text", "the archive workflow the task was compiled from"),
        ("workflow_title", "sc:Text", "that workflow's title")]),
    "evidence": ("evidence.jsonl", "evidence_id", [
        ("evidence_id", "sc:Text", "the evidence object's id, as menus offer it"),
        ("status", "sc:Text", "archived, referenced or unavailable"),
        ("kind", "sc:Text", "what kind of evidence it is"),
        ("title", "sc:Text", "its title (a file name or record title)")]),
    "answers": ("answers.jsonl", "task_id", [
        ("task_id", "sc:Text", "the task answered"),
        ("family", "sc:Text", "the task family"),
        ("reference_class", "sc:Text", "the reference terminal action class (verifier-only)")]),
}


# training set format -> [(column, data type, description)] (export/training.py; files training/FORMAT/SPLIT.jsonl)
TRAINING_FIELDS: dict[str, list[tuple[str, str, str]]] = {
    "sft": [("task_id", "sc:Text", "the task"), ("workflow_id", "sc:Text", "its workflow (the split's unit)"),
            ("source", "sc:Text", "reference, or the run the trajectory comes from"),
            ("trajectory_id", "sc:Text", "the trajectory")],
    "preference": [("task_id", "sc:Text", "the task"), ("workflow_id", "sc:Text", "its workflow (the split's unit)"),
                   ("trajectory_id", "sc:Text", "the run trajectory of the rejected action"),
                   ("t", "sc:Integer", "the step"), ("chosen_value", "sc:Float", "Q - V of the chosen action (0)"),
                   ("rejected_value", "sc:Float", "Q - V of the action the run took")],
    "value": [("task_id", "sc:Text", "the task"), ("workflow_id", "sc:Text", "its workflow (the split's unit)"),
              ("left", "sc:Integer", "requests still possible"),
              ("sufficient", "sc:Boolean", "some terminal is already valid"),
              ("value", "sc:Float", "Q(s, a) - V(s) under the cost score")],
}


def croissant_metadata(data_files: dict[str, bytes], manifest: Manifest, published: str, license_url: str | None,
                       description: str, training: dict[str, bytes] | None = None) -> dict[str, Any]:
    training = training or {}
    files = [{"@type": "cr:FileObject", "@id": name, "name": name, "contentUrl": name, "encodingFormat": JSONL,
              "contentSize": f"{len(data)} B", "sha256": hashlib.sha256(data).hexdigest(),
              **({"description": "verifier-only: never give this file to a policy"}
                 if name == "answers.jsonl" or name in training else {})}
             for name, data in sorted({**data_files, **training}.items())]
    record_sets = []
    for rs, (file, key, columns) in RECORD_SETS.items():
        if file not in data_files:
            continue
        record_sets.append({
            "@type": "cr:RecordSet", "@id": rs, "name": rs, "key": {"@id": f"{rs}/{key}"},
            "field": [{"@type": "cr:Field", "@id": f"{rs}/{col}", "name": col, "description": what, "dataType": kind,
                       "source": {"fileObject": {"@id": file}, "extract": {"column": col}}}
                      for col, kind, what in columns]})
    for name in sorted(training):  # training/FORMAT/SPLIT.jsonl: one record set each
        _, fmt, split = name.removesuffix(".jsonl").split("/")
        rs = f"training_{fmt}_{split}"
        record_sets.append({
            "@type": "cr:RecordSet", "@id": rs, "name": rs,
            "description": f"the {split} split of the {fmt} training set (verifier-derived)",
            "field": [{"@type": "cr:Field", "@id": f"{rs}/{col}", "name": col, "description": what, "dataType": kind,
                       "source": {"fileObject": {"@id": name}, "extract": {"column": col}}}
                      for col, kind, what in TRAINING_FIELDS[fmt]]})
    return {
        "@context": CONTEXT, "@type": "sc:Dataset", "conformsTo": CONFORMS_TO,
        "name": f"voe-task-package-{manifest.content_hash[:12]}", "description": description,
        **({"license": license_url} if license_url else {}),  # no license of its own unless given (see the crate)
        "url": f"https://w3id.org/voe/id/package/{manifest.content_hash}", "version": f"{manifest.package_version}.0.0",
        "datePublished": published, "citeAs": f"voe task package {manifest.content_hash}",
        "distribution": files, "recordSet": record_sets}
