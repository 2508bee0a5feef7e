"""What a record's readme says that its record contradicts: the one place these rules are written.

A readme is a held text file of the record whose name says readme. Read line by line:

- an identifier of the repository (a DOI `10.18434/...`, an ark `ark:/88434/...`) that is neither the record's
  own (its @id, ediid, DOI) nor one its `references` list: the readme names another record as if it were this one
  (`readme_cites_other_record`);
- a file name (a token with an extension the record's own files use) that no component of the record has, while a
  component has it under another name (the same name but for case, separators or extension):
  `readme_names_other_file`;
- a file name no component has under any name, when the readme lists the record's files (at least
  MIN_LISTED of its names are the record's own): `readme_names_absent_file`.

Each is a finding on the readme, located at its line: the readme misidentifies what the record holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

README = re.compile(r"read_?me", re.I)
IDENTIFIER = re.compile(r"(?:doi:\s*|https?://(?:dx\.)?doi\.org/)?(10\.18434/[A-Za-z0-9][A-Za-z0-9._/-]*[A-Za-z0-9])"
                        r"|(ark:/88434/[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9])", re.I)
FILE_TOKEN = re.compile(r"(?<![\w./-])([A-Za-z0-9][\w.\- ]{0,120}?\.([A-Za-z0-9]{1,5}))(?![\w.-])")
MIN_LISTED = 3


@dataclass(frozen=True)
class Finding:
    rule: str  # nerdm.readme.identifier | nerdm.readme.filename | nerdm.readme.absent
    line: int
    text: str
    detail: str


def _norm_id(value: str) -> str:
    v = value.lower().strip().rstrip(".")
    v = re.sub(r"^(doi:\s*|https?://(dx\.)?doi\.org/)", "", v)
    return re.sub(r"/pdr:v(/.*)?$", "", v)


def _key(name: str) -> str:
    stem = name.rsplit(".", 1)[0]
    return re.sub(r"[\s_\-.]+", "", stem.lower())


def read(lines: Iterable[tuple[int, str]], own: Iterable[str], referenced: Iterable[str],
         files: Iterable[str]) -> list[Finding]:
    """The findings of a readme's lines (line number, text), given the record's own identifiers, the identifiers
    its references list, and its files' paths."""
    mine = {_norm_id(x) for x in own if x}
    cited = {_norm_id(x) for x in referenced if x}
    names = {f.rsplit("/", 1)[-1] for f in files}
    exts = {x.rsplit(".", 1)[-1].lower() for x in names if "." in x}
    by_key: dict[str, list[str]] = {}
    for x in names:
        by_key.setdefault(_key(x), []).append(x)
    text = list(lines)
    out: list[Finding] = []
    for n, line in text:
        for m in IDENTIFIER.finditer(line):
            ident = _norm_id(m.group(1) or m.group(2))
            if ident not in mine and not any(ident in c or c in ident for c in cited) \
                    and not any(ident.endswith(x.split("/")[-1]) for x in mine if "mds" in x):
                out.append(Finding("nerdm.readme.identifier", n, line,
                                   f"the readme cites {m.group(0).strip()!r}, which is not this record's identifier "
                                   "and not among its references"))
    tokens = [(n, line, m.group(1).strip()) for n, line in text for m in FILE_TOKEN.finditer(line)
              if m.group(2).lower() in exts]
    listed = sum(1 for _, _, t in tokens if t.rsplit("/", 1)[-1] in names)
    for n, line, token in tokens:
        name = token.rsplit("/", 1)[-1]
        if name in names:
            continue
        near = sorted(x for x in by_key.get(_key(name), []) if x != name)
        if near:
            out.append(Finding("nerdm.readme.filename", n, line,
                               f"the readme names {name!r}; the record lists it as {near[0]!r}"))
        elif listed >= MIN_LISTED:
            out.append(Finding("nerdm.readme.absent", n, line,
                               f"the readme lists {name!r} among the record's files; the record has no file of that "
                               "name"))
    return out
