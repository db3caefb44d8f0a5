"""Bugs found by the hardening tests, each pinned by its minimal repro.

Open bugs are strict xfails: when a fix lands, the test passes, strict xfail turns that into a
failure, and the marker (and the matching tolerance in fuzzing.py) must go.  Fixed bugs stay as
plain regression tests.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from urlsan.core import InvalidTarget, Policy, canonicalize

CORE = "core bug found by tests/hardening (reported to the core owner)"


# Found here, fixed in core: the fast-path regex backtracked exponentially.
def test_merge_slashes_fast_path_is_linear() -> None:
    # core/fastpath.py: with merge-slashes the path pattern is (?:/?[pchar]+)*/? — a run of
    # pchars followed by any character the pattern refuses backtracks 2^n ways.  One request
    # "/aaaa…a%" (40 a's) would hold mitmproxy's event loop for hours.  Run in a subprocess so
    # a hang cannot hold the test run; 8 s is ~10^4 times what a linear scan needs.
    code = textwrap.dedent("""
        from urlsan.core import Policy, canonicalize
        policy = Policy.profile("rfc3986").with_rules("+merge-slashes")
        canonicalize("/" + "a" * 40 + "%", policy, form="origin")
    """)
    try:
        subprocess.run([sys.executable, "-c", code], timeout=8, check=True)
    except subprocess.TimeoutExpired:
        pytest.fail("canonicalize('/' + 'a' * 40 + '%', +merge-slashes) did not finish in 8 s")


# Found here, fixed in core: dot-segment removal leaves a leading '//'.
def test_origin_dot_segments_do_not_create_an_authority() -> None:
    # "/.//a" is the path "//a" relative to nothing; as a target "//a" reads as authority "a" to
    # urllib.parse.urlsplit, werkzeug and http.server (PATH_INFO "/a" instead of "//a"), and
    # canonicalize("//a") in auto form is "//a/": the output is not a fixed point.
    # WHATWG's answer is to keep "/." in front ("/.//a"), as _dot_prefix does for other forms.
    result = canonicalize("/.//a", form="origin")
    assert not result.url.startswith("//"), result.url
    assert canonicalize("/.//a").url == canonicalize(canonicalize("/.//a").url).url


# Found here, fixed in core: relative './/a' becomes absolute '/a'.
def test_relative_dot_segments_keep_the_reference_relative() -> None:
    # RFC 3986 §5.2: ".//a" against http://h/b/c is http://h/b//a; "/a" is http://h/a.
    assert canonicalize(".//a").url in (".//a", "./" + "/a")
    assert canonicalize("a/..//b").url in ("./" + "/b", ".//b")


# Found here, fixed in core: origin-form rootless path is not resolved.
def test_origin_form_without_leading_slash_is_a_fixed_point() -> None:
    # empty-path adds the "/" after dot segments were skipped (the path was rootless then).
    once = canonicalize("a/./b", form="origin").url
    assert once == canonicalize(once, form="origin").url == "/a/b"


# Found here, fixed in core: strip-host-dot strips one dot of several.
def test_strip_host_dot_is_idempotent() -> None:
    crawler = Policy.profile("crawler")
    once = canonicalize("http://example.com../", crawler).url
    assert once == canonicalize(once, crawler).url


# Found here, fixed in core: host edit offsets count in the rewritten host.
def test_host_edit_offsets_point_into_the_input() -> None:
    # encode-unsafe turns "\x00" into "%00" first; lowercase-host then reports end=4 in an
    # input of 2 characters (Edit's contract: offsets into the input).
    result = canonicalize("\x00A", form="authority")
    assert all(e.end <= len(result.input) for e in result.edits), result.edits


# Found here, fixed in core: a raw "\" was encoded to "%5C", which the same policy then
# rejected.  A raw backslash is now refused like its escape.
def test_reject_escaped_slash_refuses_a_raw_backslash_too() -> None:
    policy = Policy.profile("rfc3986").with_rules("+reject-escaped-slash")
    with pytest.raises(InvalidTarget) as e:
        canonicalize("/a\\b", policy, form="origin")
    assert (e.value.rule, e.value.component, e.value.offset) == ("reject-escaped-slash", "path", 2)


# Found here, fixed in core: with_rules("-decode-unreserved") was accepted but did nothing.
def test_character_rules_can_be_switched_off() -> None:
    policy = Policy.profile("rfc3986").with_rules("-decode-unreserved")
    assert canonicalize("/%7e", policy, form="origin").url == "/%7E"


# Found here, fixed in core: merge-slashes ran before the './' guard.
def test_decoded_slash_guard_survives_merge_slashes() -> None:
    # decode-escaped-slash + merge-slashes on a relative reference: "%2F~" -> "/~" guarded as
    # ".//~", which a second pass merges to "./~" (then "~"): not a fixed point.
    policy = Policy.profile("rfc3986").with_rules("+decode-escaped-slash,+merge-slashes")
    once = canonicalize("%2F~", policy, form="reference").url
    assert once == canonicalize(once, policy, form="reference").url


ADDON = "addon bug found by tests/hardening (reported to the addon owner)"


# Found here, fixed in the addon: request.query raised on a '[' target.
def test_addon_survives_a_target_urllib_cannot_split() -> None:
    # mitmproxy's Request.query parses self.url with urllib.parse.urlsplit, which raises
    # "Invalid IPv6 URL" for the target "[" (reachable through HTTP/2 :path or another addon).
    # The addon counts an internal error and forwards the target untouched.
    pytest.importorskip("mitmproxy")
    from mitmproxy.test import taddons, tflow, tutils

    from urlsan.addon import UrlSanitizer

    addon = UrlSanitizer()
    with taddons.context(addon):
        flow = tflow.tflow(req=tutils.treq(path=b"[a b]"))
        addon.requestheaders(flow)
        assert addon.errors == 0
        assert flow.request.data.path == b"[a%20b%5D" or b" " not in flow.request.data.path
