"""What a measurement's metadata says about its calibration: the one place these rules are written.

Metadata workbooks (the AM Bench `AM-Bench 2022 Measurements.xlsx` and any workbook shaped like it) give each
measurement a row with a `Measurement_identifier` and `Calibration_*` columns. A statement is one non-empty cell
of a calibration column that is not a placeholder (`NA`, `Link`, `text`) or the template's own guidance ("Provide
calibration measurement identifier ..."). What a statement is, first rule that matches:

1. it sits in an identifier column (`Calibration_measurement_identifier`, also misspelled `..._identier`): a
   **reference** to another measurement, resolved against the workbook's measurement identifiers;
2. it is an address (`http://`, `https://`, `globus`): a reference held elsewhere, decides nothing here (the
   archive names it and it resolves outside, like a record's references);
3. it claims a calibration happened (a verb such as calibrated, checked, verified) and gives a date, without
   naming a record of it: a **claim** ("calibrated 2021-02-03", "checked before testing ... calibrated
   8/3/2020");
4. anything else names a calibration record in words ("RR 25 beam profile and power meter measurements",
   "ACCS Force Calibration S/N: 105749"): a **named** calibration, resolved against the workbook's
   measurement identifiers and the record's file names, else held nowhere.

A calibration is only what the archive names as one: a row's calibration columns, never a keyword in a title.
"""

from __future__ import annotations

import re
from enum import StrEnum

PLACEHOLDERS = frozenset({"", "na", "n/a", "n.a.", "none", "null", "-", "--", "link", "text", "tbd", "?"})
# the template's guidance, copied into real sheets above their first measurement
GUIDANCE = re.compile(r"^(provide|enter|describe|decribe|is this|link to|general description)\b|\benter y or n\b",
                      re.I)
ADDRESS = re.compile(r"^(https?://|ftp://)|globus", re.I)
CLAIM_VERB = re.compile(r"\b(re)?(calibrated|checked|verified|validated)\b", re.I)
DATE = re.compile(r"\b(19|20)\d{2}-\d{1,2}(-\d{1,2})?\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b|\b(19|20)\d{2}\b")
MEASUREMENT_ID = re.compile(r"^measurement_?identifier$", re.I)
CALIBRATION_FLAG = re.compile(r"^calibration_y_or_n$", re.I)
CALIBRATION_ID = re.compile(r"^calibration_measurement_ident", re.I)  # "identifier", and the "identier" seen
CALIBRATION_COLUMN = re.compile(r"calibration", re.I)
CALIBRATION_TYPE = re.compile(r"^calibration_type$", re.I)  # what is calibrated (Force), not which calibration
HUMAN_READONLY = re.compile(r"^human_readonly$", re.I)
TEMPLATE_SHEETS = re.compile(r"^(template|example|documentation)\b", re.I)


class Statement(StrEnum):
    REFERENCE = "reference"  # names another measurement by its identifier
    NAMED = "named"  # names a calibration record in words
    CLAIM = "claim"  # says a calibration happened, names no record
    ELSEWHERE = "elsewhere"  # an address outside the archive


def normalized(text: str) -> str:
    return " ".join(str(text).split())


def is_placeholder(text: str) -> bool:
    t = normalized(text)
    return t.lower() in PLACEHOLDERS or bool(GUIDANCE.search(t))


def classify(column: str, text: str) -> Statement | None:
    """What a calibration cell states, or None when it states nothing (a placeholder, guidance, a Y/N flag)."""
    t = normalized(text)
    if is_placeholder(t) or not states_calibration(column):
        return None
    if CALIBRATION_ID.match(column):
        return Statement.REFERENCE
    if ADDRESS.search(t):
        return Statement.ELSEWHERE
    if CLAIM_VERB.search(t) and DATE.search(t):
        return Statement.CLAIM
    if _is_number(t):
        return None  # a spacing or a count in a calibration column, not a statement of which calibration
    return Statement.NAMED


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def is_calibration_column(column: str) -> bool:
    return bool(CALIBRATION_COLUMN.search(column)) and not CALIBRATION_FLAG.match(column)


def states_calibration(column: str) -> bool:
    """A column whose cells can say which calibration a measurement rests on."""
    return is_calibration_column(column) and not CALIBRATION_TYPE.match(column)


def is_template_sheet(title: str) -> bool:
    return bool(TEMPLATE_SHEETS.match(title.strip()))
