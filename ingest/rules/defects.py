"""The defect kinds ingest records, and the rule that detects each. This is the one place they are defined.

Rules (NERDm records):

- `sidecar_marked_invalid` (rule `nerdm.sidecar.valid_flag`): a ChecksumFile whose NERDm entry says
  `"valid": false`.
- `sidecar_checksum_mismatch`: a ChecksumFile whose checksum record disagrees with its target's declared
  checksum. When we hold the sidecar's bytes (rule `nerdm.sidecar.bytes`), its content with surrounding
  whitespace removed (first token, so `sha256sum` lines work too) must equal the target's declared hex
  digest. When we do not (rule `nerdm.sidecar.declared`), we use the NIST sidecar format, which is the
  target's 64-character lowercase hex digest with no newline: the sidecar's own declared sha256 must equal
  sha256(target digest as ASCII). A target with no declared checksum cannot be checked (it gets
  `missing_checksum` instead).
- `sidecar_target_missing` (rule `nerdm.sidecar.describes`): `describes` names no component of the record.
- `checksum_mismatch` (rule `file.sha256`): bytes we hold whose recomputed sha256 differs from the declared one.
- `size_mismatch` (rule `file.size`): bytes we hold whose size differs from the declared size (a truncated
  download shows up here and as `checksum_mismatch`).
- `unreadable_file` (rule `file.read`): a payload we should hold that cannot be read (a folder in its place,
  a permission error).
- RO-Crates (ingest/sources/rocrate.py): `entity_path_mismatch` (rule `crate.file.misnamed`: a File entity names
  a path the container does not hold while a member of that name sits elsewhere in the crate), `described_not_held`
  (rule `crate.file.absent`: no member of that name at all), `undescribed_member` (rule `crate.member.undescribed`:
  a member no entity describes, the crate's own packaging excepted), `id_escapes_root` (rule `crate.file.escapes`:
  an `@id` that resolves outside the crate root; nothing outside is read), and `size_mismatch`, `checksum_mismatch`,
  `media_type_mismatch` for a member against its entity's `contentSize`, `sha256`, `encodingFormat` (rules
  `crate.size`, `crate.sha256`, `crate.encoding_format`). A digest list inside the crate (a bag's manifests when the
  crate is its `data/`, `SHA256SUMS`-style lists, `.sha256` sidecars) is a second statement: `checksum_mismatch`
  (rule `crate.manifest`: a line against the bytes it names), `described_not_held` (rule `crate.manifest.absent`:
  a line for a path the container does not hold), `id_escapes_root` (rule `crate.manifest.escapes`: a line whose
  path leaves the crate root, on the Record; nothing is read). Where one statement agrees with the bytes and the
  other does not, the archive resolves the disagreeing one (cypher/compiler/resolved_defects.cypher).
- Readmes (ingest/rules/readmes.py): `readme_cites_other_record` (rule `nerdm.readme.identifier`: the readme gives a
  repository identifier that is neither the record's nor among its references), `readme_names_other_file` (rule
  `nerdm.readme.filename`: a file name the record lists under another name), `readme_names_absent_file` (rule
  `nerdm.readme.absent`: a readme that lists the record's files lists one the record lacks), each at its line.
- BagIt bags (ingest/sources/bagit.py): `checksum_mismatch` (rules `bag.manifest`, `bag.tagmanifest`: a file
  against its manifest line; `bag.zip.sha256`: a zipped bag against its `.sha256` sidecar), `described_not_held`
  (rule `bag.manifest.absent`: a manifest line for a file the bag does not hold, not fetched, in no other member),
  `undescribed_member` (rule `bag.payload.undescribed`), `payload_oxum_mismatch` (rule `bag.oxum`: bag-info's
  Payload-Oxum against the payload held), `id_escapes_root` (rule `bag.member.escapes`: a zip member outside the
  bag's folder, never read), `checksum_mismatch` (rule `bag.nerdm.sha256`: the NERDm metadata inside the bag
  declares another digest than the bytes have; the payload manifest, when it agrees, resolves it).
- `missing_checksum` (rule `nerdm.datafile.checksum`): a DataFile with no declared checksum where the record
  declares one for another file.
- `no_checksums_declared` (rule `nerdm.datafile.no_checksums`): a DataFile with no declared checksum in a record
  that declares none for any file (the record's practice, not one file's gap).
- `media_type_mismatch` (rule `nerdm.media_type`): the declared mediaType is not one the file extension
  allows, or is a type RFC 4735 reserves for examples (`video/example`), which no real file has (table in
  `ingest/rules/media_types.py`; `application/octet-stream` is unspecific, never wrong, and the platform aliases
  of a type, such as `application/vnd.ms-excel` or `text/plain` for a `.csv`, are allowed).
- `schema_violation` (rule `nerdm.schema`): the record or a component fails the NERDm JSON schemas in
  `../shared/archives/schemas/` (validated offline: the core `_schema` and every `_extensionSchemas` we have).
  A schema that cannot be applied is one too, never a crash (`ingest/sources/nerdm/schema.py`): an
  `_extensionSchemas` URI of a schema we have whose fragment names no definition in it, at that URI's
  pointer; any other failure inside the validator (a `$ref` that resolves nowhere), at the object checked.

Rules (every builder: NERDm records, plain folders, facts catalogs):

- `value_not_storable` (rule `graph.value`): a value the record holds that Neo4j cannot store as it is,
  stored safely instead (`BuilderCore._seal` in `ingest/builder.py`, the one place rows become node
  properties; `voe.graph.storable`): an integer beyond 64 bits (a size of 10^30, a cell value) as its
  decimal text; a string with a lone surrogate (a `\\udcxx` JSON escape with no pair, a file name that is
  not UTF-8) with it written as the `\\udcxx` escape; a map, or a list of mixed, nested or null items
  (`"title": {"x": 1}`, `"mediaType": [1]`), as its canonical JSON text (the schema check reports the
  type as `schema_violation` too); an id or indexed property (id, record_id, filepath, kind, sha256,
  canonical_id, subject) over 4096 UTF-8 bytes (a 9,000-character filepath) as a hashed key: its first 128
  characters, `…sha256:` and the sha256 of the whole text, the full text kept in `<prop>_full` (cut at
  65,536 characters) for filepath, kind and sha256. One defect per value, on the node it came from,
  located at its JSON pointer in the record file (`/components/3/size`), or at its place in a payload
  (a parsed cell's SourceLocation); a plain folder's own values (its name and path) have no location.
- `not_a_regular_file` (rule `file.special`): where a payload should be, the folder holds a symbolic link
  (to a file or a folder, inside or outside the folder), a FIFO, a socket or a device, or the path lies
  under a symlinked folder. Ingest reads only what the folder holds: the link is not followed and the
  special file is not opened, so nothing of the target reaches the graph; the component is not held
  (`status: "not_a_regular_file"`). In a NERDm record the defect is on the component, at
  `/components/N/filepath` (a Subcollection that is a symlink too); in a plain folder the entry is a
  DataFile component (`entry_type` says what it is) and the defect, at `<path>#entry`, has no
  SourceLocation (no bytes at that path to point into).

Refused as input (an InputError naming the file, exit 2, the other paths still ingested): a record file
that nests arrays and objects deeper than 512 levels (`ingest.sources.nerdm.build.MAX_JSON_DEPTH`), a path or a
`nerdm.json` that is a FIFO, socket or device, and a `nerdm.json` inside a given folder that is a symlink
(a path the user names is followed). Any other failure while reading, building or writing one path is
reported for that path (what failed, no traceback; the traceback is logged at debug level).

Rules (plain folders, `ingest/sources/folder.py`): a file named `<target>.sha256` is a ChecksumFile (never evidence)
that DESCRIBES the component of `<target>`, the same path without `.sha256`, when that file is in the folder.

- `sidecar_checksum_mismatch` (rule `folder.sidecar.bytes`): the sidecar's first whitespace-separated token
  (so `sha256sum` lines `<hex>  <name>` work too), compared case-insensitively, is not the target's
  recomputed sha256 (nothing declares one in a plain folder).
- `sidecar_target_missing` (rule `folder.sidecar.describes`): the folder holds no file at the target path.
  A sidecar we cannot read is reported as an unreadable input and not checked.

File contents (issue 3 parsers; the subject is the file's Component):

- `format_mismatch` (rule `format.mismatch`): the bytes are another format than the extension says (an
  `.xlsx` that is really CSV); the file is parsed as what it is.
- `ragged_rows` (rule `csv.ragged`), `malformed_csv` (rule `csv.syntax`).
- `unreadable_workbook` (rule `xlsx.read`); `formula_without_cached_value` (rule `xlsx.formula_without_cache`):
  a cell holding a formula that was never calculated, so its value is not in the file.
- `not_machine_verifiable` (rule `pdf.no_text_layer`): a PDF page (or the whole PDF) with no text layer.
- `encrypted_pdf` (rule `pdf.encrypted`), `corrupt_file` (rule `pdf.corrupt`).
- `xml_not_well_formed` (rule `xml.not_well_formed`), `xml_schema_violation` (rule `xml.schema`): against the
  AM Bench XSDs, with line numbers.
- `step_header_missing` (rule `step.header`).
- `unparseable_file` (rule `file.parse`): a parser failed on the file; the file is still held and hashed.
- `resource_limit` (rule `parse.budget`): parsing the file reached one of the budgets of `ingest/payloads/limits.py`
  (inflated bytes, cells, facts, pages, PDF content or characters, XML depth, field length); the facts found
  before it are kept and the detail names the budget and what was cut ("stopped after 200000 facts (budget
  facts_per_file); lines after L40213 are not located", "a string of 400000000 characters is truncated to 32768").

- `parse_budget_exceeded` (rule `parse.os_limit`): the worker parsing the file passed an operating-system limit
  (`VOE_LIMIT_PARSE_MEMORY`, `_CPU_SECONDS`, `_WALL_SECONDS`; ingest/payloads/parse_ahead.py) and was stopped; the
  file is held and hashed, none of its facts located.
- `changed_during_ingest` (rule `file.changed`): the file at a payload's path was swapped (for a link, another
  file) or rewritten between its hash and its parse; nothing of it is parsed.

A payload the record lists but we do not hold is a status of the component (`held: false`), not a defect.

Stated as facts (`STATED_AS_FACTS`): what a parser found in a held file's bytes (the file-content rules
above) is also what a reviewer would see, so the compiler shows its detail, which each parser words as a
statement of what the bytes hold ("page 3 has no text layer", "Sheet1!B7 holds formula =A7*2 with no cached
value"), never the kind or the rule. The record-level rules are shown as the facts they compare instead
(compiler/observations.py): a checksum file beside the digest it should match, the `valid` flag, the media
type beside the file name.

Not defects (hard negatives; facts that look suspicious and are fine under these rules, and why):

- bytes this copy does not hold, when the record declares their size and digest: a status of our copy
  (`held: false`), not of the archive; the download URL and digest make them checkable.
- a checksum file that agrees with its target (its content, or its declared sha256 under the NIST sidecar
  format): the agreement is the check passing.
- a CSV that begins with a UTF-8 byte order mark or ends its lines in CRLF: both are valid CSV (RFC 4180
  uses CRLF; the BOM is how Excel marks UTF-8).
- a formula cell with a cached value: the value is in the file.
- `application/octet-stream` for any file: unspecific, never wrong (`ingest/rules/media_types.py`).
- a record reference (a DOI or URL in `references`): the archive names it and it resolves elsewhere; not
  holding it is not a gap.
- a file a release renamed (ingest/sources/releases.py): the name is gone, the content is in the release under its
  new name; and a file a release changed: the current release holds the corrected bytes. A file a release
  removed with no successor of its name is a gap (`missing_evidence`), not a defect.
- a reconstructed catalog entry (FACTS.md): facts about records NIST publishes; not NIST bytes, not a gap.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class DefectKind(StrEnum):
    SIDECAR_MARKED_INVALID = "sidecar_marked_invalid"
    SIDECAR_CHECKSUM_MISMATCH = "sidecar_checksum_mismatch"
    SIDECAR_TARGET_MISSING = "sidecar_target_missing"
    CHECKSUM_MISMATCH = "checksum_mismatch"
    SIZE_MISMATCH = "size_mismatch"
    UNREADABLE_FILE = "unreadable_file"
    MISSING_CHECKSUM = "missing_checksum"
    NO_CHECKSUMS_DECLARED = "no_checksums_declared"
    MEDIA_TYPE_MISMATCH = "media_type_mismatch"
    SCHEMA_VIOLATION = "schema_violation"
    FORMAT_MISMATCH = "format_mismatch"
    RAGGED_ROWS = "ragged_rows"
    MALFORMED_CSV = "malformed_csv"
    UNREADABLE_WORKBOOK = "unreadable_workbook"
    FORMULA_WITHOUT_CACHED_VALUE = "formula_without_cached_value"
    NOT_MACHINE_VERIFIABLE = "not_machine_verifiable"
    ENCRYPTED_PDF = "encrypted_pdf"
    CORRUPT_FILE = "corrupt_file"
    XML_NOT_WELL_FORMED = "xml_not_well_formed"
    XML_SCHEMA_VIOLATION = "xml_schema_violation"
    STEP_HEADER_MISSING = "step_header_missing"
    UNPARSEABLE_FILE = "unparseable_file"
    RESOURCE_LIMIT = "resource_limit"
    PARSE_BUDGET_EXCEEDED = "parse_budget_exceeded"
    CHANGED_DURING_INGEST = "changed_during_ingest"
    VALUE_NOT_STORABLE = "value_not_storable"
    NOT_A_REGULAR_FILE = "not_a_regular_file"
    ENTITY_PATH_MISMATCH = "entity_path_mismatch"
    DESCRIBED_NOT_HELD = "described_not_held"
    UNDESCRIBED_MEMBER = "undescribed_member"
    ID_ESCAPES_ROOT = "id_escapes_root"
    PAYLOAD_OXUM_MISMATCH = "payload_oxum_mismatch"
    README_CITES_OTHER_RECORD = "readme_cites_other_record"
    README_NAMES_OTHER_FILE = "readme_names_other_file"
    README_NAMES_ABSENT_FILE = "readme_names_absent_file"


RULES: dict[str, DefectKind] = {
    "nerdm.sidecar.valid_flag": DefectKind.SIDECAR_MARKED_INVALID,
    "nerdm.sidecar.bytes": DefectKind.SIDECAR_CHECKSUM_MISMATCH,
    "nerdm.sidecar.declared": DefectKind.SIDECAR_CHECKSUM_MISMATCH,
    "nerdm.sidecar.describes": DefectKind.SIDECAR_TARGET_MISSING,
    "folder.sidecar.bytes": DefectKind.SIDECAR_CHECKSUM_MISMATCH,
    "folder.sidecar.describes": DefectKind.SIDECAR_TARGET_MISSING,
    "file.sha256": DefectKind.CHECKSUM_MISMATCH,
    "file.size": DefectKind.SIZE_MISMATCH,
    "file.read": DefectKind.UNREADABLE_FILE,
    "nerdm.datafile.checksum": DefectKind.MISSING_CHECKSUM,
    "nerdm.datafile.no_checksums": DefectKind.NO_CHECKSUMS_DECLARED,
    "nerdm.media_type": DefectKind.MEDIA_TYPE_MISMATCH,
    "nerdm.schema": DefectKind.SCHEMA_VIOLATION,
    "format.mismatch": DefectKind.FORMAT_MISMATCH,
    "csv.ragged": DefectKind.RAGGED_ROWS,
    "csv.syntax": DefectKind.MALFORMED_CSV,
    "xlsx.read": DefectKind.UNREADABLE_WORKBOOK,
    "xlsx.formula_without_cache": DefectKind.FORMULA_WITHOUT_CACHED_VALUE,
    "pdf.no_text_layer": DefectKind.NOT_MACHINE_VERIFIABLE,
    "pdf.encrypted": DefectKind.ENCRYPTED_PDF,
    "pdf.corrupt": DefectKind.CORRUPT_FILE,
    "xml.not_well_formed": DefectKind.XML_NOT_WELL_FORMED,
    "xml.schema": DefectKind.XML_SCHEMA_VIOLATION,
    "step.header": DefectKind.STEP_HEADER_MISSING,
    "file.parse": DefectKind.UNPARSEABLE_FILE,
    "parse.budget": DefectKind.RESOURCE_LIMIT,
    "parse.os_limit": DefectKind.PARSE_BUDGET_EXCEEDED,
    "file.changed": DefectKind.CHANGED_DURING_INGEST,
    "graph.value": DefectKind.VALUE_NOT_STORABLE,
    "file.special": DefectKind.NOT_A_REGULAR_FILE,
    "crate.file.misnamed": DefectKind.ENTITY_PATH_MISMATCH,
    "crate.file.absent": DefectKind.DESCRIBED_NOT_HELD,
    "crate.member.undescribed": DefectKind.UNDESCRIBED_MEMBER,
    "crate.file.escapes": DefectKind.ID_ESCAPES_ROOT,
    "crate.size": DefectKind.SIZE_MISMATCH,
    "crate.sha256": DefectKind.CHECKSUM_MISMATCH,
    "crate.encoding_format": DefectKind.MEDIA_TYPE_MISMATCH,
    "crate.manifest": DefectKind.CHECKSUM_MISMATCH,
    "crate.manifest.absent": DefectKind.DESCRIBED_NOT_HELD,
    "crate.manifest.escapes": DefectKind.ID_ESCAPES_ROOT,
    "bag.manifest": DefectKind.CHECKSUM_MISMATCH,
    "bag.tagmanifest": DefectKind.CHECKSUM_MISMATCH,
    "bag.manifest.absent": DefectKind.DESCRIBED_NOT_HELD,
    "bag.payload.undescribed": DefectKind.UNDESCRIBED_MEMBER,
    "bag.oxum": DefectKind.PAYLOAD_OXUM_MISMATCH,
    "bag.zip.sha256": DefectKind.CHECKSUM_MISMATCH,
    "bag.nerdm.sha256": DefectKind.CHECKSUM_MISMATCH,
    "bag.member.escapes": DefectKind.ID_ESCAPES_ROOT,
    "nerdm.readme.identifier": DefectKind.README_CITES_OTHER_RECORD,
    "nerdm.readme.filename": DefectKind.README_NAMES_OTHER_FILE,
    "nerdm.readme.absent": DefectKind.README_NAMES_ABSENT_FILE,
}

# parser findings whose detail states what the bytes hold (shown to a reviewer; see the module docstring)
STATED_AS_FACTS = frozenset({"format.mismatch", "csv.ragged", "csv.syntax", "xlsx.read", "xlsx.formula_without_cache",
                             "pdf.no_text_layer", "pdf.encrypted", "pdf.corrupt", "xml.not_well_formed", "xml.schema",
                             "step.header", "file.parse", "parse.budget"})


class Decision(StrEnum):
    """What a defect of a kind makes of a packet that rests on the item (GOLDS)."""

    FLAG = "flag_source_defect"  # it breaks provenance or checkability: stop the packet and say which item
    LOCALIZE = "localize_missing_evidence"  # the record attests an item it cannot supply
    NONE = "not_a_defect"  # the item stands: a curator would fix the record, the data are fine (a hard negative)
    UNDECIDED = "undecided"  # a finding of our tools, not of the archive: no decision rests on the item at all


@dataclass(frozen=True)
class Gold:
    decision: Decision
    why: str


# The decision each defect kind leads to, and why, as an AM Bench data curator would put it. A kind marked
# NONE is recorded in the graph and the item stands (it can be a clean subject, and looks odd: a hard
# negative); UNDECIDED marks a finding of our own tools, and an item carrying one is neither a defect subject
# nor a clean one (the compiler leaves it out of packets and menus).
GOLDS: dict[DefectKind, Gold] = {
    DefectKind.SIDECAR_MARKED_INVALID: Gold(Decision.FLAG, "The record itself says the item's checksum file is not "
                                            "valid: nobody can confirm that the bytes a user downloads are the bytes "
                                            "that were published."),
    DefectKind.SIDECAR_CHECKSUM_MISMATCH: Gold(Decision.FLAG, "The checksum file and the digest the record declares "
                                               "for the item disagree: at least one of them is wrong, and the item "
                                               "cannot be verified until a curator says which."),
    DefectKind.SIDECAR_TARGET_MISSING: Gold(Decision.LOCALIZE, "A checksum file attests a file the record does not "
                                            "list: the record names an item it cannot supply."),
    DefectKind.CHECKSUM_MISMATCH: Gold(Decision.FLAG, "The bytes do not match the digest the record publishes: "
                                       "corrupt, truncated or replaced without a new digest."),
    DefectKind.SIZE_MISMATCH: Gold(Decision.FLAG, "The bytes are not the size the record publishes: a truncated or "
                                   "replaced file."),
    DefectKind.UNREADABLE_FILE: Gold(Decision.FLAG, "Where the payload should be there is nothing that can be read."),
    DefectKind.MISSING_CHECKSUM: Gold(Decision.FLAG, "The record publishes digests for its other files and none for "
                                      "this one, so no copy of it can ever be checked against the original."),
    DefectKind.NO_CHECKSUMS_DECLARED: Gold(Decision.NONE, "The record declares no digest for any file (records "
                                           "published before the repository added them): the publisher's practice, "
                                           "the same for every file; a curator asks for digests, the files stand."),
    DefectKind.MEDIA_TYPE_MISMATCH: Gold(Decision.FLAG, "The record declares a type that misidentifies the file (a "
                                         "reserved placeholder such as video/example, or a type of another format): "
                                         "software and people that trust the metadata open it wrongly. A platform "
                                         "alias of the right type is not this."),
    DefectKind.SCHEMA_VIOLATION: Gold(Decision.NONE, "A record that does not follow the NERDm schema to the letter "
                                      "still identifies its items; a curator fixes the record, the data stand."),
    DefectKind.FORMAT_MISMATCH: Gold(Decision.FLAG, "The bytes are another format than the name says: the item is "
                                     "not what the record claims."),
    DefectKind.RAGGED_ROWS: Gold(Decision.NONE, "Rows of different length are common in instrument exports (header "
                                 "blocks, notes); the values are still there to check."),
    DefectKind.MALFORMED_CSV: Gold(Decision.FLAG, "The table cannot be read as CSV: its values cannot be checked."),
    DefectKind.UNREADABLE_WORKBOOK: Gold(Decision.FLAG, "The workbook cannot be opened: its values cannot be "
                                         "checked."),
    DefectKind.FORMULA_WITHOUT_CACHED_VALUE: Gold(Decision.FLAG, "A cell holds a formula that was never calculated: "
                                                  "the value the data stand on is not in the file."),
    DefectKind.NOT_MACHINE_VERIFIABLE: Gold(Decision.FLAG, "A page is an image with no text layer: what it states "
                                            "cannot be checked by a machine."),
    DefectKind.ENCRYPTED_PDF: Gold(Decision.FLAG, "The document is encrypted: its content cannot be read or "
                                   "checked."),
    DefectKind.CORRUPT_FILE: Gold(Decision.FLAG, "The file is corrupt: its content cannot be read."),
    DefectKind.XML_NOT_WELL_FORMED: Gold(Decision.FLAG, "The XML document is not well-formed: no parser reads it."),
    DefectKind.XML_SCHEMA_VIOLATION: Gold(Decision.NONE, "A document that departs from the AM Bench XSD is still "
                                          "readable; the schema evolves between releases (changelog 2.0.0)."),
    DefectKind.STEP_HEADER_MISSING: Gold(Decision.FLAG, "A STEP model without its header is not a valid STEP file: "
                                         "it cannot be identified or opened as one."),
    DefectKind.UNPARSEABLE_FILE: Gold(Decision.UNDECIDED, "One of our parsers failed: a fact about our tools, not about "
                                      "the archive."),
    DefectKind.RESOURCE_LIMIT: Gold(Decision.UNDECIDED, "Our parser stopped at a budget: a fact about our tools."),
    DefectKind.PARSE_BUDGET_EXCEEDED: Gold(Decision.UNDECIDED, "The operating system stopped our parser at a memory, "
                                           "CPU or time limit: a fact about our tools and the file's cost, not about "
                                           "what the archive states."),
    DefectKind.CHANGED_DURING_INGEST: Gold(Decision.UNDECIDED, "The local copy changed while we read it: a fact about "
                                           "this machine's folder, not about the archive."),
    DefectKind.VALUE_NOT_STORABLE: Gold(Decision.UNDECIDED, "A value our graph store cannot hold as it is: a fact about "
                                        "the store (the value is kept as text)."),
    DefectKind.NOT_A_REGULAR_FILE: Gold(Decision.FLAG, "Where a payload should be, the archive holds a link or a "
                                        "special file: the item's bytes are not in the archive to check."),
    DefectKind.ENTITY_PATH_MISMATCH: Gold(Decision.FLAG, "The crate's entity names a path its container does not "
                                          "hold; the bytes sit under another name. Software that follows the "
                                          "metadata finds nothing, and which member the entity means is a guess."),
    DefectKind.DESCRIBED_NOT_HELD: Gold(Decision.LOCALIZE, "The crate describes (or its manifest lists) a file its "
                                        "container does not hold under any name: the item is named and cannot be "
                                        "had from this export."),
    DefectKind.UNDESCRIBED_MEMBER: Gold(Decision.FLAG, "The container holds a file no entity describes: nothing says "
                                        "what it is, where it came from, or that it belongs to the crate."),
    DefectKind.ID_ESCAPES_ROOT: Gold(Decision.FLAG, "The entity's identifier (or a manifest line's path) resolves "
                                     "outside the crate: it points at something the crate cannot vouch for (and voe "
                                     "does not read)."),
    DefectKind.README_CITES_OTHER_RECORD: Gold(Decision.FLAG, "The readme gives an identifier of the repository that "
                                               "is not this record's and not one it references: it describes, or "
                                               "tells readers to cite, another record."),
    DefectKind.README_NAMES_OTHER_FILE: Gold(Decision.FLAG, "The readme names a file the record lists under another "
                                             "name: a reader following the readme looks for a file that is not there "
                                             "and cannot be sure the one that is there is the one meant."),
    DefectKind.README_NAMES_ABSENT_FILE: Gold(Decision.FLAG, "The readme lists, among the record's files, one the "
                                              "record does not have under any name: the readme describes another "
                                              "state of the record than the one published."),
    DefectKind.PAYLOAD_OXUM_MISMATCH: Gold(Decision.FLAG, "The bag's own bag-info states another payload (octets and "
                                           "files) than the bag holds: the bag does not describe itself, so a reader "
                                           "cannot tell a complete transfer from a broken one."),
}

# Facts that look suspicious and are fine: hard negatives. A packet resting on them is submitted (the
# compiler puts them on menus and chooses clean packets among them, so that "stop at anything odd" fails).
HARD_NEGATIVES: tuple[tuple[str, str], ...] = (
    ("bytes this copy does not hold", "A status of our copy (a metadata-only mirror holds none, a full download "
     "all), not of the archive: the record's size and digest make the bytes checkable by anyone who downloads "
     "them."),
    ("a checksum file that agrees with its target", "The agreement is the check passing."),
    ("a platform alias of the right media type (application/vnd.ms-excel or text/plain for a .csv, "
     "application/x-zip-compressed for a .zip, application/octet-stream for anything)",
     "The type Windows or a browser writes for that extension; the file is what its name says."),
    ("a CSV that begins with a UTF-8 byte order mark or ends its lines in CRLF", "Both are valid CSV (RFC 4180 "
     "uses CRLF; the BOM is how Excel marks UTF-8)."),
    ("a formula cell with a cached value", "The value is in the file."),
    ("a record reference (a DOI or URL the record cites)", "The archive names it and it resolves elsewhere; not "
     "holding it is not a gap."),
    ("a file a release renamed, where the release's changelog states the rename", "The name is gone; the content "
     "is in the release under its new name."),
    ("a file a release changed, where the release's changelog names the correction", "The current release holds "
     "the corrected bytes."),
    ("a reconstructed catalog entry (FACTS.md)", "Facts about records NIST publishes; not NIST bytes, not a gap. "
     "Nor is its silence a missing checksum: the listing gave names and sizes, not what the record declares."),
    ("a checksum file the record marks invalid, or that disagrees, beside a byte-identical copy (same declared "
     "digest and size) whose checksum file is valid and agrees",
     "The item's bytes are checkable through the copy; the stale checksum file is the curator's to fix (the "
     "report names it), not a defect of the item."),
    ("a file a release removed, where the changelog item that removes it names the file that replaces it",
     "The content went to the named replacement: a packet rests on it, not on the gap."),
    ("a beam profile, an uncertainty analysis or a file with 'calibrated' in its name beside measurement data",
     "A calibration is only what the archive names as one (a measurement row's calibration cells); a keyword in a "
     "title is not a statement."),
    ("a file a release changed where a changelog item covers the release wholesale (the schema changed, all "
     "blobs replaced) without naming it",
     "The release explained its changes as a batch; whether this file's change is one of them nobody states, so it "
     "decides nothing (neither stated nor unstated)."),
    ("a calibration named by an address outside the archive (a Globus or web link)",
     "The archive names it and it resolves elsewhere, like a record reference: not a gap."),
    ("a file added, renamed (the same bytes under another path) or removed between two versions where no "
     "statement speaks of the versions at all (an export at a later commit with no commit message)",
     "Like a removal or rename no changelog states: nothing says the change is wrong or meant, and an export is a "
     "selection the next one may make otherwise; a file the later version holds is judged as it is, and the "
     "curator's report lists the change. A changed digest at the same path is still an unstated change."),
)


def decision(kind: str) -> Decision:
    """The decision a defect of `kind` leads to (an unknown kind decides nothing)."""
    try:
        return GOLDS[DefectKind(kind)].decision
    except ValueError:
        return Decision.UNDECIDED
