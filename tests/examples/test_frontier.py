"""examples/frontier.py and examples/crawl_scrapy.py: deduplicating in the crawler itself."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from types import ModuleType

import pytest

from tests.examples.shared import Origin
from tests.harness import EXAMPLES, example_env
from urlsan.core import Policy


def load(name: str) -> ModuleType:
    """An example file as a module, without putting examples/ on sys.path."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


frontier = load("frontier")

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
    f = frontier.Frontier(Policy.profile("rfc3986"))
    for url in VARIANTS:
        f.add(url)
    assert f.added == 3  # the utm_ variant and the one with an empty query differ under RFC 3986


def test_refused_urls_are_counted() -> None:
    f = frontier.Frontier(Policy.profile("strict"))
    assert not f.add("http://a/b c")
    assert f.refused == 1


def test_command_line() -> None:
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


def crawl_scrapy(origin: Origin, *args: str) -> list[str]:
    pytest.importorskip("scrapy")
    crawl = subprocess.run(
        [sys.executable, str(EXAMPLES / "crawl_scrapy.py"), *args, f"{origin.url}/"],
        env=example_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert crawl.returncode == 0, crawl.stderr
    return crawl.stdout.splitlines()


def test_scrapy_example_fetches_each_page_once(origin: Origin) -> None:
    crawl_scrapy(origin)
    # "/~guide/intro" (linked from its own page) and the fbclid spelling of the search are the
    # same pages as "/%7Eguide/intro" and the utm_source spelling fetched before them.
    assert sorted(origin.targets) == [
        "/", "/%7Eguide/intro", "/about", "/search?utm_source=feed&q=a%2fb&a=1",
    ]  # fmt: skip


def test_scrapy_example_rewrites_to_canonical_urls(origin: Origin) -> None:
    fetched = crawl_scrapy(origin, "--rewrite")
    assert sorted(origin.targets) == ["/", "/about", "/search?a=1&q=a%2Fb", "/~guide/intro"]
    assert f"{origin.url}/search?a=1&q=a%2Fb" in fetched
