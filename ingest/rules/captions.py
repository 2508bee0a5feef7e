"""Short human names for the Browser (the `caption` property, ontology/browser.grass draws it).

The Browser fits a caption into its node's circle word by word and cuts the first word that does not fit, so a
caption is short (at most CAPTION_MAX characters) and names the thing the way a reviewer would: a file by its base
name, a source location by its place in the file (`p3 (72,540)`, `Sheet1!B7`, `L120-130`, a pointer's tail), a
defect by its kind in words, a record by the start of its title. A caption is a display property only: the
compiler never reads it (the package stays the same bytes), and it is computed from the node's own properties at
ingest (`stamp_rows`), so every way a record is written (whole, streamed, bulk) carries the same one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

from voe.ontology import Label

CAPTION_MAX = 24  # one name: a file's, a location's
WORDS_MAX = 32  # words wrap onto lines of their own: a defect kind, a title
LINE_MAX = 13  # what the middle lines of an 80px circle hold at the style's 10px font
ELLIPSIS = "…"
SEPARATORS = "_-./!:"

FILE_LABELS = frozenset({Label.COMPONENT, Label.DATA_FILE, Label.CHECKSUM_FILE, Label.SUBCOLLECTION,
                         Label.HIDDEN_COMPONENT})


def middle(text: str, limit: int = CAPTION_MAX) -> str:
    """`text` cut in the middle to at most `limit` characters: a name's start and its extension both stay."""
    if len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - 1 - head
    return text[:head] + ELLIPSIS + text[len(text) - tail:]


def words(text: str, limit: int = CAPTION_MAX) -> str:
    """`text` cut after its last whole word that fits (a title reads from its start)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit - 1].rsplit(" ", 1)[0] if " " in text[:limit - 1] else text[:limit - 1]
    return cut.rstrip(" ,;:-/") + ELLIPSIS


def breakable(text: str, width: int = LINE_MAX) -> str:
    """`text` with a space after a separator wherever a word is longer than a line: the Browser wraps a caption
    only at spaces and cuts the rest of a word that does not fit (`Cross_S…`). The caption is for display only,
    so `AMB2025-04-PrintTracker.xlsx` may read `AMB2025-04- PrintTracker .xlsx`; the node's own properties keep
    the name as it is."""
    out: list[str] = []
    for word in text.split(" "):
        while len(word) > width:
            cut = max(word.rfind(sep, 1, width) for sep in SEPARATORS)
            at = cut + 1 if cut > 0 else width
            out.append(word[:at])
            word = word[at:]
        out.append(word)
    return " ".join(w for w in out if w)


def base_name(path: str) -> str:
    """The last segment of a slash path; a folder (subcollection) keeps a trailing slash to say so."""
    stripped = path.rstrip("/")
    name = stripped.rsplit("/", 1)[-1] or stripped
    return name + "/" if path.endswith("/") else name


def _tail(path: str, sep: str, keep: int = 3) -> str:
    """The last `keep` steps of a JSON pointer or an XPath, marked as a tail when steps were left off."""
    steps = [s for s in path.split(sep) if s]
    if not steps:
        return sep
    shown = sep.join(steps[-keep:])
    return (sep if len(steps) <= keep else ELLIPSIS + sep) + shown


def _num(value: Any) -> str:
    return str(round(float(value)))


def location_caption(props: Mapping[str, Any]) -> str:
    """Where a fact sits, as a reviewer would write it: `p3 (72,540)` (a PDF page and the bbox's top left),
    `Sheet1!B7` (a workbook cell), `L120-130` (a line range), `L12:C3` (a CSV cell), `/components/4/filepath`
    (a JSON pointer's last three steps: the index of its item among them), `…/Build/Sample/Name` (an XPath's), `whole file`."""
    kind = str(props.get("kind") or "")
    locator = str(props.get("locator") or "")
    page, bbox = props.get("page"), props.get("bbox")
    if page is not None:
        at = f" ({_num(bbox[0])},{_num(bbox[1])})" if isinstance(bbox, (list, tuple)) and len(bbox) >= 2 else ""
        return middle(f"p{page}{at}")
    if props.get("sheet") is not None and props.get("cell") is not None:
        cell = str(props["cell"])
        sheet = middle(str(props["sheet"]), max(CAPTION_MAX - len(cell) - 1, 4))
        return middle(f"{sheet}!{cell}")
    if kind == "json_pointer" or props.get("pointer") is not None:
        return middle(_tail(str(props.get("pointer") or ""), "/"))
    if props.get("xpath") is not None or kind == "xml_element":
        return middle(_tail(str(props.get("xpath") or locator), "/"))
    line, end = props.get("line"), props.get("end_line")
    if line is not None and props.get("column") is not None:
        return f"L{line}:C{props['column']}"
    if line is not None:
        return f"L{line}-{end}" if end is not None and end != line else f"L{line}"
    if locator == "file":
        return "whole file"
    return middle(locator or kind or "location")


def caption(labels: Iterable[str], props: Mapping[str, Any]) -> str | None:
    """`short_name` made to wrap inside the node's circle (`breakable`)."""
    text = short_name(labels, props)
    return breakable(text) if text is not None else None


def short_name(labels: Iterable[str], props: Mapping[str, Any]) -> str | None:
    """The short name of a node with `labels` and `props`, or None for a label drawn by a property of its own (a
    task by its question, a workflow by its title) or a node without the property a caption is made from."""
    have = set(labels)
    if Label.SOURCE_LOCATION in have:
        return location_caption(props)
    if have & FILE_LABELS:
        path = props.get("filepath_full") or props.get("filepath")
        if isinstance(path, str) and path:
            return middle(base_name(path + ("/" if Label.SUBCOLLECTION in have else "")))
        name = props.get("name")
        return middle(str(name)) if name else None
    if Label.FILE in have:
        name = props.get("name")
        return middle(base_name(str(name))) if name else None
    if Label.DEFECT in have:
        kind = props.get("kind_full") or props.get("kind")
        return words(str(kind).replace("_", " ").replace(".", " "), WORDS_MAX) if kind else None
    if Label.RECORD in have:
        title = props.get("title")
        return words(str(title), WORDS_MAX) if title else None
    if Label.EVIDENCE in have:
        title = props.get("title")
        if not title:
            return None
        # a path-like title ("Cross_Sections/Tracks_Results", a document's URL) by its last segment; any title cut
        # in the middle: sibling items differ at the end ("Scan on Bare Metal_XrayImages_Raw", "..._captioned")
        text = str(title).strip()
        if " " not in text:
            text = unquote(base_name(text))
        return middle(" ".join(text.split()), WORDS_MAX if " " in text else CAPTION_MAX)
    return None


def add_captions(rows: Iterable[Any]) -> None:
    """Set `caption` on each NodeRow whose labels have one (in place, as `stamp_rows` sets the stamp)."""
    for row in rows:
        text = caption(row.labels, row.props)
        if text is not None:
            row.props["caption"] = text
