"""The mapping from archive items to evidence objects: the one place its rules are written.

Granularity: one `Evidence` per subcollection (a folder of a record: its data files are what an agent
receives when it asks for that object) and one per root-level data file. Checksum sidecars are
integrity metadata of their targets, never evidence of their own. Each Evidence is `EVIDENCED_BY` its
component and `LOCATED_AT` the facts that define it (the component's entry in the record file).
Canonical id: `ev:<record identifier>@<version>/<path>` (the version keeps record versions apart).

Kind, first rule that matches (path, title, media type and parsed format, case-insensitive):

1. `calibration` in the path or title -> `calibration_artifact` (AM Bench ships calibration data as its
   own split, e.g. `calibration data.zip`, `calibration_data/...`).
2. a thermocouple logger export -> `calibration_artifact`: AM Bench hands in-situ temperature histories
   to modellers as calibration data for thermal models (AMB2025-05 bead prints).
3. the parsed format is an NC program, a STEP model or a PrintTracker build log -> `process_record`.
4. a readme, licence, submission template, notebook, a PDF/text document or a release file summary
   (parsed format `release_summary`) -> `source_document`.
5. build information by name (build/process/g-code in the path or title) -> `process_record`.
6. everything else (measurement results, answers, images, thermocouple exports) -> `characterization`.

References: each entry of a NERDm record's `references` (a related dataset, a challenge description) is
an Evidence with `provenance: "referenced"` and no EVIDENCED_BY: the archive names it but holds no
acquisition path, so a request for it answers `unavailable`. Kind: a dataset whose title or address
says calibration -> `calibration_artifact`; another dataset -> `characterization`; anything else
(papers, descriptions) -> `source_document`. Reconstructed catalog entries (FACTS.md) are likewise
`available: false`: they describe NIST bytes we do not hold.

Release notes (ingest/sources/releases.py, for a plain folder holding AM Bench release file summaries, e.g.
`ambench-releases/`): for each summary `A to B` (ingest/payloads/parsers/release.py says how removed, renamed,
added and changed are read off its table), one Evidence per basename it lists as removed, renamed (the
old name), a rename target (the new name) or changed; none for added or unchanged files. Id
`evidence_id(record, "<summary relpath>#<basename>")`, kind by these rules on the basename alone, title
the basename, `provenance: "release_notes"`, `held: false` (we hold no bytes of the file), no
EVIDENCED_BY (no local component). Properties: `release_status` (removed | renamed | rename_target |
changed), `release_from` (A), `release_to` (B), `sha1` and `size` of the newest row listing the file,
`releases` (the versions listed for it, oldest first), `renamed_to` / `renamed_from`, `listed_in` (the
summary's relpath), `current_release` (the newest release the summary's table lists) and `available`:
true exactly when the current release lists the file (a removed or renamed file has no acquisition path;
a rename target or changed file is in the release). So a file a release removed that a later release
holds again is available, and a file changed in 2.0.0 that 2.1.0 removed is not. LOCATED_AT: the
summary's `html_row` facts for the file, and every `line` fact of a changelog text file of the record
(name starting `changelog`) that names the basename, with or without `.xml`, as a whole name.
"""

from __future__ import annotations

import re

DOC_RE = re.compile(r"readme|licen[cs]e|template|\.ipynb$|\.pdf$|\.txt$|\.md$", re.I)
PROCESS_RE = re.compile(r"build|process|g-code|gcode|\.eia$|\.step$|\.stp$|printtracker", re.I)
PROCESS_FORMATS = {"nc", "step", "printtracker_xlsx"}
DOC_FORMATS = {"release_summary"}


def evidence_kind(path: str, title: str | None, media_type: str | None, fmt: str | None,
                  is_folder: bool = False) -> tuple[str, str]:
    """(kind, the rule that decided it)."""
    text = f"{path} {title or ''}"
    if "calibration" in text.lower():
        return "calibration_artifact", "calibration"
    if fmt == "thermocouple_xlsx":
        return "calibration_artifact", "thermocouple"
    if fmt in PROCESS_FORMATS:
        return "process_record", "process_format"
    if not is_folder and (fmt in DOC_FORMATS or DOC_RE.search(path)
                          or (media_type or "").startswith(("text/plain", "application/pdf"))
                          and not path.lower().endswith(".csv")):
        return "source_document", "document"
    if PROCESS_RE.search(text):
        return "process_record", "process"
    return "characterization", "default"


def reference_kind(target: str, title: object, types: list[str]) -> tuple[str, str]:
    text = f"{target} {title or ''}".lower()
    if any(t.endswith("Dataset") for t in types):
        if "calibration" in text:
            return "calibration_artifact", "reference_calibration"
        return "characterization", "reference_dataset"
    return "source_document", "reference_document"
