"""Two versions of one archive compared item by item (a record's releases, the same export at successive commits),
and what the version's statement says of the difference. The sources (ingest/sources/nerdm/collection.py,
ingest/sources/rocrate.py) locate each finding; the compiler decides on it (compiler/catalog.py `version_change`).

Each item is a path with what the version declares or holds of it (a digest, a size). Between an earlier and a
later version an item is

- `changed`: both list the path, with another digest or another size (where both give one);
- `renamed`: the earlier version's path is gone and a path only the later one lists has the same digest (and
  the same size where both give one): the bytes moved, nothing was lost or gained. A digest is needed: two
  files of one size are not one file. When several paths share a digest, each gone path pairs with the new
  path of the same file name first, then the first by path;
- `removed`: the earlier path is gone and no new path holds its bytes;
- `added`: a path only the later version lists, which no rename explains.

A statement (a release note, a commit message) covers these changes (`stated`) when it speaks of data or files
("data update", "added new data", "fix file paths"), denies them (`denied`) when it speaks only of metadata
("metadata update", "added keywords"), and `none` when there is no statement or it says neither.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

# a statement speaks of data (covers a change of the files) or only of metadata (denies one)
DATA_WORDS = re.compile(r"(?<!meta)\bdata\b|\bfiles?\b|\bchecksums?\b|\bsizes?\b", re.I)
METADATA_ONLY = re.compile(r"\bmetadata\b|\btags?\b|\bcollection\b|\bkeywords?\b|\btitle\b", re.I)
STATUSES = ("removed", "changed", "renamed", "added")  # the order a finding is reported in

Declared = tuple[str | None, int | None]  # (digest, lower-case hex; size in bytes)


@dataclass
class Changes:
    """What a later version did to the items of the earlier one (paths sorted; renames as (earlier, later))."""

    changed: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.changed or self.renamed or self.removed or self.added)


def _differs(a: Declared, b: Declared) -> bool:
    return bool(a[0] and b[0] and a[0] != b[0]) or (a[1] is not None and b[1] is not None and a[1] != b[1])


def _same_bytes(a: Declared, b: Declared) -> bool:
    return bool(a[0]) and a[0] == b[0] and (a[1] is None or b[1] is None or a[1] == b[1])


def compare(before: Mapping[str, Declared], after: Mapping[str, Declared]) -> Changes:
    """The changes from `before` to `after` (path -> (digest, size)), by the rules above."""
    digests = {k: (v[0].lower() if v[0] else None, v[1]) for k, v in before.items()}
    now = {k: (v[0].lower() if v[0] else None, v[1]) for k, v in after.items()}
    out = Changes(changed=sorted(p for p in digests.keys() & now.keys() if _differs(digests[p], now[p])))
    gone = sorted(digests.keys() - now.keys())
    new = sorted(now.keys() - digests.keys())
    taken: set[str] = set()
    for old in gone:
        same = [p for p in new if p not in taken and _same_bytes(digests[old], now[p])]
        if not same:
            out.removed.append(old)
            continue
        name = posixpath.basename(old)
        target = next((p for p in same if posixpath.basename(p) == name), same[0])
        taken.add(target)
        out.renamed.append((old, target))
    out.added = [p for p in new if p not in taken]
    return out


def coverage(statement: str | None) -> str:
    """`stated`: the statement speaks of data or files; `denied`: it speaks only of metadata; `none`: no statement,
    or one that says neither."""
    if not statement:
        return "none"
    if DATA_WORDS.search(statement):
        return "stated"
    return "denied" if METADATA_ONLY.search(statement) else "none"


def span_coverage(statements: Iterable[str | None]) -> str:
    """A change over several versions is stated when one of their statements speaks of data, denied when every one
    of them is known and denies it, else no statement covers it."""
    kinds = [coverage(s) for s in statements]
    if "stated" in kinds:
        return "stated"
    return "denied" if kinds and all(k == "denied" for k in kinds) else "none"


def status_of(kinds: Iterable[str]) -> str:
    """One status for an item that stands for several paths (a folder the later version still holds): the kind
    when all agree, else `changed` (the folder holds other files than before); a member removed from it changes
    the folder, which is not removed."""
    found = {"changed" if k == "removed" else k for k in kinds}
    return found.pop() if len(found) == 1 else "changed"
