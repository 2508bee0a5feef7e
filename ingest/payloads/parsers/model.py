"""What every parser returns: facts, each with an exact location in the file, and file-level defects."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Role(StrEnum):
    """How a fact is used later (DESIGN §3 evidence kinds)."""

    PROCESS_RECORD = "process_record"
    CHARACTERIZATION = "characterization"
    CALIBRATION = "calibration_artifact"
    SOURCE_DOCUMENT = "source_document"
    METADATA = "metadata"


@dataclass
class Fact:
    """One extracted value and where it sits. `locator` is unique within the file and human-readable:
    `p2:l5` (PDF page/line), `Sheet1!B7` (cell), `L12:C3` (CSV line/column), `L40` (text line),
    `/AMBuild[1]/Part[2]` (XPath)."""

    kind: str  # pdf_line | pdf_word | pdf_table_cell | cell | csv_cell | line | xml_element | step_header
    locator: str
    text: str
    name: str | None = None
    unit: str | None = None
    value: Any = None
    role: Role = Role.METADATA
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def span_sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


@dataclass
class FileDefect:
    rule: str
    detail: str
    locator: str | None = None


@dataclass
class Parsed:
    format: str
    role: Role
    facts: list[Fact] = field(default_factory=list)
    defects: list[FileDefect] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    pages: int = 0
    cells: int = 0
