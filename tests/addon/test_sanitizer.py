"""The addon in mitmproxy's test harness: every option, mode and action, HTTP/1 and HTTP/2."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mitmproxy import exceptions, http
from mitmproxy.flow import Error
from mitmproxy.test import taddons, tflow, tutils

from urlsan.addon import UrlSanitizer, sanitizer
from urlsan.addon.sanitizer import MODES, parse_settings
from urlsan.audit.record import MAX_EDITS, MAX_TEXT
from urlsan.core import Policy

DIRTY = b"/a/./b/../c?x=%7e#frag"
CANONICAL = b"/a/c?x=~"


def flow(
    path: bytes = DIRTY,
    *,
    method: bytes = b"GET",
    host: bytes = b"example.com",
    http2: bool = False,
    headers: list[tuple[bytes, bytes]] | None = None,
    authority: bytes = b"",
) -> http.HTTPFlow:
    version = b"HTTP/2.0" if http2 else b"HTTP/1.1"
    hdrs = list(headers or [])
    if not http2:
        hdrs.insert(0, (b"Host", host))
    else:
        authority = authority or host
    req = tutils.treq(
        method=method,
        path=path,
        http_version=version,
        host="example.com",
        port=80,
        authority=authority,
        headers=http.Headers(hdrs),
    )
    return tflow.tflow(req=req)


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("ascii").splitlines()]


def served(addon: UrlSanitizer, f: http.HTTPFlow, status: int = 200) -> http.HTTPFlow:
    """``f`` through the addon as mitmproxy serves it: its request headers, then the upstream's
    response headers (``status``) unless urlsan answered it itself."""
    addon.requestheaders(f)
    if f.response is None:
        f.response = tutils.tresp(status_code=status)
    addon.responseheaders(f)
    return f


@pytest.fixture
def addon() -> UrlSanitizer:
    return UrlSanitizer()


class TestOptions:
    def test_defaults(self, addon: UrlSanitizer) -> None:
        with taddons.context(addon) as tctx:
            assert tctx.options.urlsan_mode == "rewrite"
            assert tctx.options.urlsan_log == ""
            assert tctx.options.urlsan_profile == "rfc3986"
            assert tctx.options.urlsan_signed == "skip"
            assert "X-Amz-Signature" in tctx.options.urlsan_redact
            assert addon.settings.policy.enabled("strip-fragment")

    @pytest.mark.parametrize(
        "option, value, message",
        [
            ("urlsan_mode", "block", "urlsan_mode must be one of"),
            ("urlsan_profile", "nope", "urlsan_profile"),
            ("urlsan_rules", "+no-such-rule", "urlsan_rules"),
            ("urlsan_filter", "~~~ (", "urlsan_filter"),
            ("urlsan_signed", "maybe", "urlsan_signed must be one of"),
        ],
    )
    def test_invalid_values_are_options_errors(
        self, addon: UrlSanitizer, option: str, value: str, message: str
    ) -> None:
        with taddons.context(addon) as tctx:
            with pytest.raises(exceptions.OptionsError, match=message):
                tctx.configure(addon, **{option: value})
            assert addon.settings.mode == "rewrite"  # the old settings stay

    def test_rules_and_profile(self, addon: UrlSanitizer) -> None:
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_profile="crawler", urlsan_rules="+merge-slashes")
            assert addon.settings.policy.enabled("merge-slashes")
            assert addon.settings.policy.enabled("sort-query")
            tctx.configure(addon, urlsan_rules="-strip-fragment")
            assert not addon.settings.policy.enabled("strip-fragment")

    def test_rules_change_what_is_forwarded(self, addon: UrlSanitizer) -> None:
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_rules="+merge-slashes,-remove-dot-segments")
            f = flow(b"/a//b/./c")
            addon.requestheaders(f)
            assert f.request.data.path == b"/a/b/./c"

    def test_unwritable_log_is_an_options_error(self, addon: UrlSanitizer, tmp_path: Path) -> None:
        missing = str(tmp_path / "missing" / "audit.jsonl")
        with (
            taddons.context(addon) as tctx,
            pytest.raises(exceptions.OptionsError, match="urlsan_log"),
        ):
            tctx.configure(addon, urlsan_log=missing)

    def test_log_can_be_switched_at_run_time(self, addon: UrlSanitizer, tmp_path: Path) -> None:
        first, second = tmp_path / "1.jsonl", tmp_path / "2.jsonl"
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_log=str(first))
            addon.requestheaders(flow())
            tctx.configure(addon, urlsan_log=str(second))
            addon.requestheaders(flow())
            tctx.configure(addon, urlsan_log="")
            addon.requestheaders(flow())
            assert addon.log is None
        assert len(records(first)) == 1
        assert len(records(second)) == 1

    def test_parse_settings_is_pure(self) -> None:
        s = parse_settings("audit", "strict", "+sort-query", "~d example.com", ["Token"], "rewrite")
        assert s.mode == "audit"
        assert s.decision.targets[0].strict and s.policy.enabled("sort-query")
        assert s.redactor.names == frozenset({"token"})


class TestModes:
    @pytest.mark.parametrize("http2", [False, True])
    def test_rewrite(self, addon: UrlSanitizer, http2: bool) -> None:
        with taddons.context(addon):
            f = flow(http2=http2)
            addon.requestheaders(f)
            assert f.request.data.path == CANONICAL
            assert f.response is None
            meta = f.metadata["urlsan"]
            assert meta["action"] == "rewritten"
            assert {e["rule"] for e in meta["edits"]} == {
                "remove-dot-segments",
                "decode-unreserved",
                "strip-fragment",
            }
            assert f.marked
            assert f.comment.startswith("urlsan rewritten: ")
            assert "remove-dot-segments" in f.comment

    @pytest.mark.parametrize("http2", [False, True])
    def test_audit_forwards_unchanged(self, addon: UrlSanitizer, http2: bool) -> None:
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_mode="audit")
            f = flow(host=b"Example.COM:80", http2=http2)
            before = (f.request.data.path, f.request.host_header)
            addon.requestheaders(f)
            assert (f.request.data.path, f.request.host_header) == before
            assert f.metadata["urlsan"]["action"] == "audited"
            assert f.metadata["urlsan"]["after"] == CANONICAL.decode()

    @pytest.mark.parametrize(
        "path, rule",
        [
            (b"/a%zz", "encode-stray-percent"),
            (b"/a b", "encode-unsafe"),
            (b"/c\r\nX-Injected: 1", "encode-unsafe"),
            (b"/caf\xc3\xa9", "encode-non-ascii"),
            (b"/a?b#c d", "encode-unsafe"),  # the fragment is checked before it is stripped
        ],
    )
    @pytest.mark.parametrize("http2", [False, True])
    def test_reject_invalid(self, addon: UrlSanitizer, path: bytes, rule: str, http2: bool) -> None:
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_mode="reject")
            f = flow(path, http2=http2)
            addon.requestheaders(f)
            assert f.response is not None
            assert f.response.status_code == 400
            assert f.response.headers["content-type"].startswith("text/plain")
            body = f.response.content or b""
            assert rule.encode() in body and b"offset" in body
            assert b"\r" not in body.rstrip(b"\n") and b"\n" not in body.rstrip(b"\n")
            assert f.request.data.path == path  # nothing forwarded, nothing changed
            facts = f.metadata["urlsan"]
            assert facts["action"] == "rejected" and facts["rejected_by"] == rule
            assert rule in facts["reason"] and facts["after"] is None
            # findings hold findings (docs/findings.md), never the rule that refused
            assert rule not in {x["rule"] for x in facts["findings"]}

    def test_reject_forwards_valid_targets_canonicalized(self, addon: UrlSanitizer) -> None:
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_mode="reject")
            f = flow(b"/a/./b/%7e#ok")
            addon.requestheaders(f)
            assert f.response is None
            assert f.request.data.path == b"/a/b/~"

    @pytest.mark.parametrize("method", [b"GET", b"HEAD"])
    @pytest.mark.parametrize("http2", [False, True])
    def test_redirect(self, addon: UrlSanitizer, method: bytes, http2: bool) -> None:
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_mode="redirect")
            f = flow(method=method, http2=http2)
            addon.requestheaders(f)
            assert f.response is not None
            assert f.response.status_code == 308
            assert f.response.reason == "Permanent Redirect"  # never "HTTP/1.1 308 " bare
            assert f.response.headers["location"] == CANONICAL.decode()
            assert f.request.data.path == DIRTY
            assert f.metadata["urlsan"]["action"] == "redirected"

    def test_redirect_rewrites_other_methods(self, addon: UrlSanitizer) -> None:
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_mode="redirect")
            f = flow(method=b"POST")
            addon.requestheaders(f)
            assert f.response is None
            assert f.request.data.path == CANONICAL
            assert f.metadata["urlsan"]["action"] == "rewritten"

    def test_redirect_never_to_a_network_path(self, addon: UrlSanitizer) -> None:
        # Location: //evil.example/x would send the client to another host.
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_mode="redirect")
            f = flow(b"//evil.example/./x")
            addon.requestheaders(f)
            if f.response is not None:
                assert not f.response.headers["location"].startswith("//")
            else:
                assert not f.request.data.path.startswith(b"//")

    def test_redirect_host_only_change_is_rewritten(self, addon: UrlSanitizer) -> None:
        # A relative Location cannot fix the host: redirecting would loop.
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_mode="redirect")
            f = flow(b"/clean", host=b"EXAMPLE.com")
            addon.requestheaders(f)
            assert f.response is None
            assert f.request.headers["host"] == "example.com"

    @pytest.mark.parametrize("mode", MODES)
    def test_clean_target_is_byte_identical(self, addon: UrlSanitizer, mode: str) -> None:
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_mode=mode)
            for path in (b"/", b"/a/b?c=d&e", b"/~user/%2F?q=%C3%A9"):
                f = flow(path)
                addon.requestheaders(f)
                assert f.request.data.path == path
                assert f.response is None
                assert f.metadata["urlsan"]["action"] == "unchanged"
                assert not f.marked
                if f.metadata["urlsan"]["findings"]:  # %2F: shown to the auditor, not marked
                    assert f.comment.startswith("urlsan found, forwarded unchanged\n")
                    assert "findings: escaped-slash (path at 7)" in f.comment
                else:
                    assert not f.comment


class TestHost:
    @pytest.mark.parametrize(
        "host, expected",
        [
            (b"Example.COM", "example.com"),
            (b"example.com:80", "example.com"),
            (b"example.com:0080", "example.com"),
            (b"EXAMPLE.com:8080", "example.com:8080"),
            (b"example.com", "example.com"),
        ],
    )
    def test_http1_host_header(self, addon: UrlSanitizer, host: bytes, expected: str) -> None:
        with taddons.context(addon):
            f = flow(b"/clean", host=host)
            addon.requestheaders(f)
            assert f.request.headers["host"] == expected
            assert f.request.data.path == b"/clean"

    def test_http2_authority(self, addon: UrlSanitizer) -> None:
        with taddons.context(addon):
            f = flow(b"/clean", host=b"Example.COM:80", http2=True)
            addon.requestheaders(f)
            assert f.request.authority == "example.com"
            edits = f.metadata["urlsan"]["edits"]
            assert [e["rule"] for e in edits] == ["lowercase-host", "drop-default-port"]
            assert edits[0]["start"] == 0 and edits[0]["before"] == "Example.COM"

    def test_absolute_form_authority(self, addon: UrlSanitizer) -> None:
        # Kept by mitmproxy outside regular mode (e.g. upstream mode): canonicalized like Host.
        with taddons.context(addon):
            f = flow(b"/clean", host=b"Example.COM", authority=b"Example.COM:80")
            addon.requestheaders(f)
            assert f.request.data.authority == b"example.com"
            assert f.request.headers["host"] == "example.com"

    def test_https_default_port(self, addon: UrlSanitizer) -> None:
        with taddons.context(addon):
            f = flow(b"/clean", host=b"example.com:443")
            f.request.scheme = "https"
            addon.requestheaders(f)
            assert f.request.headers["host"] == "example.com"

    @pytest.mark.parametrize(
        "host", [b"Example.com/../x", b"Example.com?x#y", b"EXAMPLE.com/a b", b"u:p@Example.COM"]
    )
    def test_host_that_is_not_host_port_is_left_alone(
        self, addon: UrlSanitizer, host: bytes
    ) -> None:
        # Only host and port rules may touch a Host header; anything more is not ours to repair.
        with taddons.context(addon):
            f = flow(b"/clean", host=host)
            addon.requestheaders(f)
            assert f.request.headers["host"] == host.decode()

    def test_huge_host_is_canonicalized_but_never_cached(self, addon: UrlSanitizer) -> None:
        # A client chooses the length of its Host header: one longer than any DNS name is
        # checked like any other, and kept in no cache (a thousand of them would be megabytes).
        from urlsan.addon import decision

        huge = b"A." * 50_000 + b"Example.com"
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_drop_params=["example.com:ref"])
            sizes = decision.sent_to.cache_info().currsize
            f = flow(b"/clean?ref=1", host=huge)
            addon.requestheaders(f)
            assert decision.sent_to.cache_info().currsize == sizes
        assert f.request.headers["host"] == huge.decode().lower()
        assert f.request.data.path == b"/clean"  # the host-scoped spec applied all the same


class TestSigned:
    @pytest.mark.parametrize(
        "path, headers",
        [
            (b"/b/k%7e?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=abc", []),
            (b"/b/k%7e?x-amz-credential=abc", []),
            (b"/o/k%7e?X-Goog-Signature=abc", []),
            (b"/k%7e?Expires=1&Signature=abc&Key-Pair-Id=K", []),
            (b"/c/b%7e?sv=2021&se=2030&sig=abc", []),
            (b"/b/k%7e", [(b"Authorization", b"AWS4-HMAC-SHA256 Credential=x, Signature=y")]),
        ],
    )
    def test_signed_requests_are_only_audited(
        self, addon: UrlSanitizer, path: bytes, headers: list[tuple[bytes, bytes]]
    ) -> None:
        with taddons.context(addon):
            f = flow(path, headers=headers)
            addon.requestheaders(f)
            assert f.request.data.path == path
            assert f.metadata["urlsan"]["action"] == "skipped-signed"
            assert f.marked == ":warning:"

    def test_signed_rewrite_option(self, addon: UrlSanitizer) -> None:
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_signed="rewrite")
            f = flow(b"/b/k%7e?X-Amz-Signature=abc")
            addon.requestheaders(f)
            assert f.request.data.path == b"/b/k~?X-Amz-Signature=abc"

    def test_partial_signature_parameters_are_not_signed(self, addon: UrlSanitizer) -> None:
        with taddons.context(addon):
            f = flow(b"/k%7e?Signature=abc")  # CloudFront needs Key-Pair-Id too
            addon.requestheaders(f)
            assert f.request.data.path == b"/k~?Signature=abc"

    def test_signed_but_not_wire_safe_is_rewritten(self, addon: UrlSanitizer) -> None:
        # A signature never exempts bytes that would split the request line.
        with taddons.context(addon):
            f = flow(b"/k\r\nX: 1?X-Amz-Signature=abc", http2=True)
            addon.requestheaders(f)
            assert f.request.data.path == b"/k%0D%0AX:%201?X-Amz-Signature=abc"


class TestFlowHandling:
    def test_filter(self, addon: UrlSanitizer) -> None:
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_filter="!~d s3.amazonaws.com")
            skipped = flow(host=b"bucket.s3.amazonaws.com")
            skipped.request.host = "bucket.s3.amazonaws.com"
            addon.requestheaders(skipped)
            assert skipped.request.data.path == DIRTY
            assert "urlsan" not in skipped.metadata
            touched = flow()
            addon.requestheaders(touched)
            assert touched.request.data.path == CANONICAL

    def test_answered_or_dead_flows_are_left_alone(self, addon: UrlSanitizer) -> None:
        with taddons.context(addon):
            answered = flow()
            answered.response = tutils.tresp()
            dead = flow()
            dead.live = False
            for f in (answered, dead):
                addon.requestheaders(f)
                assert f.request.data.path == DIRTY
                assert "urlsan" not in f.metadata

    def test_connect_is_left_alone(self, addon: UrlSanitizer) -> None:
        with taddons.context(addon):
            f = flow(b"", method=b"CONNECT", authority=b"Example.com:443")
            addon.requestheaders(f)
            assert "urlsan" not in f.metadata

    def test_asterisk_form(self, addon: UrlSanitizer) -> None:
        with taddons.context(addon):
            f = flow(b"*", method=b"OPTIONS")
            addon.requestheaders(f)
            assert f.request.data.path == b"*"

    @pytest.mark.parametrize(
        "mode, expect_response", [("rewrite", False), ("audit", False), ("reject", True)]
    )
    def test_exception_never_drops_or_corrupts(
        self,
        addon: UrlSanitizer,
        monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture,
        mode: str,
        expect_response: bool,
    ) -> None:
        class Broken(dict[str, Any]):
            def __setitem__(self, key: str, value: Any) -> None:
                raise RuntimeError("boom")

        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_mode=mode)
            f = flow(host=b"Example.COM")
            # Fail after the target was rewritten: the request must come back as it was.
            f.metadata = Broken()
            headers = f.request.headers.fields
            with caplog.at_level(logging.ERROR):
                addon.requestheaders(f)
            assert f.request.data.path == DIRTY
            assert f.request.headers.fields == headers
            assert "urlsan failed" in caplog.text
            assert addon.errors == 1
        if expect_response:
            assert f.response is not None and f.response.status_code == 400
        else:
            assert f.response is None

    def test_core_output_that_is_not_wire_safe_is_never_assigned(
        self, addon: UrlSanitizer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from urlsan.core import Result

        monkeypatch.setattr(
            "urlsan.addon.target.canonicalize",
            lambda target, policy, form: Result("/x", "/x y\r\nZ: 1"),
        )
        with taddons.context(addon):
            f = flow(b"/x")
            addon.requestheaders(f)
            assert f.request.data.path == b"/x"

    def test_stats_command(self, addon: UrlSanitizer) -> None:
        with taddons.context(addon) as tctx:
            addon.requestheaders(flow())
            addon.requestheaders(flow(b"/clean"))
            tctx.configure(addon, urlsan_mode="reject")
            addon.requestheaders(flow(b"/a b"))
            stats = json.loads(tctx.command(addon.stats))
            assert stats["actions"] == {"rewritten": 1, "unchanged": 1, "rejected": 1}
            assert stats["rules"]["remove-dot-segments"] == 1
            assert stats["errors"] == 0
            assert "urlsan.stats" in tctx.master.commands.commands

    def test_summary_logged_at_done(
        self, addon: UrlSanitizer, caplog: pytest.LogCaptureFixture
    ) -> None:
        with taddons.context(addon):
            addon.requestheaders(flow())
            with caplog.at_level(logging.INFO):
                addon.done()
        assert "urlsan: 1 request checked in rewrite mode: 1 rewritten" in caplog.text


class TestAuditLog:
    def test_record_fields(self, addon: UrlSanitizer, tmp_path: Path) -> None:
        log = tmp_path / "audit.jsonl"
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_log=str(log))
            addon.requestheaders(flow(http2=True))
            addon.requestheaders(flow(b"/clean"))  # not logged: nothing to say
            tctx.configure(addon, urlsan_mode="reject")
            addon.requestheaders(flow(b"/a%zz"))
            addon.done()
        first, second = records(log)
        assert set(first) >= {
            "ts",
            "client",
            "method",
            "scheme",
            "host",
            "before",
            "after",
            "action",
            "edits",
            "findings",
        }
        assert first["ts"].endswith("Z")
        assert first["client"] == "127.0.0.1:22"
        assert (first["method"], first["scheme"], first["host"]) == ("GET", "http", "example.com")
        assert first["before"] == DIRTY.decode() and first["after"] == CANONICAL.decode()
        assert first["action"] == "rewritten"
        assert first["http_version"] == "HTTP/2.0"
        edit = first["edits"][0]
        assert set(edit) == {"rule", "component", "start", "end", "before", "after"}
        assert second["action"] == "rejected" and second["after"] is None
        assert "encode-stray-percent" in second["reason"]

    @pytest.mark.parametrize(
        "mode, action",
        [("rewrite", "rewritten"), ("audit", "audited"), ("redirect", "redirected")],
    )
    def test_every_action_is_logged(
        self, addon: UrlSanitizer, tmp_path: Path, mode: str, action: str
    ) -> None:
        log = tmp_path / "audit.jsonl"
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_log=str(log), urlsan_mode=mode)
            served(addon, flow())
            served(addon, flow(b"/p%7e?X-Amz-Signature=s3cr3t"))
        assert [r["action"] for r in records(log)] == [action, "skipped-signed"]

    def test_findings_without_edits_are_logged_as_unchanged(
        self, addon: UrlSanitizer, tmp_path: Path
    ) -> None:
        log = tmp_path / "audit.jsonl"
        target = b"/a%2Fb"  # an escaped slash: reported, never decoded by default
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_log=str(log))
            f = served(addon, flow(target))
            assert f.request.data.path == target
        (record,) = records(log)
        assert record["action"] == "unchanged"
        assert record["findings"][0]["rule"] == "escaped-slash"
        assert record["before"] == record["after"] == "/a%2Fb"

    def test_redaction(self, addon: UrlSanitizer, tmp_path: Path) -> None:
        log = tmp_path / "audit.jsonl"
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_log=str(log), urlsan_signed="rewrite")
            addon.requestheaders(flow(b"/a/../b?token=t%6fp&X-Amz-Signature=s3cr3t&q=%7e"))
            addon.done()
        text = log.read_text()
        assert "s3cr3t" not in text and "t%6fp" not in text and "top" not in text
        record = records(log)[0]
        assert record["before"] == "/a/../b?token=***&X-Amz-Signature=***&q=%7e"
        assert record["after"] == "/b?token=***&X-Amz-Signature=***&q=~"

    def test_write_failure_keeps_serving(
        self, addon: UrlSanitizer, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_log=str(tmp_path / "audit.jsonl"))
            assert addon.log is not None
            addon.log.close()  # every later write fails, like a full disk
            with caplog.at_level(logging.ERROR):
                f = served(addon, flow())
            assert f.request.data.path == CANONICAL
            assert "could not write to audit log" in caplog.text


class TestMitmweb:
    """mitmweb shows a flow's comment and mark (not its metadata): the comment holds what an
    auditor looks for, the target as it came and the findings."""

    def test_comment_of_a_rewritten_flow(self, addon: UrlSanitizer) -> None:
        with taddons.context(addon):
            f = flow(b"/a/./b/%2e%2e/c?x=%7e")
            addon.requestheaders(f)
        assert f.marked == ":wrench:"
        head, original, findings = f.comment.split("\n")
        assert head.startswith("urlsan rewritten: ") and "remove-dot-segments" in head
        assert original == "original target: /a/./b/%2e%2e/c?x=%7e"
        assert findings.startswith("findings: ") and "dot-segment (path at 3)" in findings

    def test_comment_of_a_rejected_flow_keeps_raw_bytes_readable(self, addon: UrlSanitizer) -> None:
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_mode="reject")
            f = flow(b"/a%zz/\xff")
            addon.requestheaders(f)
        assert f.marked == ":no_entry:"
        assert f.comment.splitlines()[1] == "original target: /a%zz/\\udcff"

    def test_controls_and_bidi_overrides_are_shown_escaped(self, addon: UrlSanitizer) -> None:
        with taddons.context(addon):
            f = flow(b"/a/./\xe2\x80\xaeb\x1b[31m")
            addon.requestheaders(f)
        assert f.comment.splitlines()[1] == "original target: /a/./\\u202eb\\x1b[31m"

    def test_a_long_target_is_cut_in_the_comment(self, addon: UrlSanitizer) -> None:
        with taddons.context(addon):
            f = flow(b"/./" + b"a" * 5000)
            addon.requestheaders(f)
        original = f.comment.splitlines()[1]
        assert original == "original target: /./" + "a" * 997 + "…"
        assert f.metadata["urlsan"]["before"] == "/./" + "a" * 5000  # the whole, for machines


class TestStartUp:
    def test_one_line_says_what_urlsan_will_do(
        self, addon: UrlSanitizer, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        log = tmp_path / "audit.jsonl"
        with taddons.context(addon) as tctx:
            with caplog.at_level(logging.INFO):
                addon.running()
            assert "urlsan: rewrite mode, profile rfc3986, the profile's rules, no audit log" in (
                caplog.text
            )
            tctx.configure(
                addon,
                urlsan_mode="audit",
                urlsan_profile="crawler",
                urlsan_rules="+merge-slashes",
                urlsan_log=str(log),
            )
            assert addon.startup_line() == (
                f"urlsan: audit mode, profile crawler, rules +merge-slashes, audit log {log}"
            )

    def test_a_misspelt_option_stops_the_proxy(
        self,
        addon: UrlSanitizer,
        caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """mitmproxy keeps options it does not know aside (a script may add them later); by the
        time the proxy runs, a urlsan_* one left there is a mistake: refused, not ignored."""
        with taddons.context(addon) as tctx:
            tctx.options.deferred["urlsan_mod"] = "audit"
            tctx.options.deferred["other_addons_option"] = "1"
            stopped: list[bool] = []
            monkeypatch.setattr(tctx.master, "shutdown", lambda: stopped.append(True))
            with caplog.at_level(logging.INFO):
                addon.running()
            assert stopped == [True]
        assert "urlsan: unknown option urlsan_mod: did you mean urlsan_mode?; stopping." in (
            caplog.text
        )
        assert "other_addons_option" not in caplog.text
        assert "rewrite mode" not in caplog.text

    @pytest.mark.parametrize("existed", [False, True])
    def test_a_misspelt_option_leaves_no_log_it_created(
        self, addon: UrlSanitizer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, existed: bool
    ) -> None:
        """mitmdump -s: the log opened at configure goes when the proxy stops at start-up, unless
        it was there before."""
        log = tmp_path / "audit.jsonl"
        if existed:
            log.write_bytes(b"")
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_log=str(log))
            assert log.exists()
            tctx.options.deferred["urlsan_mod"] = "audit"
            monkeypatch.setattr(tctx.master, "shutdown", lambda: None)
            addon.running()
            assert addon.log is None and not addon.started
        assert log.exists() == existed


class TestStatus:
    """The record says how the request ended: the response's status, or null."""

    def test_the_upstreams_status(self, addon: UrlSanitizer, tmp_path: Path) -> None:
        log = tmp_path / "audit.jsonl"
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_log=str(log))
            served(addon, flow(), status=404)
            served(addon, flow(b"/b/./c"), status=200)
            assert len(records(log)) == 2  # written as each response came, not at shutdown
            addon.done()
        assert [(r["before"], r["status"]) for r in records(log)] == [
            (DIRTY.decode(), 404),
            ("/b/./c", 200),
        ]

    @pytest.mark.parametrize(
        "mode, path, status", [("redirect", DIRTY, 308), ("reject", b"/a%zz", 400)]
    )
    def test_urlsans_own_answers(
        self, addon: UrlSanitizer, tmp_path: Path, mode: str, path: bytes, status: int
    ) -> None:
        log = tmp_path / "audit.jsonl"
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_log=str(log), urlsan_mode=mode)
            f = served(addon, flow(path), status=200)
            assert f.response is not None and f.response.status_code == status
        (record,) = records(log)
        assert record["status"] == status

    def test_no_response_is_recorded_once_without_status(
        self, addon: UrlSanitizer, tmp_path: Path
    ) -> None:
        log = tmp_path / "audit.jsonl"
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_log=str(log))
            failed, waiting = flow(), flow(b"/w/./x")
            addon.requestheaders(failed)
            addon.requestheaders(waiting)
            failed.error = Error("connection refused")
            addon.error(failed)
            addon.done()  # the proxy stops with a request still waiting for its response
            addon.responseheaders(waiting)  # too late: already written, never twice
        assert [(r["before"], r["status"]) for r in records(log)] == [
            (DIRTY.decode(), None),
            ("/w/./x", None),
        ]

    def test_a_new_log_takes_only_new_requests(self, addon: UrlSanitizer, tmp_path: Path) -> None:
        first, second = tmp_path / "1.jsonl", tmp_path / "2.jsonl"
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_log=str(first))
            f = flow()
            addon.requestheaders(f)
            tctx.configure(addon, urlsan_log=str(second))
            f.response = tutils.tresp()
            addon.responseheaders(f)
            served(addon, flow(b"/n/./m"))
        assert [r["status"] for r in records(first)] == [None]
        assert [(r["before"], r["status"]) for r in records(second)] == [("/n/./m", 200)]

    def test_waiting_records_are_capped(
        self, addon: UrlSanitizer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(sanitizer, "MAX_PENDING", 2)
        log = tmp_path / "audit.jsonl"
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_log=str(log))
            flows = [flow(b"/%d/./x" % i) for i in range(3)]
            for f in flows:
                addon.requestheaders(f)
            assert [r["before"] for r in records(log)] == ["/0/./x"]  # the oldest, at once
            for f in flows:
                f.response = tutils.tresp(status_code=204)
                addon.responseheaders(f)
        assert [(r["before"], r["status"]) for r in records(log)] == [
            ("/0/./x", None),
            ("/1/./x", 204),
            ("/2/./x", 204),
        ]


