"""`voe validate CRATE`: an export checked by the ecosystem's own tools, offline — roc-validator's RO-Crate 1.2 profile
and mlcroissant's reading of croissant.json — with the findings by severity.

roc-validator fetches the RO-Crate context over HTTP through its own cache (requests-cache, sqlite). Here that cache
is seeded from the context voe ships (ontology/ro-crate-1.2-context.jsonld, the official one as the ro-crate npm
package 3.7.2 carries it) by a transport that serves that one URL from disk and refuses every other, and the
validator runs in offline mode, where a cache miss is an error rather than a fetch: the check never needs the
network and never silently depends on it.
"""

from __future__ import annotations

import io
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voe.errors import UsageError
from voe.export.croissant import CROISSANT
from voe.export.jsonld import CRATE_CONTEXT_URL
from voe.resources import data_path

# the header roc-validator's JSON-LD loader sends: part of requests-cache's key
ACCEPT = "application/ld+json, application/json, */*;q=0.1"
SEVERITIES = ("REQUIRED", "RECOMMENDED", "OPTIONAL")


@dataclass(frozen=True)
class Finding:
    tool: str  # "roc-validator" or "mlcroissant"
    severity: str  # REQUIRED / RECOMMENDED / OPTIONAL (roc-validator), ERROR / WARNING (mlcroissant)
    check: str
    message: str


def seed_context_cache(cache: Path) -> None:
    """roc-validator's HTTP cache at `cache`, holding the RO-Crate 1.2 context as both of its requests ask for it."""
    import requests
    import urllib3
    from requests.adapters import BaseAdapter, HTTPAdapter
    from requests_cache import CachedSession  # type: ignore[import-untyped,unused-ignore]

    class FromDisk(BaseAdapter):
        def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
            if (request.url or "").rstrip("/") != CRATE_CONTEXT_URL:
                raise requests.ConnectionError(f"offline: {request.url} is not served from disk")
            body = (data_path("ontology") / "ro-crate-1.2-context.jsonld").read_bytes()
            raw = urllib3.HTTPResponse(body=io.BytesIO(body), headers={"Content-Type": "application/ld+json"},
                                       status=200, preload_content=False, decode_content=False,
                                       request_url=request.url)
            return HTTPAdapter().build_response(request, raw)

        def close(self) -> None:
            pass

    session = CachedSession(cache_name=str(cache), backend="sqlite", expire_after=-1, allowable_codes=(200,))
    session.mount("https://", FromDisk())
    session.mount("http://", FromDisk())
    try:
        for accept in (ACCEPT, None):  # the loader's request, and the file-descriptor check's plain GET
            session.get(CRATE_CONTEXT_URL, headers={"Accept": accept} if accept else {}).raise_for_status()
    finally:
        session.close()  # type: ignore[no-untyped-call]


def ro_crate_findings(crate: Path, severity: str = "RECOMMENDED", cache: Path | None = None) -> list[Finding]:
    """roc-validator's issues at `severity` and above (the RO-Crate 1.2 profile), offline."""
    from rocrate_validator import models, services  # type: ignore[import-untyped,unused-ignore]

    with tempfile.TemporaryDirectory(prefix="voe-roc-") as tmp:
        where = cache if cache is not None else Path(tmp) / "http-cache"
        seed_context_cache(where)
        settings = models.ValidationSettings(rocrate_uri=str(crate), profile_identifier="ro-crate-1.2",
                                             requirement_severity=models.Severity[severity],
                                             skip_availability_check=True, cache_path=where, offline=True)
        result = services.validate(settings)
        return [Finding("roc-validator", i.severity.name, i.check.identifier if i.check else "?", str(i.message))
                for i in result.get_issues()]


def croissant_findings(crate: Path) -> list[Finding]:
    """mlcroissant's errors and warnings on the crate's croissant.json (absent: nothing to check)."""
    import mlcroissant as mlc  # type: ignore[import-untyped,unused-ignore]

    path = crate / CROISSANT
    if not path.is_file():
        return []
    try:
        dataset = mlc.Dataset(str(path))
    except mlc.ValidationError as exc:
        return [Finding("mlcroissant", "ERROR", "validation", line.strip("- ").strip())
                for line in str(exc).splitlines() if line.strip().startswith("-")] or \
            [Finding("mlcroissant", "ERROR", "validation", str(exc))]
    return [Finding("mlcroissant", "WARNING", "validation", str(w)) for w in sorted(dataset.metadata.ctx.issues.warnings)]


def validate_crate(crate: Path, severity: str = "RECOMMENDED") -> list[Finding]:
    if severity not in SEVERITIES:
        raise UsageError(f"--severity {severity}: choose one of {', '.join(SEVERITIES)}")
    if not (crate / "ro-crate-metadata.json").is_file():
        raise UsageError(f"{crate}: not an RO-Crate (no ro-crate-metadata.json); make one with `voe export`")
    return ro_crate_findings(crate, severity) + croissant_findings(crate)
