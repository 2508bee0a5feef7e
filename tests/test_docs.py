"""README stays a user's page (at most 250 lines) and every link of README and docs/ leads somewhere: the file
exists and, for a `#fragment`, the page has a heading of that slug (GitHub's rule)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    """The headings' slugs; a `#` line inside a fenced code block (a shell or Python comment) is no heading."""
    out: set[str] = set()
    fenced = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            out.add(_slug(line.lstrip("#")))
    return out


def test_readme_is_a_page_not_a_manual() -> None:
    assert len((REPO / "README.md").read_text().splitlines()) <= 250


def test_every_link_of_readme_and_docs_leads_somewhere() -> None:
    broken = []
    checked = 0
    for page in PAGES:
        for target in LINK.findall(page.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, fragment = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            checked += 1
            if not dest.exists():
                broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
            elif fragment and dest.suffix == ".md" and fragment not in _anchors(dest):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert checked > 30
    assert broken == []


def test_a_comment_in_a_code_block_is_no_heading() -> None:
    anchors = _anchors(REPO / "README.md")
    assert "agents-quick-start" in anchors
    assert not [a for a in anchors if a.startswith("my_policypy")]


def test_the_slug_rule_is_githubs() -> None:
    assert _slug(" The local server's security") == "the-local-servers-security"
    assert _slug("Graph shape of a scored run") == "graph-shape-of-a-scored-run"
