"""A Scrapy spider that deduplicates with urlsan, and optionally sends canonical URLs only.

    python examples/crawl_scrapy.py http://example.com/              # urlsan's fingerprint
    python examples/crawl_scrapy.py --rewrite http://example.com/    # and canonical requests
    python examples/crawl_scrapy.py --proxy http://127.0.0.1:8080 http://example.com/

What a Scrapy project writes in its settings is the ``SETTINGS`` dict below: urlsan's request
fingerprinter, so that the duplicate filter and the HTTP cache see `/%7Eguide/intro`,
`/~guide/intro` and `/~guide/intro?utm_source=feed` as one page, and with ``--rewrite`` the
downloader middleware that sends the canonical URL.  ``--proxy`` sends the traffic through
`urlsan proxy` as well (``urlsan proxy --listen-port 8080 --set urlsan_profile=crawler``): the
site then sees canonical request-targets whatever the spider does.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.http import Response

SETTINGS: dict[str, Any] = {
    "REQUEST_FINGERPRINTER_CLASS": "urlsan.scrapy.RequestFingerprinter",
    "URLSAN_PROFILE": "crawler",  # the default: no fragment, no tracking parameters, sorted query
}
REWRITE = {"DOWNLOADER_MIDDLEWARES": {"urlsan.scrapy.CanonicalUrlMiddleware": 50}}


class SiteSpider(scrapy.Spider):
    name = "site"

    def __init__(self, start: str, proxy: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_url = start
        self.meta = {"proxy": proxy} if proxy else {}
        self.allowed_domains = [urlsplit(start).hostname or ""]
        self.fetched: list[str] = []

    async def start(self) -> AsyncIterator[scrapy.Request]:  # Scrapy 2.13 and later
        for request in self.start_requests():
            yield request

    def start_requests(self) -> Iterator[scrapy.Request]:  # earlier versions
        yield scrapy.Request(self.start_url, meta=self.meta)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[scrapy.Request]:
        self.fetched.append(response.url)
        if hasattr(response, "css"):  # an HTML page
            yield from response.follow_all(css="a", meta=self.meta)


def crawl(start: str, proxy: str | None = None, rewrite: bool = False) -> list[str]:
    """Run the spider to the end; returns the URLs Scrapy fetched."""
    settings = {**SETTINGS, **(REWRITE if rewrite else {})}
    settings.update(LOG_LEVEL="WARNING", ROBOTSTXT_OBEY=False, HTTPERROR_ALLOW_ALL=True)
    process = CrawlerProcess(settings=settings)
    crawler = process.create_crawler(SiteSpider)
    process.crawl(crawler, start=start, proxy=proxy)
    process.start()
    assert isinstance(crawler.spider, SiteSpider)
    return crawler.spider.fetched


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("start", help="the first URL")
    parser.add_argument("--rewrite", action="store_true", help="send canonical URLs only")
    parser.add_argument("--proxy", help="send the traffic through this proxy (urlsan proxy)")
    args = parser.parse_args(argv)
    for url in crawl(args.start, args.proxy, args.rewrite):
        print(url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
