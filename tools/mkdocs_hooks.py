"""MkDocs hooks for the documentation site (mkdocs.yml: hooks).

A name in a table cell (a finding, an option, a weakness: code or a link without a space) is
marked ``class="name"``, which docs/css/urlsan.css keeps on one line: a browser would break it
after any of its hyphens.  Code with spaces (a command) wraps between its words.

The site is made to be opened from disk (README: open site/index.html), so every link must be
relative.  MkDocs writes the one page it renders for no path, 404.html, with links from the
server's root (``/css/theme.css``, ``//search.html``, ``base_url = "/"``): opened from disk they
point at the root of the file system.  404.html sits at the site's root, so the same links
relative to it (``./css/theme.css``) reach the same files, from disk and from a server alike.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

# An attribute or the search form's action from the root ("/x", "//x"), and the theme's base_url.
_ROOTED = re.compile(r'((?:href|src|action)=")/{1,2}(?!/)')
_BASE_URL = 'var base_url = "/";'
# Code, or a link's text, with no space and no markup inside.
_CODE_NAME = re.compile(r"<code>([^<\s]+)</code>")
_LINK_NAME = re.compile(r'<a href="([^"]*)">([^<\s]+)</a>')


def mark_names(html: str) -> str:
    """The page with each code span and link that is one word marked as a name."""
    html = _CODE_NAME.sub(r'<code class="name">\1</code>', html)
    return _LINK_NAME.sub(r'<a class="name" href="\1">\2</a>', html)


def on_page_content(html: str, **kwargs: Any) -> str:
    return mark_names(html)


def relative(html: str) -> str:
    """The page's root-absolute links made relative to the site's root."""
    return _ROOTED.sub(r"\1./", html).replace(_BASE_URL, 'var base_url = ".";')


def on_post_build(config: Any, **kwargs: Any) -> None:
    page = Path(config["site_dir"]) / "404.html"
    if page.exists():
        page.write_text(relative(page.read_text(encoding="utf-8")), encoding="utf-8")
