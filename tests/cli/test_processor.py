"""`Processor` (cli/processor.py): a block's lines to their output, pickled for workers."""

from __future__ import annotations

import pickle

import pytest

from urlsan.cli.blocks import Block
from urlsan.cli.formats import Mode
from urlsan.cli.processor import OnError, Processor
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
    # Spawned --jobs workers (macOS, Windows), Dask and Spark get the policy pickled.
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


def test_processor_and_function_pickle() -> None:
    processor = Processor(Policy.profile("crawler"), Mode.DIFF)
    copy = pickle.loads(pickle.dumps(processor))
    block = Block(("\n".join(SAMPLES) + "\n").encode(), 1)
    assert copy(block) == processor(block)
    assert pickle.loads(pickle.dumps(canonicalize)) is canonicalize  # by reference, no state


def test_processor_outcomes() -> None:
    done = Processor(Policy.profile("strict"))(Block(b"HTTP://a/\nhttp://a/b c\nhttp://b/\n", 7))
    assert (done.lines, done.valid) == (3, 2)
    assert done.pieces == [b"http://a/\n", b"http://a/b c\nhttp://b/\n"]  # cut at the bad line
    ((number, why),) = done.bad
    assert number == 8 and why.startswith("rejected: ")
    stop = Processor(Policy.profile("strict"), on_error=OnError.FAIL)
    assert stop(Block(b"HTTP://a/\nhttp://a/b c\nhttp://b/\n", 1)).pieces == [b"http://a/\n", b""]


def test_urls_hands_a_line_that_may_be_too_long_to_the_slow_path() -> None:
    # 4 bytes per character at most: a line of more than max_bytes / 4 characters is measured.
    processor = Processor(Policy(), max_bytes=40)
    done = processor(Block("http://a/\nhttp://b/éééééééééééééééé\nhttp://c/\n".encode(), 1))
    assert done.bad == [(2, "longer than 40 bytes")]
    done = processor(Block(b"http://a/\nhttp://b/bbbbbbbbbbbbbbbbbbbbbbbbbbbbb\nHTTP://c/\n", 1))
    assert (done.bad, done.pieces) == (
        [],
        [b"http://a/\nhttp://b/bbbbbbbbbbbbbbbbbbbbbbbbbbbbb\nhttp://c/\n"],
    )