def test_policy_default_profile_matches_core() -> None:
    assert UrlSanitizer().settings.policy.rules == Policy.profile("rfc3986").rules | {
        "strip-fragment"
    }


def run_hook(addon: UrlSanitizer, f: http.HTTPFlow) -> bool:
    """Run the hook as mitmproxy does: await what it returns.  True if it returned a coroutine."""
    pending = addon.requestheaders(f)
    if pending is None:
        return False

    async def wait() -> None:
        await pending

    asyncio.run(wait())
    return True


class TestLimits:
    """urlsan_max_inline and urlsan_max_target (docs/proxy.md, Long targets)."""

    def test_defaults(self, addon: UrlSanitizer) -> None:
        with taddons.context(addon) as tctx:
            assert tctx.options.urlsan_max_inline == 8 * 1024
            assert tctx.options.urlsan_max_target == 64 * 1024

    @pytest.mark.parametrize(
        "options, message",
        [
            ({"urlsan_max_inline": -1}, "urlsan_max_inline must be 0 or more"),
            ({"urlsan_max_inline": 100, "urlsan_max_target": 99}, "must not be less than"),
        ],
    )
    def test_invalid_limits(
        self, addon: UrlSanitizer, options: dict[str, int], message: str
    ) -> None:
        with taddons.context(addon) as tctx:
            with pytest.raises(exceptions.OptionsError, match=message):
                tctx.configure(addon, **options)
            assert addon.settings.max_inline == 8 * 1024

    def test_ordinary_targets_are_checked_inline(self, addon: UrlSanitizer) -> None:
        with taddons.context(addon):
            f = flow()
            assert not run_hook(addon, f)
            assert f.request.data.path == CANONICAL

    @pytest.mark.parametrize("mode", MODES)
    @pytest.mark.parametrize(
        "path", [DIRTY, b"/a%zz/./b", b"/caf\xc3\xa9?q=%7e", b"/p%7e?X-Amz-Signature=x", b"/clean"]
    )
    def test_long_targets_in_a_worker_process_same_outcome(
        self, addon: UrlSanitizer, mode: str, path: bytes
    ) -> None:
        inline, offloaded = flow(path, host=b"Example.COM:80"), flow(path, host=b"Example.COM:80")
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_mode=mode)
            assert not run_hook(addon, inline)
            tctx.configure(addon, urlsan_max_inline=0)
            assert run_hook(addon, offloaded)
            addon.done()
        assert offloaded.request.data.path == inline.request.data.path
        assert offloaded.request.host_header == inline.request.host_header
        assert offloaded.metadata["urlsan"] == inline.metadata["urlsan"]
        assert (offloaded.response is None) == (inline.response is None)
        if inline.response is not None:
            assert offloaded.response is not None
            assert offloaded.response.status_code == inline.response.status_code

    @pytest.mark.skipif(not hasattr(os, "getpriority"), reason="no process priorities here")
    def test_the_worker_yields_the_cpu_to_the_event_loop(self, addon: UrlSanitizer) -> None:
        # Long targets are the worker's, at the lowest priority: a client sending megabyte
        # targets back to back must not take the CPU the proxy's other clients need.
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_max_inline=0)
            assert run_hook(addon, flow())
            assert addon._workers is not None
            workers = [p.pid for p in addon._workers._processes.values()]
            # 19: the least a process can ask for (nice(2)), whatever this one's priority
            assert [os.getpriority(os.PRIO_PROCESS, pid) for pid in workers] == [19]
            addon.done()

    @pytest.mark.parametrize(
        "mode, path, status, action",
        [
            ("rewrite", b"/a/./" + b"b" * 40, None, "skipped-oversize"),
            ("redirect", b"/a/./" + b"b" * 40, None, "skipped-oversize"),
            ("audit", b"/a/./" + b"b" * 40, None, "skipped-oversize"),
            ("reject", b"/a/./" + b"b" * 40, 414, "rejected"),
            # Bytes that must never reach the request line: refused rather than passed unchecked.
            ("rewrite", b"/a\r\nX: 1" + b"b" * 40, 414, "rejected"),
            ("redirect", b"/a b" + b"b" * 40, 414, "rejected"),
            ("audit", b"/a b" + b"b" * 40, None, "skipped-oversize"),  # audit forwards as is
        ],
    )
    def test_over_max_target(
        self, addon: UrlSanitizer, mode: str, path: bytes, status: int | None, action: str
    ) -> None:
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_mode=mode, urlsan_max_inline=10, urlsan_max_target=32)
            f = flow(path, http2=True)
            assert not run_hook(addon, f)  # answered at once: nothing to wait for
            assert addon._workers is None  # never canonicalized, not even in a worker
        assert f.request.data.path == path  # forwarded (or answered) unchanged
        facts = f.metadata["urlsan"]
        assert facts["action"] == action and facts["after"] is None
        if status is None:
            assert f.response is None
        else:
            assert f.response is not None and f.response.status_code == status
            assert facts["rejected_by"] == "urlsan_max_target"
            assert b"urlsan_max_target" in (f.response.content or b"")

    @pytest.mark.parametrize("max_inline", [8 * 1024, 0])
    def test_facts_stay_small(self, addon: UrlSanitizer, max_inline: int) -> None:
        """A target with thousands of rewrites keeps 100 edits and 8192 characters per string."""
        hostile = "\x01%" * 2000
        path = f"/{hostile}?{hostile}".encode()  # 8002 bytes, 8000 rewrites
        canonical = "/" + "%01%25" * 2000 + "?" + "%01%25" * 2000
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_max_inline=max_inline)
            f = flow(path)
            run_hook(addon, f)
            addon.done()
        assert f.request.data.path == canonical.encode()  # forwarded whole
        facts = f.metadata["urlsan"]
        # core folds each component's rewrites past the first 64 into one edit (64 + 64 edits):
        # the record keeps the first 100 and counts the others.
        assert len(facts["edits"]) == MAX_EDITS
        assert facts["edits_truncated"] == 128 - MAX_EDITS
        assert facts["truncated"] is True
        assert facts["before"] == path.decode()[:MAX_TEXT]
        assert facts["after"] == canonical[:MAX_TEXT]
        folded = facts["edits"][63]  # the path's last edit spans the rest of the path
        assert folded["rule"] == "encode-stray-percent+encode-unsafe"
        assert len(folded["after"]) == MAX_TEXT and folded["truncated"] is True
        assert all(len(e["before"]) <= MAX_TEXT for e in facts["edits"])
        # Each rule of the folded edit is counted on its own.
        assert addon.rules == {"encode-unsafe": 1, "encode-stray-percent": 1}

    def test_broken_worker_pool_fails_safe(
        self, addon: UrlSanitizer, caplog: pytest.LogCaptureFixture
    ) -> None:
        class Broken(ProcessPoolExecutor):
            def submit(self, *args: Any, **kwargs: Any) -> Any:
                raise BrokenProcessPool("a worker died")

        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_max_inline=0, urlsan_mode="reject")
            addon._workers = Broken(1)
            f = flow()
            with caplog.at_level(logging.ERROR):
                run_hook(addon, f)
            assert addon._workers is None  # a new pool next time
            assert addon.errors == 1 and "urlsan failed" in caplog.text
        assert f.request.data.path == DIRTY
        assert f.response is not None and f.response.status_code == 400

    def test_flow_gone_while_waiting_is_left_alone(self, addon: UrlSanitizer) -> None:
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_max_inline=0)
            f = flow()
            pending = addon.requestheaders(f)
            assert pending is not None
            f.kill()  # e.g. the client disconnected

            async def wait() -> None:
                await pending

            asyncio.run(wait())
            addon.done()
        assert f.request.data.path == DIRTY
        assert "urlsan" not in f.metadata


