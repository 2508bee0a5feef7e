"""`voe export`: a package (and runs of it) as a folder that conforms: the JSON-LD graph files (export/jsonld.py,
export/runs.py), the package's own files, croissant.json and ro-crate-metadata.json, validated with SHACL and
swapped in whole."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from voe.artifacts.outdir import CRATE_MARKERS, claim_out, fresh_folder, swap_in
from voe.artifacts.package import Manifest, load_package
from voe.errors import UsageError
from voe.export.croissant import CONFORMS_TO as CROISSANT_CONFORMS_TO
from voe.export.croissant import CROISSANT, JSONL, croissant_metadata, source_terms
from voe.export.jsonld import (
    ANSWERS,
    CRATE,
    CRATE_CONTEXT_URL,
    CRATE_SPEC,
    EVIDENCE,
    HASH_PROPERTY,
    PACKAGE_FILES,
    RUNS,
    TASKS,
    VOE,
    answers_document,
    content_hash,
    dump,
    evidence_document,
    tasks_document,
    validate,
)
from voe.export.runs import load_runs, runs_document, verdict_nodes
from voe.export.training import export_training
from voe.settings import settings


class ExportSummary(BaseModel):
    out: str
    tasks: int
    evidence: int
    answers: int  # 0 without include_answers
    runs: int = 0
    trajectories: int = 0
    verdicts: int = 0  # with include_answers: one per trajectory of the runs
    training: dict[str, int] = {}  # with runs and include_answers: rows of each training set under training/
    include_answers: bool
    triples: int
    content_hash: str  # sha256 over the RDFC-1.0 (URDNA2015) canonical N-Quads of each exported .jsonld file, by name
    package_content_hash: str  # the source package's own content hash (manifest.json)
    files: dict[str, str]  # file name -> sha256 of its bytes
    publisher: str | None = None  # the crate's publisher (--publisher): none unless told
    license: list[str] = []  # the crate's license ids (#terms-of-the-sources when neither --license nor a record states one)



SOURCE_TERMS = "#terms-of-the-sources"
TRAINING = "training"
TRAINING_PARTS = {"README.md": "the training sets' dataset card (Hugging Face datasets reads its YAML header)",
                  "training.json": "what the training sets were made from, their counts and the workflows of each "
                                   "split"}
TRAINING_MEDIA_TYPES = {".jsonl": JSONL, ".md": "text/markdown", ".json": "application/json"}


def published_date(date: str | None = None) -> str:
    """The crate's datePublished: `date` (YYYY-MM-DD), else SOURCE_DATE_EPOCH (the reproducible-builds convention,
    so that two exports of one package are byte-identical), else today (UTC)."""
    import datetime as dt  # noqa: PLC0415 - only the crate needs it

    if date is not None:
        try:
            return dt.date.fromisoformat(date).isoformat()
        except ValueError as exc:
            raise UsageError(f"--date {date!r}: expected YYYY-MM-DD") from exc
    epoch = settings().source_date_epoch
    if epoch:
        try:
            return dt.datetime.fromtimestamp(int(epoch), dt.UTC).date().isoformat()
        except (ValueError, OverflowError, OSError) as exc:
            raise UsageError(f"SOURCE_DATE_EPOCH={epoch!r}: expected seconds since 1970") from exc
    return dt.datetime.now(dt.UTC).date().isoformat()


def crate_metadata(files: dict[str, bytes], digest: str, manifest: Manifest, counts: dict[str, int],
                   published: str, license_url: str | None = None, data_files: dict[str, bytes] | None = None,
                   croissant: bytes | None = None, training: dict[str, bytes] | None = None,
                   publisher: Publisher | None = None) -> dict[str, Any]:
    described = {
        TASKS: f"{counts['tasks']} policy-visible tasks (voe:Task, prov:Entity) with their menus and workflows",
        EVIDENCE: f"{counts['evidence']} evidence objects (voe:Evidence) with their facts and source locations",
        RUNS: f"{counts['runs']} runs (voe:Run, prov:Activity) with {counts['trajectories']} trajectories and their "
              "steps, observations and actions",
        ANSWERS: f"{counts['answers']} verifier-only task answers, the package's audit"
                 + (f" and {counts['verdicts']} trajectory verdicts" if counts["verdicts"] else "")
                 + "; never give this file to a policy",
    }
    parts: list[dict[str, Any]] = []
    for name in sorted(files):
        part: dict[str, Any] = {"@id": name, "@type": "File", "name": name, "description": described[name],
                                "encodingFormat": "application/ld+json", "contentSize": str(len(files[name])),
                                "sha256": hashlib.sha256(files[name]).hexdigest()}
        if name == ANSWERS:
            part["voe:verifierOnly"] = True
        parts.append(part)
    for name, data in sorted((data_files or {}).items()):  # the package's own files, for tools that read tables
        part = {"@id": name, "@type": "File", "name": name, "encodingFormat": JSONL, "contentSize": str(len(data)),
                "sha256": hashlib.sha256(data).hexdigest(),
                "description": f"{name} of the package as `voe compile` wrote it (JSON Lines)"
                               + ("; verifier-only: never give this file to a policy" if name == "answers.jsonl" else "")}
        if name == "answers.jsonl":
            part["voe:verifierOnly"] = True
        parts.append(part)
    for name, data in sorted((training or {}).items()):  # verifier-derived: only beside the answers
        parts.append({"@id": name, "@type": "File", "name": name, "contentSize": str(len(data)),
                      "sha256": hashlib.sha256(data).hexdigest(), "voe:verifierOnly": True,
                      "encodingFormat": TRAINING_MEDIA_TYPES[Path(name).suffix],
                      "description": TRAINING_PARTS.get(name.rsplit("/", 1)[-1], "a split of the training set "
                                                        + name.split("/")[1] + " (voe export-training; "
                                                        "the chosen actions and values are the verifier's labels)")})
    if croissant is not None:
        parts.append({"@id": CROISSANT, "@type": "File", "name": CROISSANT, "encodingFormat": "application/ld+json",
                      "contentSize": str(len(croissant)), "sha256": hashlib.sha256(croissant).hexdigest(),
                      "conformsTo": {"@id": CROISSANT_CONFORMS_TO},
                      "description": "Croissant (MLCommons) description of the JSON Lines files as record sets"})
    sources = ", ".join(str(s.get("ark")) for s in manifest.sources)
    root: dict[str, Any] = {
        "@id": "./", "@type": "Dataset", "name": f"voe task package {manifest.content_hash[:12]}",
        "description": f"Realized-only decision tasks compiled by {manifest.compiler_version} from the archive "
                       f"records {sources}, exported as JSON-LD (PROV-O, schema.org). "
                       + ("Verifier-only answers included (answers.jsonld)." if ANSWERS in files
                          else "Policy-visible files only: no answers."),
        "identifier": [{"@id": "#content-hash"}, {"@id": "#package-content-hash"}],
        "hasPart": [{"@id": p["@id"]} for p in parts], "version": str(manifest.package_version),
        "datePublished": published}
    licenses, license_nodes = _licenses(manifest, license_url)
    root["license"] = licenses
    unstated = [str(s["ark"]) for s in manifest.sources if not _absolute(s.get("license"))]
    if license_url is None and license_nodes[0]["@id"] != SOURCE_TERMS and unstated:
        root["conditionsOfAccess"] = ("the records " + ", ".join(unstated) + " state no license: the terms of "
                                      "their archives apply to what this package holds of them")
    graph: list[dict[str, Any]] = [
        {"@id": CRATE, "@type": "CreativeWork", "conformsTo": {"@id": CRATE_SPEC}, "about": {"@id": "./"}},
        root,
        {"@id": "#content-hash", "@type": "PropertyValue", "propertyID": HASH_PROPERTY, "name": "RDFC-1.0 content hash",
         "description": "sha256 over the RDFC-1.0 (URDNA2015) canonical N-Quads of " + ", ".join(sorted(files))
                        + ", each file canonicalized on its own, concatenated in this order",
         "value": digest},
        {"@id": "#package-content-hash", "@type": "PropertyValue", "propertyID": VOE + "packageContentHash",
         "name": "voe package content hash", "description": "the content hash in the source package's manifest.json",
         "value": manifest.content_hash},
        *parts]
    graph += license_nodes
    if publisher is not None:
        root["publisher"] = {"@id": publisher.id}
        graph += publisher.entities()
    if croissant is not None:  # the profile a part conforms to is an entity of the crate (RO-Crate 1.2 recommends)
        graph.append({"@id": CROISSANT_CONFORMS_TO, "@type": "CreativeWork", "name": "Croissant format specification",
                      "url": CROISSANT_CONFORMS_TO})
    return {"@context": [CRATE_CONTEXT_URL, {"voe": VOE}],
            "@graph": sorted(graph, key=lambda x: str(x["@id"]))}


class Publisher(BaseModel):
    """Who publishes the crate (`voe export --publisher`): whoever exports and redistributes it, which voe cannot
    know, so it names none unless told. `id` is absolute: a ROR id, or the organisation's URL."""
    id: str
    name: str
    contact: str | None = None  # mailto:ADDRESS or a URL where the publisher is reached

    def model_post_init(self, context: Any, /) -> None:
        # a relative id would name a file of the crate, a bare address no place at all: said as the user's mistake
        if not _absolute(self.id):
            raise UsageError(f"--publisher must be an absolute URL (a ROR id such as https://ror.org/05xpvk416 or the "
                             f"organisation's web address), not {self.id!r}")
        if self.contact is not None and not (self.contact.startswith("mailto:") or _absolute(self.contact)):
            raise UsageError(f"--contact must be mailto:ADDRESS or a URL, not {self.contact!r}")

    def entities(self) -> list[dict[str, Any]]:
        org: dict[str, Any] = {"@id": self.id, "@type": "Organization", "name": self.name, "url": self.id}
        if self.contact is None:
            return [org]
        org["contactPoint"] = {"@id": self.contact}
        point: dict[str, Any] = {"@id": self.contact, "@type": "ContactPoint", "name": f"contact of {self.name}",
                                 "contactType": "publisher of this crate"}
        if self.contact.startswith("mailto:"):
            point["email"] = self.contact.removeprefix("mailto:")
        else:
            point["url"] = self.contact
        return [org, point]


