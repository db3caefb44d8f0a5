"""examples/frontier.py: the library as a crawl frontier's key and as Scrapy's fingerprint."""

from __future__ import annotations

import subprocess
import sys

import pytest
from example_harness import EXAMPLES, example_env

sys.path.insert(0, str(EXAMPLES))
import frontier

VARIANTS = [
    "http://example.com/~guide/intro",
    "HTTP://Example.COM:80/%7Eguide/./intro",
    "http://example.com/~guide/intro?utm_source=feed#top",
    "http://example.com/%7eguide/x/../intro?",
]


def test_one_fetch_per_canonical_form() -> None:
    f = frontier.Frontier()
    assert [f.add(u) for u in [*VARIANTS, "http://example.com/other"]] == [
        True, False, False, False, True,
    ]  # fmt: skip
    assert (f.added, f.duplicates, len(f)) == (2, 3, 2)
    assert [f.pop(), f.pop()] == ["http://example.com/~guide/intro", "http://example.com/other"]


def test_meaning_keeping_profile_keeps_tracking_parameters_apart() -> None:
    f = frontier.Frontier(frontier.Policy.profile("rfc3986"))
    for url in VARIANTS:
        f.add(url)
    assert f.added == 3  # the utm_ variant and the one with an empty query differ under RFC 3986


def test_refused_urls_are_counted() -> None:
    f = frontier.Frontier(frontier.Policy.profile("strict"))
    assert not f.add("http://a/b c")
    assert f.refused == 1


def test_command_line(tmp_path: object) -> None:
    p = subprocess.run(
        [sys.executable, str(EXAMPLES / "frontier.py")],
        input="\n".join(VARIANTS) + "\n\n",
        capture_output=True,
        text=True,
        env=example_env(),
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout == "http://example.com/~guide/intro\n"
    assert p.stderr == "1 to fetch, 3 duplicates collapsed, 0 refused\n"


def test_scrapy_fingerprinter() -> None:
    scrapy = pytest.importorskip("scrapy")
    fp = frontier.UrlsanFingerprinter()
    prints = {fp.fingerprint(scrapy.Request(u)) for u in VARIANTS}
    assert len(prints) == 1
    assert fp.fingerprint(scrapy.Request(VARIANTS[0], method="POST")) not in prints
    assert fp.fingerprint(scrapy.Request("http://example.com/other")) not in prints
    # Scrapy's own fingerprint tells %7E and ~ apart, and keeps tracking parameters.
    from scrapy.utils.request import RequestFingerprinter

    default = RequestFingerprinter()
    assert len({default.fingerprint(scrapy.Request(u)) for u in VARIANTS}) > 1


def test_the_snippet_in_docs_crawling() -> None:
    doc = (EXAMPLES.parent / "docs" / "crawling.md").read_text()
    code = doc.split("```python\n", 1)[1].split("```", 1)[0]
    call, expected = code.rsplit("\n# ", 1)
    namespace: dict[str, object] = {}
    exec(call.rsplit("\n\n", 1)[0], namespace)
    last_line = call.rsplit("\n\n", 1)[1]
    assert repr(eval(last_line, namespace)) == expected.strip()