class TestRejectedRecords:
    def test_host_keeps_its_port_and_findings_are_findings(
        self, addon: UrlSanitizer, tmp_path: Path
    ) -> None:
        log = tmp_path / "audit.jsonl"
        target = b"/../a%zz"  # invalid (stray %) and a traversal attempt (a finding)
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_log=str(log))
            addon.requestheaders(flow(b"/a/../%7e", host=b"127.0.0.1:9998"))
            tctx.configure(addon, urlsan_mode="reject")
            addon.requestheaders(flow(target, host=b"127.0.0.1:9998"))
            addon.requestheaders(flow(target, host=b"LocalHost:80"))
            addon.done()
        rewritten, rejected, default_port = records(log)
        assert rewritten["host"] == rejected["host"] == "127.0.0.1:9998"
        assert default_port["host"] == "localhost"  # canonical, as a rewrite would log it
        assert rejected["action"] == "rejected" and rejected["after"] is None
        assert rejected["rejected_by"] == "encode-stray-percent"
        assert "encode-stray-percent" in rejected["reason"]
        rules = {f["rule"] for f in rejected["findings"]}
        assert "dot-segment-above-root" in rules and "encode-stray-percent" not in rules
        assert "rejected_by" not in rewritten and "reason" not in rewritten

    def test_reject_escaped_slash_in_audit_mode(self, addon: UrlSanitizer) -> None:
        with taddons.context(addon) as tctx:
            tctx.configure(addon, urlsan_mode="audit", urlsan_rules="+reject-escaped-slash")
            f = flow(b"/a%2Fb")
            addon.requestheaders(f)
        facts = f.metadata["urlsan"]
        assert f.response is None and f.request.data.path == b"/a%2Fb"
        assert facts["action"] == "audited" and facts["rejected_by"] == "reject-escaped-slash"
        assert [x["rule"] for x in facts["findings"]] == ["escaped-slash"]

    def test_edit_dicts_match_core(self) -> None:
        from urlsan.audit.record import MAX_TEXT, _edit_dicts
        from urlsan.core import Edit

        e = Edit("rule", "path", 1, 2, "a", "b")
        long = Edit("rule", "path", 0, MAX_TEXT + 1, "a" * (MAX_TEXT + 1), "b")
        assert _edit_dicts([e, long]) == [
            e.as_dict(),
            {**long.as_dict(), "before": "a" * MAX_TEXT, "truncated": True},
        ]


