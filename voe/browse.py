"""Neo4j Browser as a review tool: the named queries of cypher/browser/, a Browser URL that opens with one
of them in the editor, and the Browser style (ontology/browser.grass) that captions each label readably.

The URL carries the query as text for a person to run, so parameter values are written into it as Cypher
string literals (JSON's escaping is Cypher's); the query files themselves keep `$parameters`.
"""

from __future__ import annotations

import json
import re
from urllib.parse import quote, urlencode

from voe import queries
from voe.errors import UsageError
from voe.resources import data_path

PARAM_RE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def named_queries() -> dict[str, str]:
    """Name -> the query's first comment line (what it shows)."""
    out = {}
    for name in queries.all_names():
        if name.startswith("browser/"):
            text = queries.load(name)
            first = next((ln.removeprefix("//").strip() for ln in text.splitlines() if ln.startswith("//")), "")
            out[name.removeprefix("browser/")] = first
    return dict(sorted(out.items()))


def parameters(name: str) -> list[str]:
    return sorted(set(PARAM_RE.findall(queries.load(f"browser/{name}"))))


def query_text(name: str, params: dict[str, str]) -> str:
    """The named query with its parameters written in as string literals."""
    if name not in named_queries():
        raise UsageError(f"no Browser query {name!r}; known: {', '.join(named_queries())}")
    missing = [p for p in parameters(name) if p not in params]
    if missing:
        raise UsageError(f"query {name} needs {', '.join('--param ' + m + '=...' for m in missing)}")
    text = queries.load(f"browser/{name}")
    return PARAM_RE.sub(lambda m: json.dumps(params[m.group(1)]) if m.group(1) in params else m.group(0), text)


def browser_url(http_url: str, bolt_uri: str, query: str | None = None) -> str:
    """The Browser URL that connects to `bolt_uri` without authentication and, with `query`, has it in the
    editor ready to run."""
    args = {"dbms": bolt_uri, "preselectAuthMethod": "NO_AUTH"}
    if query is not None:
        args.update(cmd="edit", arg=query)
    return f"{http_url.rstrip('/')}/browser/?" + urlencode(args, quote_via=quote)


def style() -> str:
    return (data_path("ontology") / "browser.grass").read_text()
