"""XML (lxml): each element with text becomes a fact located by XPath and line; AM Bench metadata documents
are validated against the AM Bench XSDs; non-well-formed XML and schema violations are defects with lines."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from lxml import etree

from voe.ingest.payloads.limits import Meter
from voe.ingest.payloads.parsers.model import Fact, FileDefect, Parsed, Role
from voe.ingest.payloads.parsers.registry import Probe, parser
from voe.settings import settings as environment

XSD_FILES = ("AMBuild.xsd", "AMMeasurement.xsd", "AMReference.xsd", "AMDocs.xsd")


def default_xsd_dir() -> Path | None:
    env: Path | None = environment().voe_xsd_dir
    if env is not None:
        return env
    from voe.ingest.sources.nerdm.schema import default_schema_dir

    base = default_schema_dir()
    return base / "ambench-xsd" if base is not None and (base / "ambench-xsd").is_dir() else None


@lru_cache(maxsize=4)
def _schemas(xsd_dir: Path) -> dict[str, etree.XMLSchema]:
    """Global element name -> the schema that declares it. The XSDs only xs:include each other."""
    out: dict[str, etree.XMLSchema] = {}
    for name in XSD_FILES:
        path = xsd_dir / name
        if not path.is_file():
            continue
        doc = etree.parse(str(path))
        schema = etree.XMLSchema(doc)
        ns = "{http://www.w3.org/2001/XMLSchema}"
        for el in doc.getroot().findall(f"{ns}element"):
            out.setdefault(el.get("name", ""), schema)
    return out


def _is_xml(p: Probe) -> bool:
    t = p.text_head
    return t.startswith(b"<?xml") or (t.startswith(b"<") and not t.startswith(b"<!DOCTYPE html"))


@parser("xml", order=50, detect=_is_xml, extensions=(".xml", ".xsd"), libraries=("lxml",))
def _xml_file(path: Path) -> Parsed:
    """XML: every element with text or attributes at its XPath, validated against its XSD when one is held."""
    return parse_xml(path, path.read_bytes())


def parse_xml(path: Path, data: bytes, xsd_dir: Path | None = None) -> Parsed:
    """Every element with text or attributes is a fact at its XPath. Bounded by the budgets of `ingest/payloads/limits.py`:
    a document with more nodes than xml_elements is read up to that many (the rest is not located and the
    document is not validated), elements deeper than xml_depth are not located, and at most facts_per_file facts."""
    parsed = Parsed(format="xml", role=Role.CHARACTERIZATION)
    meter = Meter()
    data, cut_line = _within_node_budget(data, meter, parsed)
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, recover=cut_line is not None)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        line = exc.lineno or 0
        if _LIBXML_LIMIT_RE.search(str(exc.msg)):
            parsed.defects.append(FileDefect(
                "parse.budget", f"not parsed: at line {line} the document passes a limit of libxml2 ({exc.msg}; "
                f"budget xml_depth is {meter.limit('xml_depth')})", f"L{line}"))
            return parsed
        parsed.defects.append(FileDefect("xml.not_well_formed", f"not well-formed XML at line {line}: {exc.msg}",
                                         f"L{line}"))
        return parsed
    if cut_line is not None:
        early = [e for e in parser.error_log if e.line < cut_line]
        if early or root is None:
            line = early[0].line if early else 0
            msg = early[0].message if early else "no element before the cut"
            parsed.defects.append(FileDefect("xml.not_well_formed", f"not well-formed XML at line {line}: {msg}",
                                             f"L{line}"))
            return parsed
    tree = root.getroottree()
    _element_facts(root, parsed, meter, open_path=cut_line is not None)
    root_name = etree.QName(root).localname
    validated_against = None
    xsd_dir = xsd_dir or default_xsd_dir()
    if xsd_dir is not None and cut_line is None:
        schema = _schemas(xsd_dir).get(root_name)
        if schema is not None:
            validated_against = root_name
            if not schema.validate(tree):
                for err in schema.error_log:
                    parsed.defects.append(FileDefect("xml.schema", f"line {err.line}: {err.message}", f"L{err.line}"))
    parsed.summary = {"root": root_name, "elements": sum(1 for _ in root.iter()), "xsd": validated_against}
    return parsed


_OPEN_RE = re.compile(rb"<(?!/)")
_LIBXML_LIMIT_RE = re.compile(r"Excessive depth|huge text node|XML_PARSE_HUGE|Huge input lookup|too long", re.I)


def _within_node_budget(data: bytes, meter: Meter, parsed: Parsed) -> tuple[bytes, int | None]:
    """The document, or its first xml_elements nodes (each `<` that does not close a tag starts at most
    one) and the line where it is cut."""
    limit = meter.limit("xml_elements")
    if data.count(b"<") - data.count(b"</") <= limit:
        return data, None
    nth = next(itertools.islice(_OPEN_RE.finditer(data), limit, None), None)
    if nth is None:
        return data, None
    pos = nth.start()
    line = data.count(b"\n", 0, pos) + 1
    parsed.defects.append(FileDefect(
        "parse.budget", f"stopped after {limit} nodes (budget xml_elements); the document is read up to line "
        f"{line} (byte {pos}), later elements are not located and it is not validated", f"L{line}"))
    return data[:pos], line


def _element_facts(root: Any, parsed: Parsed, meter: Meter, open_path: bool) -> None:
    """One fact per element with text or attributes, in document order, at the XPath lxml's getpath gives (worked
    out per parent in one pass: getpath counts an element's siblings each time, quadratic in a long list of
    siblings). When the document was cut (`open_path`), the children of the elements still open at the cut keep an
    index even when they look alone, since their later siblings were not read (the path selects the same element)."""
    depth_limit = meter.limit("xml_depth")
    attribute_limit = meter.limit("xml_attributes")
    wide: tuple[str, int, int | None] | None = None
    room = meter.room("facts_per_file")
    too_deep: tuple[str, int | None] | None = None
    open_nodes: set[Any] = set()
    if open_path:
        node = root
        while node is not None:
            open_nodes.add(node)
            node = next((k for k in reversed(node) if isinstance(k.tag, str)), None)
    stack: list[tuple[Iterator[tuple[Any, str]], int]] = [(iter([(root, "/" + _segment(root, None))]), 1)]
    while stack:
        it, depth = stack[-1]
        item = next(it, None)
        if item is None:
            stack.pop()
            continue
        el, xpath = item
        text = (el.text or "").strip()
        if text or el.attrib:
            if room == 0:
                parsed.defects.append(FileDefect(
                    "parse.budget", f"stopped after {len(parsed.facts)} facts (budget facts_per_file); elements after "
                    f"{parsed.facts[-1].locator if parsed.facts else 'the root'} are not located", xpath))
                break
            room -= 1
            # lxml reads an attribute's value by looking its name up in libxml2's list, so items() (or dict) over n
            # attributes costs n²/2 steps (100,000 attributes: 33 s): the names are listed once, and only the
            # first attribute_limit values are looked up, each near the head of the list
            count = len(el.attrib)
            if count > attribute_limit:
                if wide is None:
                    wide = (xpath, count, el.sourceline)
                attributes = [(k, el.get(k) or "") for k in itertools.islice(el.attrib.iterkeys(), attribute_limit)]
            else:
                attributes = el.attrib.items()
            parsed.facts.append(Fact("xml_element", xpath, text or " ".join(f'{k}="{v}"' for k, v in attributes),
                                     etree.QName(el).localname, None, text or None, Role.CHARACTERIZATION,
                                     {"xpath": xpath, "line": el.sourceline, "attributes": dict(attributes)}))
        if len(el) == 0:
            continue
        if depth >= depth_limit:
            if too_deep is None and any(isinstance(k.tag, str) for k in el):
                too_deep = (xpath, el.sourceline)
            continue
        stack.append((_children(el, xpath, el in open_nodes), depth + 1))
    if wide is not None:
        parsed.defects.append(FileDefect(
            "parse.budget", f"only the first {attribute_limit} attributes of an element are located (budget "
            f"xml_attributes); {wide[0]} (line {wide[2]}) has {wide[1]}", wide[0]))
    if too_deep is not None:
        parsed.defects.append(FileDefect(
            "parse.budget", f"elements deeper than {depth_limit} levels are not located (budget xml_depth); the first "
            f"cut is below {too_deep[0]} (line {too_deep[1]})", too_deep[0]))


_NAMES: dict[tuple[str, str | None], tuple[Any, str]] = {}


def _name(el: Any) -> tuple[Any, str]:
    """What libxml2's xmlGetNodePath compares siblings by, and how it writes the element: an element in a default
    namespace is `*` and is counted among all element siblings (key None); else the key is (local name, prefix,
    in a namespace) and the name `prefix:local` or `local`."""
    tag = el.tag
    prefix = el.prefix if tag[0] == "{" else None
    found = _NAMES.get((tag, prefix))
    if found is None:
        if tag[0] != "{":
            found = ((tag, None, False), tag)
        elif prefix is None:
            found = (None, "*")
        else:
            local = tag[tag.index("}") + 1:]
            found = ((local, prefix, True), f"{prefix}:{local}")
        if len(_NAMES) < 4096:
            _NAMES[(tag, prefix)] = found
    return found


def _segment(el: Any, index: int | None) -> str:
    name = _name(el)[1]
    return name if index is None else f"{name}[{index}]"


def _children(el: Any, xpath: str, open_parent: bool) -> Iterator[tuple[Any, str]]:
    """The element children of `el` with their XPaths, one at a time (a parent of millions is not listed twice)."""
    totals: dict[Any, int] = {}
    elements = 0
    for kid in el:
        if isinstance(kid.tag, str):
            elements += 1
            key = _name(kid)[0]
            if key is not None:
                totals[key] = totals.get(key, 0) + 1
    seen: dict[Any, int] = {}
    i = 0
    for kid in el:
        if not isinstance(kid.tag, str):
            continue
        i += 1
        key, name = _name(kid)
        if key is None:
            index, total = i, elements
        else:
            index = seen[key] = seen.get(key, 0) + 1
            total = totals[key]
        yield kid, f"{xpath}/{name}[{index}]" if total > 1 or open_parent else f"{xpath}/{name}"