@pytest.mark.parametrize(
    "data, safe",
    [
        (b"/a?b=c", True),
        (b"!~", True),
        (b"", False),
        *((bytes([b]), False) for b in (*range(0x21), 0x7F, 0x80, 0xFF)),
        (b"/a" + b"b" * 100_000 + b"\r\n", False),
        (b"/a\r\n" + b"b" * 100_000, False),
        (b"/a" + b"b" * 100_000, True),
    ],
)
def test_wire_safe(data: bytes, safe: bool) -> None:
    from urlsan.addon.target import wire_safe

    assert wire_safe(data) is safe


def test_parameter_options_drop_and_keep_by_host() -> None:
    addon = UrlSanitizer()
    with taddons.context(addon) as tctx:
        tctx.configure(
            addon,
            urlsan_drop_params=["example.com:ref,src"],
            urlsan_keep_params=["shop.example:id"],
        )
        f = tflow.tflow(req=tutils.treq(host="www.example.com", path=b"/a?ref=x&q=1"))
        addon.requestheaders(f)
        assert f.request.path == "/a?q=1"
        g = tflow.tflow(req=tutils.treq(host="shop.example", path=b"/p?id=7&color=red"))
        addon.requestheaders(g)
        assert g.request.path == "/p?id=7"
        h = tflow.tflow(req=tutils.treq(host="other.example", path=b"/p?ref=1&color=red"))
        addon.requestheaders(h)
        assert h.request.path == "/p?ref=1&color=red"
        with pytest.raises(Exception, match="urlsan_drop_params"):
            tctx.configure(addon, urlsan_drop_params=["a:b:c"])


