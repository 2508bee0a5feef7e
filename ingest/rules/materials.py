"""The materials a text names: the one place the vocabulary is written.

A record says what its data are of (NERDm `description`: "laser melting of Ti-6Al-4V solid metal"); an item's
own description may name another ("a stationary laser spot on aluminum"). Each entry is a material with the
words archives write for it; a text names a material when one of them occurs as a whole word. `Ti-6Al-4V`
holds "Al" as an element of the alloy, not aluminium: only the words below count.
"""

from __future__ import annotations

import re

MATERIALS: dict[str, re.Pattern[str]] = {
    "aluminium": re.compile(r"\balumin(?:i)?um\b|\bAA ?[1-7]\d{3}\b", re.I),
    "Ti-6Al-4V": re.compile(r"\bTi-?6Al-?4V\b|\bTi ?64\b|\btitanium\b", re.I),
    "nickel alloy 718": re.compile(r"\bIN-?718\b|\binconel[ -]?718\b|\b(?:nickel )?alloy 718\b", re.I),
    "nickel alloy 625": re.compile(r"\bIN-?625\b|\binconel[ -]?625\b|\b(?:nickel )?alloy 625\b", re.I),
    "stainless steel": re.compile(r"\b316 ?L\b|\b17-4 ?PH\b|\bstainless steel\b", re.I),
    "carbon steel": re.compile(r"\b1045[ -]steel\b|\bcarbon steel\b", re.I),
    "copper": re.compile(r"\bcopper\b|\bCuCrZr\b", re.I),
}


def materials(text: str | None) -> set[str]:
    """The materials `text` names (a set of the keys of MATERIALS)."""
    if not text:
        return set()
    return {name for name, pattern in MATERIALS.items() if pattern.search(text)}


def conflict(item_text: str | None, record_text: str | None) -> tuple[set[str], set[str]] | None:
    """(the item's materials, the record's) when the item names materials and the record names others, none
    shared; else None."""
    mine, theirs = materials(item_text), materials(record_text)
    if mine and theirs and not mine & theirs:
        return mine, theirs
    return None
