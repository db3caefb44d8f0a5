"""The documentation hangs together: every relative link of README.md and docs/ leads to a file
(and to a heading there, when it names one), every page is in the site's nav, and the pages
speak to users (no issue numbers, no notes on how the work went).

`make docs` checks the links between pages of docs/ too (mkdocs --strict); this test also covers
README.md, CHANGELOG.md and runs without MkDocs."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
USER_DOCS = [ROOT / "README.md", *PAGES]
_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_CODE = re.compile(r"`[^`\n]*`")


def prose(text: str) -> str:
    """The text without code blocks and code spans, where links are not links."""
    return _CODE.sub("", _FENCE.sub("", text))


def slug(heading: str) -> str:
    """A heading's anchor as GitHub and MkDocs' toc both make it."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text.replace("`", "")).strip().lower()
    return re.sub(r"[\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in _FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"#{1,6} (.+)", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}_{n}")
    return out


def links(page: Path) -> list[str]:
    return _LINK.findall(prose(page.read_text(encoding="utf-8")))


@pytest.mark.parametrize(
    "page",
    [ROOT / "README.md", ROOT / "CHANGELOG.md", *PAGES],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_relative_links_and_anchors_resolve(page: Path) -> None:
    broken = []
    for link in links(page):
        if re.match(r"[a-z]+:", link):
            continue  # https:, mailto:
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(f"{link}: no {target.relative_to(ROOT)}")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target):
            broken.append(f"{link}: no heading #{anchor} in {target.relative_to(ROOT)}")
    assert not broken, broken


def test_every_page_is_in_the_nav() -> None:
    nav = set(re.findall(r":\s+(\S+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.MULTILINE))
    assert nav == {str(p.relative_to(DOCS)) for p in PAGES}


def test_readme_links_into_docs_resolve() -> None:
    assert sum(link.startswith("docs/") for link in links(ROOT / "README.md")) >= 10


# Issue numbers and notes on how the work went belong in the tracker and CHANGELOG.md, not in
# what a user reads.
_HISTORY = re.compile(
    r"issue #?\d|#\d+\b|\bthis session\b|\bsessions? (?:ago|before|\d)|\bearlier session|"
    r"\bwe tried\b|\bas of this change\b",
    re.IGNORECASE,
)


@pytest.mark.parametrize("page", USER_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_issue_numbers_or_history(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    found = [m.group(0) for m in _HISTORY.finditer(text) if not _is_anchor(text, m.start())]
    assert not found, found


def _is_anchor(text: str, at: int) -> bool:
    """`(page.md#2-in-scrapy)`: a link's anchor, not an issue number."""
    return text[at] == "#" and at > 0 and (text[at - 1] == "(" or text[at - 1] not in " \t\n")
