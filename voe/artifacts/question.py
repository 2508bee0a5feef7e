"""The question's template, and its exact parse (DESIGN §7: the gate's probes find the subject and the support by
the template, never by a title's substring).

The compiler writes every template question as FRAMING then INSTRUCTIONS. A policy-visible reading of it gives the
menu entry the packet is on (the subject), the entries it is to rest on (the support) and whether it leaves the
calibration to the agent. Titles are matched whole: `Cross_Sections` is not named by a question on
`Cross_Sections/Tracks_Results`. A question an annotator rewrote (compiler/annotate.py) is read by the titles it
names, longest first, each span of the text used once; that is as much as an adversary can parse of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from voe.artifacts.package import TaskView

FRAMING = "Workflow: {workflow}. A risk packet on {subject} is about to be assembled from this archive{support}."
SUBJECT_OF = " (in {title})"  # "<file of the item> (in <item title>)"
SUPPORT = "; it is to rest on {subject} together with {listed}"
CALIBRATION = "the calibration the archive names for its measurement"
INSTRUCTIONS = (
    " Request the evidence you need from the menu (each entry names its request action), then end with exactly "
    "one terminal action: submit_risk_packet (payload: exactly the evidence ids the packet rests on), "
    "flag_source_defect (the item the packet is on has a provenance or checkability defect; payload: the "
    "defective items, nothing clean), localize_missing_evidence (the archive cannot provide an item the packet "
    "needs; payload: the missing items only), or abstain_or_escalate (the packet cannot be completed as stated: "
    "an item it must rest on has a defect that nothing in the archive resolves, or its items conflict)."
)
QUESTION = FRAMING + INSTRUCTIONS  # the deterministic template's whole question
_HEAD = re.compile(r"A risk packet on (?P<subject>.+?) is about to be assembled from this archive(?P<rest>.*)$", re.S)


def listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


@dataclass(frozen=True)
class Reading:
    """What the question names, as menu evidence ids: the subject, the support (in the question's order), and
    whether the packet is to rest on a calibration the question leaves to the agent. `template`: read by the
    template (else by whole titles)."""

    subject: str | None
    support: list[str] = field(default_factory=list)
    calibration: bool = False
    template: bool = False

    @property
    def named(self) -> list[str]:
        return list(dict.fromkeys([*([self.subject] if self.subject else []), *self.support]))


def read(view: TaskView) -> Reading:
    return _by_template(view) or _by_titles(view)


def _framing(question: str) -> str:
    return question[: -len(INSTRUCTIONS)] if question.endswith(INSTRUCTIONS) else question


def _by_template(view: TaskView) -> Reading | None:
    m = _HEAD.search(_framing(view.question))
    if m is None:
        return None
    about, rest = m.group("subject"), m.group("rest")
    titles: dict[str, list[str]] = {}
    for e in view.menu:
        titles.setdefault(e.title, []).append(e.evidence_id)
    subject = _subject(about, titles)
    if subject is None:
        return None
    title, sid = subject
    if rest in ("", "."):
        return Reading(sid, template=True)
    head = SUPPORT.format(subject=title, listed="")
    if not rest.startswith(head) or not rest.endswith("."):
        return None
    parts = _partition(rest[len(head):-1], set(titles) | {CALIBRATION})
    if parts is None:
        return None
    support = [x for p in parts if p != CALIBRATION for x in titles[p][:1] if x != sid]
    return Reading(sid, support, CALIBRATION in parts, template=True)


def _subject(about: str, titles: dict[str, list[str]]) -> tuple[str, str] | None:
    """The entry the framing is on: its title whole, or "<file> (in <title>)"; the longest title that fits."""
    fits = [t for t in titles if t and (about == t or about.endswith(SUBJECT_OF.format(title=t)))]
    if not fits:
        return None
    best = max(fits, key=len)
    return best, titles[best][0]


def _partition(text: str, names: set[str]) -> list[str] | None:
    """`text` as "A", "A and B" or "A, B and C" over whole names (titles may hold commas and "and")."""
    def split(rest: str, last: bool) -> list[str] | None:
        if last:
            return [rest] if rest in names else None
        for n in sorted((n for n in names if rest.startswith(n)), key=len, reverse=True):
            tail = rest[len(n):]
            for sep, final in ((", ", False), (" and ", True)):
                if tail.startswith(sep) and (more := split(tail[len(sep):], final)) is not None:
                    return [n, *more]
        return None
    return split(text, True) or split(text, False)


def _by_titles(view: TaskView) -> Reading:
    """Whole titles found in the question, longest first, no two on one span; the subject is the first named."""
    text = _framing(view.question)
    taken: list[tuple[int, int]] = []
    hits: list[tuple[int, str]] = []
    for e in sorted((e for e in view.menu if e.title), key=lambda e: (-len(e.title), e.entry_id)):
        for m in re.finditer(re.escape(e.title), text):
            span = (m.start(), m.end())
            if any(a < span[1] and span[0] < b for a, b in taken):
                continue
            taken.append(span)
            hits.append((m.start(), e.evidence_id))
            break
    ids = [eid for _, eid in sorted(hits)]
    ids = list(dict.fromkeys(ids))
    return Reading(ids[0] if ids else None, ids[1:], CALIBRATION in text)
