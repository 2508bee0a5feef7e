"""Exit 0 when the venv running this holds a distribution named `voe` installed from this checkout (the project's
name before it became voe-evidence), else 1. Compares real paths, so a checkout reached through a link is itself."""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

HERE = Path(__file__).resolve().parent.parent


def main() -> int:
    try:
        dist = metadata.distribution("voe")
    except metadata.PackageNotFoundError:
        return 1
    if dist.metadata.get("Summary", "").startswith("The evidence-graph compiler"):
        return 0  # ours, however it was installed
    raw = dist.read_text("direct_url.json")
    url = urlparse(json.loads(raw).get("url", "")) if raw else None
    return 0 if url is not None and url.scheme == "file" and Path(unquote(url.path)).resolve() == HERE else 1


if __name__ == "__main__":
    sys.exit(main())
