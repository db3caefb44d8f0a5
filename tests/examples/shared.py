"""What the example tests share besides tests.harness: the origin site the examples crawl and
proxy to, and the URL list the cluster jobs (Dask, Spark) read and write."""

from __future__ import annotations

import gzip
from pathlib import Path

from tests.harness import PageSite

# A site whose links are written the way real pages write them: escapes of unreserved
# characters, dot segments, lower-case escapes, tracking parameters.  (`requests` fixes the first
# three on its own, through a proxy too; Scrapy sends them as the page wrote them.)
PAGES: dict[str, str] = {
    "/": '<a href="/%7Eguide/./intro">guide</a> <a href="/docs/../about">about</a> '
    '<a href="/search?utm_source=feed&q=a%2fb&a=1">search</a> '
    '<a href="/search?q=a%2fb&a=1&fbclid=xyz">search again</a> '
    '<a href="http://elsewhere.invalid/">out</a>',
    "/~guide/intro": '<a href="/~guide/intro">self</a> <a href="/about">about</a>',
    "/about": "<p>about</p>",
    "/search": "<p>results</p>",
}


class Origin(PageSite):
    """The site on 127.0.0.1 (``url``); ``targets``: every request-target as it arrived."""

    def __init__(self) -> None:
        super().__init__(PAGES, page_of=lambda target: target.split("?")[0])
        self.targets = self.received


# The input of the cluster examples: dirty spellings of three URLs, a blank line, and the
# reserved escape "%2F" that must stay apart from "/".
URLS = [
    "HTTP://Example.COM:80/%7Eguide/./intro",
    "http://example.com/~guide/intro?utm_source=feed#top",
    "",
    "http://example.com/a%2fb?b=2&a=1",
    "http://example.com/a%2Fb?a=1&b=2",
    "http://other.test/x/../y",
]


def write_url_parts(tmp: Path) -> Path:
    """URLS as two input parts, one plain and one gzipped; returns their glob pattern."""
    inputs = tmp / "urls"
    inputs.mkdir()
    (inputs / "part-0.txt").write_text("\n".join(URLS[:3]) + "\n")
    (inputs / "part-1.txt.gz").write_bytes(gzip.compress("\n".join(URLS[3:]).encode()))
    return inputs / "part-*"


def read_url_parts(out: Path) -> list[str]:
    """Every line of a job's gzipped output parts, sorted."""
    return sorted(
        line
        for part in out.glob("part-*.txt.gz")
        for line in gzip.decompress(part.read_bytes()).decode().splitlines()
    )
