"""urlsan as the deduplication key of a crawl frontier.

A crawler that keys its "seen" set on the URL as written fetches `/%7Eguide/intro`,
`/~guide/intro` and `/~guide/./intro?utm_source=feed` three times.  Keyed on the canonical form,
it fetches the page once.  The ``crawler`` profile adds the lossy rules a crawler wants (no
fragment, no tracking parameters, sorted query); ``rfc3986`` keeps to what RFC 3986 says is the
same resource.

    python examples/frontier.py urls.txt          # the fetch order, and how many collapsed
    python examples/frontier.py --profile rfc3986 < urls.txt

In Scrapy, the same key is one setting away (docs/crawling.md):
``REQUEST_FINGERPRINTER_CLASS = "urlsan.scrapy.RequestFingerprinter"``.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections import deque

from urlsan.core import InvalidTarget, Policy, canonicalize


class Frontier:
    """URLs waiting to be fetched, first in first out, each canonical form at most once.

    The seen set holds a 16-byte digest per URL rather than the URL: at a billion URLs that is
    the difference between memory and disk.  (A real frontier keeps it in a key-value store or a
    Bloom filter; the key is the same.)
    """

    def __init__(self, policy: Policy | None = None) -> None:
        self.policy = policy or Policy.profile("crawler")
        self._queue: deque[str] = deque()
        self._seen: set[bytes] = set()
        self.added = self.duplicates = self.refused = 0

    def add(self, url: str) -> bool:
        """Queue the canonical form of ``url`` unless it was seen before; True if queued."""
        try:
            key = canonicalize(url, self.policy).url
        except InvalidTarget:  # only strict policies refuse
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
