"""MkDocs hooks for the documentation site (mkdocs.yml: hooks).

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


def relative(html: str) -> str:
    """The page's root-absolute links made relative to the site's root."""
    return _ROOTED.sub(r"\1./", html).replace(_BASE_URL, 'var base_url = ".";')


def on_post_build(config: Any, **kwargs: Any) -> None:
    page = Path(config["site_dir"]) / "404.html"
    if page.exists():
        page.write_text(relative(page.read_text(encoding="utf-8")), encoding="utf-8")
