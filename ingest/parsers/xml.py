"""XML (lxml): each element with text becomes a fact located by XPath and line; AM Bench metadata documents
are validated against the AM Bench XSDs; non-well-formed XML and schema violations are defects with lines."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from lxml import etree

from ingest.parsers.model import Fact, FileDefect, Parsed, Role

XSD_FILES = ("AMBuild.xsd", "AMMeasurement.xsd", "AMReference.xsd", "AMDocs.xsd")


def default_xsd_dir() -> Path | None:
    env = os.environ.get("VOE_XSD_DIR")
    if env:
        return Path(env)
    from ingest.nerdm_schema import default_schema_dir

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


def parse_xml(path: Path, data: bytes, xsd_dir: Path | None = None) -> Parsed:
    parsed = Parsed(format="xml", role=Role.CHARACTERIZATION)
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        line = exc.lineno or 0
        parsed.defects.append(FileDefect("xml.not_well_formed", f"not well-formed XML at line {line}: {exc.msg}",
                                         f"L{line}"))
        return parsed
    tree = root.getroottree()
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        text = (el.text or "").strip()
        if text or el.attrib:
            xpath = tree.getpath(el)
            parsed.facts.append(Fact("xml_element", xpath, text or " ".join(f'{k}="{v}"' for k, v in el.attrib.items()),
                                     etree.QName(el).localname, None, text or None, Role.CHARACTERIZATION,
                                     {"xpath": xpath, "line": el.sourceline, "attributes": dict(el.attrib)}))
    root_name = etree.QName(root).localname
    validated_against = None
    xsd_dir = xsd_dir or default_xsd_dir()
    if xsd_dir is not None:
        schema = _schemas(xsd_dir).get(root_name)
        if schema is not None:
            validated_against = root_name
            if not schema.validate(tree):
                for err in schema.error_log:
                    parsed.defects.append(FileDefect("xml.schema", f"line {err.line}: {err.message}", f"L{err.line}"))
    parsed.summary = {"root": root_name, "elements": sum(1 for _ in root.iter()), "xsd": validated_against}
    return parsed
