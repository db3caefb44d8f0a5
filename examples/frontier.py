"""urlsan as the deduplication key of a crawl frontier, and as Scrapy's request fingerprint.

A crawler that keys its "seen" set on the URL as written fetches `/%7Eguide/intro`,
`/~guide/intro` and `/~guide/./intro?utm_source=feed` three times.  Keyed on the canonical form,
it fetches the page once.  The ``crawler`` profile adds the lossy rules a crawler wants (no
fragment, no tracking parameters, sorted query); ``rfc3986`` keeps to what RFC 3986 says is the
same resource.

    python examples/frontier.py urls.txt          # the fetch order, and how many collapsed
    python examples/frontier.py --profile rfc3986 < urls.txt

In Scrapy, set ``REQUEST_FINGERPRINTER_CLASS = "frontier.UrlsanFingerprinter"`` (with this file
importable) and its duplicate filter and HTTP cache use urlsan's canonical form.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import deque
from typing import Any
from weakref import WeakKeyDictionary

from urlsan.core import InvalidTarget, Policy, canonicalize

CRAWLER = Policy.profile("crawler")


def url_key(url: str, policy: Policy = CRAWLER) -> str | None:
    """The canonical form of ``url``, or None for a URL the policy refuses (strict profiles)."""
    try:
        return canonicalize(url, policy).url
    except InvalidTarget:
        return None


class Frontier:
    """URLs waiting to be fetched, first in first out, each canonical form at most once.

    The seen set holds a 16-byte digest per URL rather than the URL: at a billion URLs that is
    the difference between memory and disk.  (A real frontier keeps it in a key-value store or a
    Bloom filter; the key is the same.)
    """

    def __init__(self, policy: Policy = CRAWLER) -> None:
        self.policy = policy
        self._queue: deque[str] = deque()
        self._seen: set[bytes] = set()
        self.added = self.duplicates = self.refused = 0

    def add(self, url: str) -> bool:
        """Queue the canonical form of ``url`` unless it was seen before; True if queued."""
        key = url_key(url, self.policy)
        if key is None:
            self.refused += 1
            return False
        digest = hashlib.blake2b(key.encode(), digest_size=16).digest()
        if digest in self._seen:
            self.duplicates += 1
            return False
        self._seen.add(digest)
        self._queue.append(key)
        self.added += 1
        return True

    def pop(self) -> str:
        return self._queue.popleft()

    def __len__(self) -> int:
        return len(self._queue)


class UrlsanFingerprinter:
    """A Scrapy request fingerprinter (``REQUEST_FINGERPRINTER_CLASS``) keyed on urlsan.

    Like Scrapy's default, the fingerprint covers the method, the URL and the body; the URL is
    urlsan's canonical form under the ``URLSAN_PROFILE`` setting (default: crawler) instead of
    w3lib's ``canonicalize_url``.
    """

    def __init__(self, profile: str = "crawler") -> None:
        self.policy = Policy.profile(profile)
        self._cache: WeakKeyDictionary[Any, bytes] = WeakKeyDictionary()

    @classmethod
    def from_crawler(cls, crawler: Any) -> UrlsanFingerprinter:
        return cls(crawler.settings.get("URLSAN_PROFILE", "crawler"))

    def fingerprint(self, request: Any) -> bytes:
        cached = self._cache.get(request)
        if cached is None:
            url = url_key(request.url, self.policy) or request.url
            data = {"method": request.method, "url": url, "body": (request.body or b"").hex()}
            cached = hashlib.sha1(json.dumps(data, sort_keys=True).encode()).digest()
            self._cache[request] = cached
        return cached


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", nargs="?", default="-", help="URLs, one per line (default: stdin)")
    parser.add_argument("--profile", default="crawler", help="urlsan profile (default: crawler)")
    args = parser.parse_args(argv)
    frontier = Frontier(Policy.profile(args.profile))
    with sys.stdin if args.file == "-" else open(args.file, encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                frontier.add(line.strip())
    while frontier:
        print(frontier.pop())
    print(
        f"{frontier.added} to fetch, {frontier.duplicates} duplicates collapsed, "
        f"{frontier.refused} refused",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
