"""The README is a user's page and the docs hold the rest (issue 33 item 9): README.md stays at most 400 lines, and
every relative link of the README and docs/*.md resolves — the file exists and, for a link to a Markdown heading,
the heading does (GitHub's anchors), so moving a section leaves no dangling reference behind."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import REPO

README_MAX_LINES = 400
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)


def _prose(text: str) -> str:
    """The text without fenced blocks: a link in a code sample is not a link."""
    return FENCE.sub("", text)


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (letters, digits, '-', '_' and spaces kept),
    spaces to hyphens."""
    text = heading.replace("`", "").strip().lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in "-_ ")
    return text.replace(" ", "-")


def _anchors(doc: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for heading in HEADING.findall(_prose(doc.read_text())):
        slug = _slug(heading)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")  # GitHub numbers a repeated heading
    return out


def _links(doc: Path) -> list[str]:
    prose = _prose(doc.read_text())
    links = [m for line in prose.splitlines() for m in LINK.findall(line)]
    links += LINK.findall(CODE.sub("", prose))
    return sorted({link for link in links if not re.match(r"[a-z][a-z0-9+.-]*:", link)})  # not http:, mailto:


def test_the_readme_is_a_page_not_a_manual() -> None:
    lines = (REPO / "README.md").read_text().count("\n")
    assert lines <= README_MAX_LINES, (
        f"README.md: {lines} lines (at most {README_MAX_LINES}; move detail to docs/)"
    )


def test_the_slug_is_githubs() -> None:
    assert _slug("Issue 38: outliers in `compare`, and Go's benchstat beside it") == (
        "issue-38-outliers-in-compare-and-gos-benchstat-beside-it"
    )
    assert _slug("A lab of 50 hosts: `bench/lab_hosts.py`") == "a-lab-of-50-hosts-benchlab_hostspy"


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(REPO)) for d in DOCS])
def test_every_relative_link_resolves(doc: Path) -> None:
    broken = []
    for link in _links(doc):
        path, _, anchor = link.partition("#")
        target = (doc.parent / path).resolve() if path else doc
        if not target.exists():
            broken.append(f"{link}: no file {target}")
        elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
            broken.append(f"{link}: no heading with the anchor #{anchor} in {target.relative_to(REPO)}")
    assert not broken, f"{doc.relative_to(REPO)}: " + "; ".join(broken)


def test_the_docs_are_linked_from_the_readme() -> None:
    readme = (REPO / "README.md").read_text()
    unlinked = [d.name for d in DOCS[1:] if f"](docs/{d.name}" not in readme]
    assert not unlinked, f"docs not linked from README.md: {unlinked}"
