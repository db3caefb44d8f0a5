"""A local site for crawl tests that answers for any host name: the crawler uses it as its HTTP
proxy, so every request arrives in absolute form (``GET http://Host:80/path HTTP/1.1``) and the
site records the whole URL as the crawler sent it: scheme, host, port and all.

(A plain module, not conftest.py, so that the tests can import its names; the server is
tests.harness.PageSite.)
"""

from __future__ import annotations

from urllib.parse import urlsplit

from tests.harness import PageSite

SITE = "http://www.site.test"

# Each page links to the same resources under different spellings, and to resources that only
# look alike.  The canonical forms (crawler profile) of everything reachable are CANONICAL.
PAGES: dict[str, str] = {
    "/": """
        <a href="/%7Eguide/intro">escaped tilde</a>
        <a href="/~guide/intro">tilde</a>
        <a href="./%7eguide/./intro#part-2">dot segment, lower-case escape, fragment</a>
        <a href="/docs/../~guide/intro?utm_source=feed&amp;utm_medium=rss">dot-dot, tracking</a>
        <a href="HTTP://WWW.Site.TEST:80/~guide/intro">upper-case host, default port</a>
        <a href="/about?fbclid=IwAR0">click ID</a>
        <a href="http://www.site.test:80/about">default port</a>
        <a href="/a%2Fb">escaped slash</a>
        <a href="/a/b">slash</a>
        <a href="/search?q=a+b">plus</a>
        <a href="/search?q=a%2Bb">escaped plus</a>
    """,
    "/~guide/intro": '<a href="HTTP://www.SITE.test:80/">home</a> <a href="../about#top">about</a>',
    "/about": '<a href="/?utm_campaign=x">home</a>',
    "/a%2Fb": "<p>one segment</p>",
    "/a/b": "<p>two segments</p>",
    "/search": "<p>results</p>",
}

CANONICAL = sorted(
    [
        f"{SITE}/",
        f"{SITE}/~guide/intro",
        f"{SITE}/about",
        f"{SITE}/a%2Fb",
        f"{SITE}/a/b",
        f"{SITE}/search?q=a+b",
        f"{SITE}/search?q=a%2Bb",
    ]
)


class Site(PageSite):
    """The site, on 127.0.0.1 and a free port, in a thread; ``requests``: every URL received;
    ``proxy``: its address, for the crawler's proxy setting."""

    def __init__(self) -> None:
        # Absolute form: the URL as the crawler sent it; the page is its path.
        super().__init__(PAGES, page_of=lambda target: urlsplit(target).path)
        self.requests = self.received
        self.proxy = self.url