def test_the_proxy_says_once_when_the_compiled_path_is_missing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import urlsan._about as about
    from urlsan.core import compiled

    monkeypatch.delenv("URLSAN_NO_EXTENSIONS", raising=False)
    monkeypatch.setattr(compiled, "twin", None)
    monkeypatch.setattr(about, "_warned", False)
    with caplog.at_level(logging.WARNING):
        for _ in range(2):
            addon = UrlSanitizer()
            with taddons.context(addon):
                pass
    warnings = [
        r.getMessage() for r in caplog.records if "compiled canonicalizer" in r.getMessage()
    ]
    assert len(warnings) == 1 and "pip install" in warnings[0]


def _hook_effects(addon: UrlSanitizer, f: http.HTTPFlow) -> tuple[Any, ...]:
    addon.requestheaders(f)
    r = f.request
    return (
        r.data.path, r.data.authority, r.data.headers.fields, f.comment, f.marked,
        f.response and f.response.status_code, f.metadata.get("urlsan"), addon.counts(),
    )  # fmt: skip


@pytest.fixture(scope="module")
def addon_in_context() -> Iterator[tuple[UrlSanitizer, Any]]:
    # One mitmproxy test context for all examples: each keeps an event loop's file descriptors
    # open, and hundreds of them would exhaust select()'s 1024 for the tests after these.
    addon = UrlSanitizer()
    with taddons.context(addon) as tctx:
        yield addon, tctx