def _absolute(url: Any) -> bool:
    return isinstance(url, str) and url.startswith(("https://", "http://"))


def _licenses(manifest: Manifest, license_url: str | None) -> tuple[Any, list[dict[str, Any]]]:
    """The root's license and its entities: `--license`; else the licenses the source records state (absolute
    URLs, as RO-Crate 1.2 recommends; records stating none are named in `conditionsOfAccess`); else, when no
    record states one, a note that the source records' own terms apply."""
    if license_url is not None:  # an entity too: RO-Crate 1.2 wants a license named, described and typed
        return {"@id": license_url}, [{"@id": license_url, "@type": "CreativeWork", "name": "license of this crate",
                                       "description": "the license given at export (voe export --license)"}]
    urls = sorted({str(s["license"]) for s in manifest.sources if _absolute(s.get("license"))})
    if urls:
        nodes = [{"@id": u, "@type": "CreativeWork", "name": "license of source records",
                  "description": "the license the archive records "
                                 + ", ".join(str(s["ark"]) for s in manifest.sources if s.get("license") == u)
                                 + " state"} for u in urls]
        return ([{"@id": u} for u in urls] if len(urls) > 1 else {"@id": urls[0]}), nodes
    return {"@id": SOURCE_TERMS}, [{"@id": SOURCE_TERMS, "@type": "CreativeWork", "name": "terms of the source records",
                                    "description": source_terms(manifest)}]


