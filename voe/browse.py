"""Neo4j Browser as a review tool: the named queries of cypher/browser/, a Browser URL that opens with one
of them in the editor, and the Browser style (ontology/browser.grass) that captions each label readably.

The URL carries the query as text for a person to run, so parameter values are written into it as Cypher
string literals (JSON's escaping is Cypher's); the query files themselves keep `$parameters`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit

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


def browser_url(http_url: str, bolt_uri: str, query: str | None = None, user: str | None = None) -> str:
    """The Browser URL that connects to `bolt_uri` (as `user`, whose password the Browser asks for; without
    authentication when there is no user) and, with `query`, has it in the editor ready to run."""
    if user:
        parts = urlsplit(bolt_uri)
        at = f"{parts.scheme}://{quote(user, safe='')}@{parts.netloc.rsplit('@', 1)[-1]}"
        args = {"dbms": at, "preselectAuthMethod": "NATIVE"}
    else:
        args = {"dbms": bolt_uri, "preselectAuthMethod": "NO_AUTH"}
    if query is not None:
        args.update(cmd="edit", arg=query)
    return f"{http_url.rstrip('/')}/browser/?" + urlencode(args, quote_via=quote)


def style() -> str:
    return (data_path("ontology") / "browser.grass").read_text()


# ---------------------------------------------------------------- the Browser's own files (served by the server)

GUIDE_PATH = "voe/guide.html"
STYLE_PATH = "voe/style.grass"


def _about(name: str) -> str:
    text = queries.load(f"browser/{name}")
    return " ".join(ln.removeprefix("//").strip() for ln in text.splitlines() if ln.startswith("//"))


def guide_html() -> str:
    """A Browser guide (`:play`) of the named queries: what each shows, the `:param` it needs, and the query as a
    runnable block (a click puts it in the editor)."""
    from html import escape

    slides = ['<slide class="row-fluid"><div class="col-sm-12"><h3>voe review queries</h3>'
              "<p>Each next slide is one named query of <code>cypher/browser/</code>. Set its parameters with the "
              "<code>:param</code> block, then click the query to put it in the editor and run it (Ctrl+Enter). "
              "<code>voe browse TASK_ID</code> prints a Browser URL with a task's query filled in.</p>"
              "<p>Start here (no parameters): the packages in this graph.</p>"
              '<pre class="pre-scrollable code runnable">MATCH (t:Task) RETURN t.package AS package, count(*) AS tasks'
              "</pre></div></slide>"]
    for name in named_queries():
        body = "\n".join(ln for ln in queries.load(f"browser/{name}").splitlines() if not ln.startswith("//")).strip()
        params = "".join(f'<pre class="pre-scrollable code runnable">:param {p} =&gt; \'\'</pre>' for p in parameters(name))
        slides.append(f'<slide class="row-fluid"><div class="col-sm-12"><h3>{escape(name)}</h3>'
                      f"<p>{escape(_about(name))}</p>{params}"
                      f'<pre class="pre-scrollable code runnable">{escape(body)}</pre></div></slide>')
    return '<article class="guide"><carousel class="deck container-fluid">' + "".join(slides) + "</carousel></article>\n"


def post_connect_cmd(http_port: int) -> str:
    """browser.post_connect_cmd: load the style and play the guide the server serves (localhost is on the Browser's
    default remote-content allowlist). Commands are separated by `;`, which neither URL holds."""
    base = f"http://localhost:{http_port}/browser"
    return f"style {base}/{STYLE_PATH}; play {base}/{GUIDE_PATH}"


# What the Browser would fetch from other hosts, cut out of its files (a lab reviewing unpublished records offline
# or behind a firewall must see no request leave the machine; `client.allow_telemetry=false` stops its usage
# reports but not these): the web fonts its stylesheet imports (the system's fonts stand in), its error reports'
# address (Sentry with no DSN sends nothing), the feedback widget's script and the analytics hosts of the preview
# app (pointed at the discard port of this machine, refused at once). tests/voe/test_browser_ui.py counts every
# request the page makes with the network blocked.
OFFLINE: tuple[tuple[str, str], ...] = (
    (r"@import url\(https://fonts\.googleapis\.com/[^)]*\);?", ""),
    (r"https://[0-9a-f]+@[a-z0-9.]*ingest\.sentry\.io/[0-9]+", ""),
    (r"https://canny\.io/sdk\.js", "data:text/javascript,"),
    (r"api\.segment\.io", "127.0.0.1:9"),
    (r"cdn\.segment\.com", "127.0.0.1:9"),
)


def offline(name: str, data: bytes) -> bytes:
    """A file of the Browser bundle with OFFLINE's addresses cut out (scripts, styles and pages only)."""
    import re

    if not name.endswith((".js", ".css", ".html")):
        return data
    text = data.decode("utf-8", "surrogateescape")
    for pattern, replacement in OFFLINE:
        text = re.sub(pattern, replacement, text)
    return text.encode("utf-8", "surrogateescape")


def browser_bundle(lib: Path, web: Path) -> Path | None:
    """`<web>/neo4j-browser.zip`: the Browser of `lib` with the style and guide added under browser/voe/, which the
    server serves instead of the jar's copy (internal.dbms.web_dir_path). Rebuilt only when its inputs change;
    None when `lib` holds no Browser jar."""
    import hashlib
    import zipfile

    jars = sorted(lib.glob("neo4j-browser-*.jar"))
    # OFFLINE's version is part of the stamp: a change of what is cut out rebuilds the bundle
    if not jars:
        return None
    extra = {f"browser/{STYLE_PATH}": style().encode(), f"browser/{GUIDE_PATH}": guide_html().encode()}
    stamp = hashlib.sha256(jars[-1].name.encode() + b"".join(extra[k] for k in sorted(extra))
                           + repr(OFFLINE).encode()).hexdigest()
    bundle, stamp_file = web / "neo4j-browser.zip", web / "neo4j-browser.stamp"
    if bundle.is_file() and stamp_file.is_file() and stamp_file.read_text() == stamp:
        return bundle
    web.mkdir(parents=True, exist_ok=True)
    tmp = web / "neo4j-browser.zip.tmp"
    with zipfile.ZipFile(jars[-1]) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename.startswith("browser/") and info.filename not in extra:
                dst.writestr(info, offline(info.filename, src.read(info)))
        # the server unpacks the zip entry by entry and makes only the folders that have an entry, parents first
        dst.writestr("browser/voe/", b"")
        for name, data in extra.items():
            dst.writestr(name, data)
    tmp.replace(bundle)
    stamp_file.write_text(stamp)
    return bundle
