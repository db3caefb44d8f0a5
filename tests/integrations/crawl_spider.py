"""The spider the Scrapy tests run with ``scrapy runspider``: it follows every link on the site,
through the site itself as the HTTP proxy (``-a proxy=…``); settings come as ``-s NAME=VALUE``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.http import Response


class SiteSpider(scrapy.Spider):
    name = "site"
    custom_settings = {  # noqa: RUF012 - Scrapy's own class attribute
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        "HTTPERROR_ALLOW_ALL": True,
        "LOG_LEVEL": "INFO",
    }

    def __init__(self, start: str, proxy: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_url = start
        self.proxy = proxy

    async def start(self) -> AsyncIterator[scrapy.Request]:  # Scrapy 2.13 and later
        for request in self.start_requests():
            yield request

    def start_requests(self) -> Iterator[scrapy.Request]:  # earlier versions
        yield scrapy.Request(self.start_url, meta={"proxy": self.proxy})

    def parse(self, response: Response, **kwargs: Any) -> Iterator[scrapy.Request]:
        yield from response.follow_all(css="a", meta={"proxy": self.proxy})
