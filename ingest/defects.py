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
- `missing_checksum` (rule `nerdm.datafile.checksum`): a DataFile with no declared checksum.
- `media_type_mismatch` (rule `nerdm.media_type`): the declared mediaType is not one the file extension
  allows (table in `ingest/media_types.py`; `application/octet-stream` is unspecific, never wrong).
- `schema_violation` (rule `nerdm.schema`): the record or a component fails the NERDm JSON schemas in
  `../shared/archives/schemas/` (validated offline: the core `_schema` and every `_extensionSchemas` we have).

A payload the record lists but we do not hold is a status of the component (`held: false`), not a defect.
"""

from __future__ import annotations

from enum import StrEnum


class DefectKind(StrEnum):
    SIDECAR_MARKED_INVALID = "sidecar_marked_invalid"
    SIDECAR_CHECKSUM_MISMATCH = "sidecar_checksum_mismatch"
    SIDECAR_TARGET_MISSING = "sidecar_target_missing"
    CHECKSUM_MISMATCH = "checksum_mismatch"
    SIZE_MISMATCH = "size_mismatch"
    UNREADABLE_FILE = "unreadable_file"
    MISSING_CHECKSUM = "missing_checksum"
    MEDIA_TYPE_MISMATCH = "media_type_mismatch"
    SCHEMA_VIOLATION = "schema_violation"


RULES: dict[str, DefectKind] = {
    "nerdm.sidecar.valid_flag": DefectKind.SIDECAR_MARKED_INVALID,
    "nerdm.sidecar.bytes": DefectKind.SIDECAR_CHECKSUM_MISMATCH,
    "nerdm.sidecar.declared": DefectKind.SIDECAR_CHECKSUM_MISMATCH,
    "nerdm.sidecar.describes": DefectKind.SIDECAR_TARGET_MISSING,
    "file.sha256": DefectKind.CHECKSUM_MISMATCH,
    "file.size": DefectKind.SIZE_MISMATCH,
    "file.read": DefectKind.UNREADABLE_FILE,
    "nerdm.datafile.checksum": DefectKind.MISSING_CHECKSUM,
    "nerdm.media_type": DefectKind.MEDIA_TYPE_MISMATCH,
    "nerdm.schema": DefectKind.SCHEMA_VIOLATION,
}