@settings(max_examples=300, deadline=None)
@given(
    path=st.sampled_from([b"/", b"/a/c?x=~", b"/clean", b"/a%2Fb", b"/%7e", b"/a/./b", b"*"])
    | st.binary(max_size=12).map(lambda b: b"/" + b),
    host=st.sampled_from([b"example.com", b"Example.com", b"example.com:80", b"ex_ample.com",
                          b"[::1]:8080", b"u@example.com", b"", b"\xc3\xa9.example"]),
    http2=st.booleans(),
    authority=st.sampled_from([b"", b"example.com", b"EXAMPLE.com:80"]),
    mode=st.sampled_from(MODES),
    profile=st.sampled_from(["rfc3986", "strict", "crawler"]),
)  # fmt: skip
def test_unchanged_fast_path_decides_as_the_full_path(
    addon_in_context: tuple[UrlSanitizer, Any],
    path: bytes,
    host: bytes,
    http2: bool,
    authority: bytes,
    mode: str,
    profile: str,
) -> None:
    # Most requests take `_unchanged`; every effect a user sees (what is forwarded, the flow's
    # comment, mark and metadata, the counters) must be what `_handle` decides for them.
    addon, tctx = addon_in_context
    tctx.configure(addon, urlsan_mode=mode, urlsan_profile=profile)
    effects = []
    try:
        for full in (False, True):
            if full:  # every request through _handle
                addon._unchanged = lambda *args: False  # type: ignore[method-assign]
            addon.actions.clear()
            addon.rules.clear()
            f = flow(path, host=host, http2=http2, authority=authority)
            effects.append(_hook_effects(addon, f))
    finally:
        addon.__dict__.pop("_unchanged", None)
    assert effects[0] == effects[1]
