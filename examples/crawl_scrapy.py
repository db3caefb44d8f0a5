"""A Scrapy spider whose requests all go through `urlsan proxy`.

    urlsan proxy --listen-port 8080 --set urlsan_profile=crawler \
        --set urlsan_log=crawl-audit.jsonl &
    python examples/crawl_scrapy.py --proxy http://127.0.0.1:8080 http://example.com/

Scrapy sends what it joined from the page: dot segments resolved, but `%7E`, lower-case escapes
and tracking parameters as written, so the site sees `/%7Eguide/intro` and `/~guide/intro` as two
pages.  Through the proxy (here with ``--set urlsan_profile=crawler``) it sees one.

The proxy is set per request with ``meta["proxy"]``, which Scrapy's HttpProxyMiddleware honours
(the `http_proxy` environment variable works as well).  For https:// sites, Scrapy does not check
certificates by default, so mitmproxy's CA needs no set-up.

For deduplication inside Scrapy itself, see `frontier.py`'s `UrlsanFingerprinter`.
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


class SiteSpider(scrapy.Spider):
    name = "site"

    def __init__(self, start: str, proxy: str, max_pages: int = 50, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_url = start
        self.proxy = proxy
        self.allowed_domains = [urlsplit(start).hostname or ""]
        self.custom_max = max_pages
        self.fetched: list[str] = []

    async def start(self) -> AsyncIterator[scrapy.Request]:  # Scrapy 2.13 and later
        for request in self.start_requests():
            yield request

    def start_requests(self) -> Iterator[scrapy.Request]:  # earlier versions
        yield scrapy.Request(self.start_url, meta={"proxy": self.proxy})

    def parse(self, response: Response, **kwargs: Any) -> Iterator[scrapy.Request]:
        self.fetched.append(response.url)
        self.logger.info("%s %s", response.status, response.url)
        if len(self.fetched) >= self.custom_max or not hasattr(response, "css"):
            return
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, callback=self.parse, meta={"proxy": self.proxy})


def crawl(start: str, proxy: str, max_pages: int = 50) -> list[str]:
    """Run the spider to the end; returns the URLs Scrapy fetched."""
    process = CrawlerProcess(
        settings={
            "LOG_LEVEL": "WARNING",
            "ROBOTSTXT_OBEY": False,
            "TELNETCONSOLE_ENABLED": False,
            "HTTPERROR_ALLOW_ALL": True,
        }
    )
    crawler = process.create_crawler(SiteSpider)
    process.crawl(crawler, start=start, proxy=proxy, max_pages=max_pages)
    process.start()
    spider = crawler.spider
    assert isinstance(spider, SiteSpider)
    return spider.fetched


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("start", help="the first URL")
    parser.add_argument("--proxy", default="http://127.0.0.1:8080", help="urlsan proxy URL")
    parser.add_argument("--max-pages", type=int, default=50)
    args = parser.parse_args(argv)
    for url in crawl(args.start, args.proxy, args.max_pages):
        print(url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
