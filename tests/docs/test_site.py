"""The documentation site as `make docs` builds it (mkdocs.yml): it opens from disk, and its API
reference documents every public module, with doctests shown as code and no private names.

The build needs the `docs` extra, which `make install` and `make test` install."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .shell_blocks import ROOT

pytest.importorskip("mkdocs", reason="the docs extra (make install) builds the site")

# The modules a user imports (README, docs/, examples/): each has its page, titled by its name.
PUBLIC = (
    "urlsan.core",
    "urlsan.core.surt",
    "urlsan.core.backends",
    "urlsan.core.taxonomy",
    "urlsan.core.severity",
    *sorted(
        f"urlsan.{p.stem}" for p in (ROOT / "urlsan").glob("*.py") if not p.stem.startswith("_")
    ),
)
_ROOTED = re.compile(r'(?:href|src|action)="/')
_SIGNATURE = re.compile(r'<div class="doc-signature[^"]*">(.*?)</div>', re.DOTALL)
_PRIVATE = re.compile(r"(?<![\w.'\"])_[A-Za-z]\w*")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    tree = "import typecheck as t; t.TREE = t.ROOT / 'build' / 'docs'; t.link_tree()"  # make docs
    subprocess.run([sys.executable, "-c", tree], cwd=ROOT / "tools", check=True)
    mkdocs = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)]
    build = subprocess.run(mkdocs, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    return out


def text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def test_every_page_opens_from_disk(site: Path) -> None:
    """No link from the server's root: opened from disk it would reach the file system's."""
    rooted = {p.name: _ROOTED.findall(text(p)) for p in site.rglob("*.html")}
    assert (site / "404.html").exists()
    assert not {name: found for name, found in rooted.items() if found}


def test_every_public_module_has_its_page(site: Path) -> None:
    titles = {}
    for page in (site / "api").glob("*.html"):
        title = re.search(r"<h1[^>]*>(.*?)</h1>", text(page), re.DOTALL)
        assert title, page.name
        titles[re.sub(r"<[^>]+>|¶", "", html.unescape(title.group(1))).strip()] = page
    assert sorted(titles) == sorted(PUBLIC)
    nav = text(site / "index.html")
    assert all(f">{module}</a>" in nav for module in PUBLIC), "each is in the sidebar by name"


def test_doctests_are_code_with_their_prompts(site: Path) -> None:
    for name in ("core", "surt", "backends"):
        page = text(site / "api" / f"{name}.html")
        assert "<blockquote>" not in page, name
        assert re.search(r"<code[^>]*>(?:<[^>]+>)*&gt;&gt;&gt; ", page), name


def test_no_private_name_in_a_signature(site: Path) -> None:
    found = {}
    for page in (site / "api").glob("*.html"):
        for signature in _SIGNATURE.findall(text(page)):
            code = html.unescape(re.sub(r"<[^>]+>", "", signature))
            if _PRIVATE.search(code):
                found.setdefault(page.name, []).append(code.strip())
    assert not found


# At a laptop's width each table fits its page (no column scrolled out of sight) and no name
# (code or a link of one word, tools/mkdocs_hooks.py) breaks across lines: a name broken in two
# draws two boxes.
_TABLES = """JSON.stringify([...document.querySelectorAll(".rst-content table")].map(t => ({
  columns: t.rows[0].cells.length,
  fits: t.scrollWidth <= t.clientWidth + 1 &&
    t.parentElement.scrollWidth <= t.parentElement.clientWidth + 1 &&
    t.getBoundingClientRect().right <= document.querySelector(".wy-nav-content")
      .getBoundingClientRect().right,
  names: t.querySelectorAll("td .name").length,
  broken: [...t.querySelectorAll("td .name")].filter(c => c.getClientRects().length > 1)
    .map(c => c.textContent),
})))"""


@pytest.mark.parametrize("page", ["findings.html", "proxy.html"])
def test_wide_tables_fit_at_1280_pixels(site: Path, page: str) -> None:
    from tests.e2e.test_report_browser import DevTools, chromium

    browser = DevTools(chromium())
    try:
        browser.open((site / page).as_uri(), 1280, 900)
        tables = json.loads(browser.evaluate(_TABLES))
    finally:
        browser.close()
    assert max(t["columns"] for t in tables) >= 3, "the wide tables are there"
    assert sum(t["names"] for t in tables) >= 20, "and their names are marked"
    assert [t for t in tables if not t["fits"] or t["broken"]] == []
