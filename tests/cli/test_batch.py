"""The streaming plumbing: pickling for worker processes, bounded reads, flat memory, progress."""

from __future__ import annotations

import io
import pickle
import tracemalloc
from pathlib import Path

import pytest
from cli_harness import RunUrlsan
from urlsan.cli.batch import Canonicalizer, Detail, Line, Progress, read_lines
from urlsan.core import Policy, canonicalize

POLICIES = [
    Policy(),
    Policy.profile("rfc2396"),
    Policy.profile("crawler"),
    Policy.profile("strict"),
    Policy.profile("crawler").with_rules("+merge-slashes,-sort-query,+reject-escaped-slash"),
]
SAMPLES = [
    "HTTP://Example.COM:80/%7euser/./a/../b",
    "http://a//b/?utm_source=x&b=1&a=2#top",
    "http://a/b%2Fc",
    "/x/%41?q=%zz",
]


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.name)
def test_policies_pickle_and_behave_the_same(policy: Policy) -> None:
    # multiprocessing (--jobs), Dask and Spark ship the policy to workers by pickling it.
    copy = pickle.loads(pickle.dumps(policy))
    assert copy == policy
    for url in SAMPLES:
        try:
            expected = canonicalize(url, policy)
        except ValueError as e:
            with pytest.raises(type(e)):
                canonicalize(url, copy)
            continue
        assert canonicalize(url, copy) == expected


def test_canonicalizer_and_function_pickle() -> None:
    canon = Canonicalizer(Policy.profile("crawler"), Detail.RULES)
    copy = pickle.loads(pickle.dumps(canon))
    assert copy(SAMPLES) == canon(SAMPLES)
    assert pickle.loads(pickle.dumps(canonicalize)) is canonicalize  # by reference, no state


def test_canonicalizer_outcomes() -> None:
    canon = Canonicalizer(Policy.profile("strict"), Detail.RULES)
    (ok, rules), (rejected, why) = canon(["HTTP://a/", "http://a/b c"])
    assert (ok, rules) == ("http://a/", ("lowercase-scheme",))
    assert rejected is None and why.startswith("rejected: ")


def test_read_lines_never_holds_a_long_line() -> None:
    stream = io.BufferedReader(io.BytesIO(b"a\n" + b"x" * 1_000_000 + b"\nb"))
    lines = list(read_lines(stream, max_bytes=1000))
    assert lines == [
        Line(1, b"a", "a", None),
        Line(2, b"", None, "longer than 1000 bytes"),
        Line(3, b"b", "b", None),
    ]


def test_a_line_of_exactly_the_limit_is_fine() -> None:
    stream = io.BufferedReader(io.BytesIO(b"y" * 10 + b"\n" + b"z" * 10))
    assert [line.text for line in read_lines(stream, max_bytes=10)] == ["y" * 10, "z" * 10]


def _write_urls(path: Path, count: int) -> None:
    with path.open("w") as f:
        for i in range(count):
            # Mostly canonical already (the fast path), one in eight rewritten.
            f.write(f"HTTP://H{i % 97}.example/%7e{i}\n" if i % 8 == 0 else f"http://h/{i}\n")


def _peak(urlsan: RunUrlsan, *argv: str) -> int:
    tracemalloc.start()
    try:
        assert urlsan("canon", *argv).status == 0
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_is_flat_in_the_number_of_lines(urlsan: RunUrlsan, tmp_path: Path) -> None:
    """The 10-million-line claim, scaled down: 10× the lines, not 10× the memory
    (bench/cli.py measures the RSS of a real 10-million-line run)."""
    small, large = tmp_path / "small.txt", tmp_path / "large.txt"
    _write_urls(small, 6_000)
    _write_urls(large, 60_000)
    out = str(tmp_path / "out.txt")
    _peak(urlsan, "-i", str(small), "-o", out)  # warm caches (lru_cache, regexes) first
    peak_small = _peak(urlsan, "-i", str(small), "-o", out)
    peak_large = _peak(urlsan, "-i", str(large), "-o", out)
    assert peak_large < 1.5 * peak_small + 256 * 1024, (peak_small, peak_large)


def test_progress_draws_then_clears() -> None:
    err = io.StringIO()
    progress = Progress(err, size=1000, position=lambda: 250, enabled=True)
    progress.update(10)
    assert err.getvalue() == ""  # nothing in the first second: small inputs never show it
    progress.next = 0.0
    progress.update(12345)
    assert "[#######" in err.getvalue() and "25%" in err.getvalue()
    assert "12,345 lines" in err.getvalue()
    progress.close()
    assert err.getvalue().endswith("\r\x1b[K")
    off = io.StringIO()
    quiet = Progress(off, size=None, position=None, enabled=False)
    quiet.next = 0.0
    quiet.update(5)
    assert off.getvalue() == ""
