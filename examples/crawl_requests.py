"""A small crawler built on `requests` that sends all of its traffic through `urlsan proxy`.

The crawler does nothing special about URLs: it follows links as the pages write them.  The
proxy puts every request-target into canonical form on the way out, so the site sees one URL
per resource, and the audit log says what was rewritten.  `requests` already resolves dot
segments and decodes unreserved escapes itself; what it leaves, such as tracking parameters and
query order, the proxy's crawler profile takes care of.  (Deduplicating before fetching is the
crawler's job: see `frontier.py`.)

    urlsan proxy --listen-port 8080 --set urlsan_profile=crawler \
        --set urlsan_log=crawl-audit.jsonl &
    python examples/crawl_requests.py --proxy http://127.0.0.1:8080 http://example.com/

For https:// sites, pass mitmproxy's CA: --ca ~/.mitmproxy/mitmproxy-ca-cert.pem.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import deque
from urllib.parse import urljoin, urlsplit

import requests

_HREF = re.compile(r"""<a\s[^>]*href\s*=\s*["']([^"']+)["']""", re.IGNORECASE)


def crawl(start: str, proxy: str, max_pages: int = 50, ca: str | None = None) -> list[str]:
    """Breadth-first over the start URL's host; returns the URLs fetched, in order."""
    session = requests.Session()
    session.trust_env = False  # this proxy, not whatever the environment says
    session.proxies = {"http": proxy, "https": proxy}
    if ca:
        session.verify = ca
    host = urlsplit(start).netloc
    queue, seen, fetched = deque([start]), {start}, []
    while queue and len(fetched) < max_pages:
        url = queue.popleft()
        response = session.get(url, timeout=10)
        fetched.append(url)
        print(response.status_code, url)
        if "html" not in response.headers.get("Content-Type", ""):
            continue
        for href in _HREF.findall(response.text):
            link = urljoin(url, href)
            if urlsplit(link).netloc == host and link not in seen:
                seen.add(link)
                queue.append(link)
    return fetched


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("start", help="the first URL")
    parser.add_argument("--proxy", default="http://127.0.0.1:8080", help="urlsan proxy URL")
    parser.add_argument("--max-pages", type=int, default=50)
    parser.add_argument("--ca", help="mitmproxy's CA certificate, for https:// sites")
    args = parser.parse_args(argv)
    crawl(args.start, args.proxy, args.max_pages, args.ca)
    return 0


if __name__ == "__main__":
    sys.exit(main())
