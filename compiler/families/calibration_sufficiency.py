"""calibration_sufficiency: a clean archived subject whose measurement the archive names a calibration for:
items that are, by their own title or the record's description of them, a calibration of that measurement (a
beam profile for absorptance, a certified reference material for a composition, an uncertainty analysis of the
data, a file named as a calibration), each clean. The question names the subject and its readme and leaves the
calibration to the agent: pull it all, then submit all of it. A workflow where no item is named as the
calibration of a subject's measurement yields nothing here (a thermocouple log calibrates a thermal model, not
an NC program)."""

from __future__ import annotations

import re
from typing import Any

from voe.artifacts.package import Family
from voe.compiler.families.base import FamilySpec, Moment, Skip, Subject, family, rule, submit_packet

# The measurands a text names: stems matched at word starts, each with the name it is reported under.
MEASURANDS: dict[str, re.Pattern[str]] = {
    "absorptance": re.compile(r"\babsorp|\babsorbed\b", re.I),
    "temperature": re.compile(r"\btemperature|\bthermocouple|\bthermal\b|\bpyromet", re.I),
    "composition": re.compile(r"\bcompositi|\bchemical analysis", re.I),
    "hardness": re.compile(r"\bhardness", re.I),
    "porosity": re.compile(r"\bporosity|\bdensity\b", re.I),
    "strain": re.compile(r"\bstrain\b|\bresidual stress|\bdiffraction", re.I),
    "dimensions": re.compile(r"\bprofilometr|\bdimension|\bsurface height", re.I),
}
# What makes an item a calibration, by the archive's own words, and the measurands it calibrates (None: the
# ones its own title and description name).
ROLES: tuple[tuple[re.Pattern[str], frozenset[str] | None], ...] = (
    (re.compile(r"beam[ _-]?profile", re.I), frozenset({"absorptance"})),  # the delivered power's distribution
    (re.compile(r"uncertainty[ _-]?(analysis|budget)", re.I), None),
    (re.compile(r"(certified|standard)[ _-]?reference[ _-]?material|\bcrm\b", re.I), None),
    (re.compile(r"\bcalibration\b", re.I), None),
)


def measurands(text: str) -> set[str]:
    return {name for name, pattern in MEASURANDS.items() if pattern.search(text)}


def text_of(row: dict[str, Any]) -> str:
    return " ".join(str(row.get(k) or "") for k in ("title", "filepath", "description")).replace("_", " ")


def calibrates(row: dict[str, Any]) -> set[str]:
    """The measurands an item is a calibration of, by its own title and the record's description of it."""
    text = text_of(row)
    out: set[str] = set()
    for pattern, fixed in ROLES:
        if pattern.search(text):
            out |= set(fixed) if fixed is not None else measurands(text)
    return out


@rule(Family.CALIBRATION_SUFFICIENCY, "calibrated",
      gold="submit_risk_packet [subject, support, calibration]")
def calibrated(s: Subject) -> Moment | Skip | None:
    """The packet's calibration is named by the archive: submit the subject, its support and all of it."""
    if s.shape != "calibration" or not s.calibrators or s.cat.objects[s.evidence_id].status != "archived":
        return None
    facts = [f"clean:{s.evidence_id}", "calibration:" + "|".join(sorted(s.calibrators))]
    return submit_packet(Family.CALIBRATION_SUFFICIENCY, s, facts)


family(FamilySpec(Family.CALIBRATION_SUFFICIENCY, priority=2, doc=__doc__ or ""))
