"""Run the RO-Crate validator (roc-validator) with no network: its HTTP cache is seeded with the RO-Crate 1.2
context voe ships (ontology/ro-crate-1.2-context.jsonld, the official context as the ro-crate npm package 3.7.2
carries it), and it runs in offline mode, where a cache miss is an error rather than a fetch."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import requests
import urllib3
from requests.adapters import BaseAdapter, HTTPAdapter
from requests_cache import CachedSession  # type: ignore[import-untyped,unused-ignore]

from voe.export.jsonld import CRATE_CONTEXT_URL
from voe.resources import data_path

# the header the validator's JSON-LD loader sends: part of the cache key
ACCEPT = "application/ld+json, application/json, */*;q=0.1"


class _FromDisk(BaseAdapter):
    """A transport that answers the context URL from the shipped file (and nothing else)."""

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        if (request.url or "").rstrip("/") != CRATE_CONTEXT_URL:
            raise requests.ConnectionError(f"offline: {request.url} is not served from disk")
        body = (data_path("ontology") / "ro-crate-1.2-context.jsonld").read_bytes()
        raw = urllib3.HTTPResponse(body=io.BytesIO(body), headers={"Content-Type": "application/ld+json"}, status=200,
                                   preload_content=False, decode_content=False, request_url=request.url)
        return HTTPAdapter().build_response(request, raw)

    def close(self) -> None:
        pass


def seed(cache: Path) -> None:
    session = CachedSession(cache_name=str(cache), backend="sqlite", expire_after=-1, allowable_codes=(200,))
    session.mount("https://", _FromDisk())
    session.mount("http://", _FromDisk())
    for accept in (ACCEPT, None):  # the loader's request, and the file-descriptor check's plain GET
        headers = {"Accept": accept} if accept else {}
        assert session.get(CRATE_CONTEXT_URL, headers=headers).status_code == 200
    session.close()


def validate_crate(crate: Path, cache: Path, severity: str = "REQUIRED") -> list[str]:
    """The validator's issues at `severity` (empty when the crate conforms to the RO-Crate 1.2 profile)."""
    from rocrate_validator import models, services  # type: ignore[import-untyped,unused-ignore]

    seed(cache)
    settings = models.ValidationSettings(rocrate_uri=str(crate), profile_identifier="ro-crate-1.2",
                                         requirement_severity=models.Severity[severity], skip_availability_check=True,
                                         cache_path=cache, offline=True)
    result = services.validate(settings)
    issues = [f"{i.severity.name} {i.check.identifier if i.check else '?'}: {i.message}" for i in result.get_issues()]
    assert result.passed() == (not issues), issues
    return issues
