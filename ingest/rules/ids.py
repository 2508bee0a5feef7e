"""Deterministic node ids: the same input always yields the same id, so re-ingest is a no-op."""

from __future__ import annotations


def record_id(ark: str, version: str | None) -> str:
    return f"record:{ark}@{version or 'unversioned'}"


def component_id(rec_id: str, nerdm_id: str) -> str:
    return f"component:{rec_id.removeprefix('record:')}/{nerdm_id}"


def file_id(sha256: str) -> str:
    return f"file:sha256:{sha256}"


def location_id(file_sha256: str, pointer: str) -> str:
    return f"loc:{file_sha256}#{pointer}"


def defect_id(kind: str, subject_id: str, pointer: str) -> str:
    return f"defect:{kind}:{subject_id}#{pointer}"


def archive_id(host: str) -> str:
    return f"archive:{host}"


def evidence_id(rec_id: str, filepath: str) -> str:
    """Canonical evidence id: the record (identifier@version) and the item's path in it. The version keeps two
    versions of a record, or a reconstructed catalog and the real record, from sharing evidence nodes."""
    return f"ev:{rec_id.removeprefix('record:')}/{filepath.strip('/')}"