def export_package(pkg: Path, out: Path, include_answers: bool = False, runs: list[Path] | tuple[Path, ...] = (),
                   date: str | None = None, license_url: str | None = None, force: bool = False,
                   publisher: Publisher | None = None) -> ExportSummary:
    """Export the package folder `pkg` as JSON-LD into `out` (see the module docstring for the files), validate it
    with SHACL and record its RDFC-1.0 content hash in ro-crate-metadata.json, which is written last, only for
    an export that conforms.

    The export is written into a new folder beside `out` and renamed to `out` only once it conforms: a failed
    export leaves nothing, and a reader never sees half of one. `out` may not be a symbolic link, and a folder
    that exists and is not empty is replaced only with `force` (InputError otherwise).

    Raises InputError (exit 2) when `pkg` is not a readable package or `out` is refused, ExportInvalid (exit 1)
    with pyshacl's report when the export fails the shapes. `runs` (run folders of this package) go to
    runs.jsonld as PROV activities, their verdicts to answers.jsonld (export/runs.py). The CLI
    (`voe export PKG --out DIR [--runs RUN...] [--include-answers] [--force]`) prints `exported T tasks, E
    evidence objects[, R runs][, A verifier-only answers] to DIR (content hash H)` and with `--json` the
    ExportSummary."""
    published = published_date(date)  # a bad --date fails before any work
    out = Path(os.path.abspath(out))  # `.` has no name to stage beside
    claim_out(out, markers=CRATE_MARKERS, what="export", force=force)
    views, evidence_by_id, answers, manifest = load_package(pkg)
    evidence = list(evidence_by_id.values())  # load_package keeps the file's order
    loaded = load_runs(list(runs), manifest, views, include_answers)
    files = {TASKS: dump(tasks_document(views, manifest)), EVIDENCE: dump(evidence_document(evidence))}
    if loaded:
        files[RUNS] = dump(runs_document(loaded, manifest, set(evidence_by_id)))
    verdicts = verdict_nodes(loaded) if include_answers else []
    if include_answers:
        files[ANSWERS] = dump(answers_document(views, answers, manifest, verdicts))
    data_files = {n: (pkg / n).read_bytes() for n in PACKAGE_FILES if n != "answers.jsonl" or include_answers}
    staging = fresh_folder(out, ".part")
    try:
        for name, data in {**files, **data_files}.items():
            (staging / name).write_bytes(data)
        training: dict[str, bytes] = {}
        trained: dict[str, int] = {}
        if loaded and include_answers:  # the sets hold the reference's moves and the labels: verifier-only
            info = export_training(pkg, list(runs), staging / TRAINING)
            trained = {fmt: sum(splits.values()) for fmt, splits in info.counts.items()}
            training = {str(p.relative_to(staging)): p.read_bytes() for p in sorted((staging / TRAINING).rglob("*"))
                        if p.is_file() and p.parent.name != "schema"}
        report = validate(staging)
        digest, _ = content_hash(staging)
        counts = {"tasks": len(views), "evidence": len(evidence), "answers": len(answers) if include_answers else 0,
                  "runs": len(loaded), "trajectories": sum(len(r.trajectories) for r in loaded),
                  "verdicts": len(verdicts)}
        croissant = dump(croissant_metadata(data_files, manifest, published, license_url,
                                             f"Realized-only decision tasks of voe package {manifest.content_hash}: "
                                             f"{len(views)} tasks over {len(evidence)} evidence objects, as JSON Lines.",
                                             {n: d for n, d in training.items() if n.endswith(".jsonl")}))
        (staging / CROISSANT).write_bytes(croissant)
        (staging / CRATE).write_bytes(dump(crate_metadata(files, digest, manifest, counts, published, license_url,
                                                           data_files, croissant, training, publisher)))
        swap_in(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return ExportSummary(out=str(out), tasks=len(views), evidence=len(evidence), answers=counts["answers"],
                         runs=counts["runs"], trajectories=counts["trajectories"], verdicts=counts["verdicts"],
                         include_answers=include_answers, triples=report.triples, content_hash=digest,
                         training=trained,
                         package_content_hash=manifest.content_hash,
                         publisher=publisher.id if publisher else None,
                         license=[n["@id"] for n in _licenses(manifest, license_url)[1]],
                         files={n: hashlib.sha256(d).hexdigest() for n, d in sorted(files.items())})
