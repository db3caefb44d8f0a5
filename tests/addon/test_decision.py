"""One decision: the live addon and ``urlsan audit`` of a recording of the same requests write
the same audit records, in every mode and profile, whatever the request (but for the time)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mitmproxy import http
from mitmproxy.io import FlowWriter
from mitmproxy.test import taddons, tflow, tutils

from urlsan.addon import UrlSanitizer, decision
from urlsan.addon.decision import MAX_TARGET, MODES, Request
from urlsan.cli.main import main as urlsan_main
from urlsan.core.policy import PROFILES

SIGNED_QUERY = b"?X-Amz-Credential=k%2F1&X-Amz-Signature=abc"
# (method, target, Host header or HTTP/2 :authority, HTTP/2, absolute-form authority, headers)
CORPUS: list[tuple[bytes, bytes, bytes, bool, bytes, list[tuple[bytes, bytes]]]] = [
    # clean: no record at all
    (b"GET", b"/index.html", b"example.com", False, b"", []),
    (b"GET", b"/search?q=a+b&x=~", b"example.com", True, b"", []),
    # dirty: every kind of rewrite, in the target and in the Host
    (b"GET", b"/a/./b/../c?x=%7e#frag", b"example.com", False, b"", []),
    (b"POST", b"/a/./b/../c?x=%7e", b"example.com", False, b"", []),
    (b"HEAD", b"/%7euser/", b"Example.COM:80", False, b"", []),
    (b"GET", b'/a b/"q"/{x}|y^z`', b"example.com", False, b"", []),
    (b"GET", b"/caf\xc3\xa9/\xff", b"example.com", True, b"", []),
    (b"GET", b"/x/..//y", b"example.com", False, b"", []),
    (b"GET", b"/a%2fb/%2e%2e/c", b"example.com", False, b"", []),
    (b"GET", b"/a/%2e%2e/b%7e c", b"example.com", False, b"", []),
    (b"GET", b"/p?a=1&utm_source=x", b"EXAMPLE.com", False, b"EXAMPLE.com:80", []),
    (b"OPTIONS", b"*", b"example.com", False, b"", []),
    # hostile: controls, a stray %, escapes of escapes
    (b"GET", b"/a\x01b/%zz/%252e%252e/", b"example.com", False, b"", []),
    (b"GET", b"/" + b"%41" * 3000, b"example.com", False, b"", []),
    (b"GET", b"/..%c0%af../etc/passwd", b"example.com", True, b"", []),
    # signed: only audited by default; with a control byte, never exempt
    (b"GET", b"/bucket/%7ekey" + SIGNED_QUERY, b"s3.example.com", False, b"", []),
    (b"GET", b"/bucket/\x01key" + SIGNED_QUERY, b"s3.example.com", False, b"", []),
    (
        b"GET",
        b"/bucket/./key",
        b"s3.example.com",
        False,
        b"",
        [(b"Authorization", b"AWS4-HMAC-SHA256 Credential=k/1, Signature=abc")],
    ),
    # refused by the strict profile or reject mode
    (b"GET", b"/a%zz#%zz", b"example.com", False, b"", []),
    (b"GET", b"/bad host/", b"ex ample.com", False, b"", []),
    # oversize: never canonicalized
    (b"GET", b"/" + b"a" * MAX_TARGET, b"example.com", False, b"", []),
    (b"GET", b"/ " + b"a" * MAX_TARGET, b"example.com", False, b"", []),
]


def _flow(
    method: bytes,
    target: bytes,
    host: bytes,
    http2: bool,
    authority: bytes,
    headers: list[tuple[bytes, bytes]],
) -> http.HTTPFlow:
    hdrs = [] if http2 else [(b"Host", host)]
    req = tutils.treq(
        method=method,
        path=target,
        http_version=b"HTTP/2.0" if http2 else b"HTTP/1.1",
        host="example.com",
        port=80,
        authority=host if http2 else authority,
        headers=http.Headers(hdrs + headers),
    )
    return tflow.tflow(req=req)


def _comparable(record: dict[str, Any]) -> dict[str, Any]:
    """A record without what may differ: the time (the proxy's clock, the recording's)."""
    return {k: v for k, v in record.items() if k != "ts"}


def _records(path: Path) -> list[dict[str, Any]]:
    return [_comparable(json.loads(line)) for line in path.read_text("ascii").splitlines()]


@pytest.mark.parametrize("backends", ["", "tomcat,nginx"])
@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("mode", MODES)
def test_proxy_and_audit_write_the_same_records(
    tmp_path: Path, mode: str, profile: str, backends: str
) -> None:
    recording, proxy_log, audit_log = (tmp_path / n for n in ("flows", "proxy.jsonl", "a.jsonl"))
    addon = UrlSanitizer()
    with taddons.context(addon) as tctx, recording.open("wb") as out:
        tctx.configure(
            addon,
            urlsan_mode=mode,
            urlsan_profile=profile,
            urlsan_log=str(proxy_log),
            urlsan_max_inline=MAX_TARGET,  # inline, so that the hook returns the outcome
            urlsan_backends=backends.split(",") if backends else [],
        )
        writer = FlowWriter(out)
        for entry in CORPUS:
            f = _flow(*entry)
            writer.add(f.copy())  # the request as it came, before urlsan touched it
            assert addon.requestheaders(f) is None
        addon.done()
    status = urlsan_main(
        ["audit", "-q", "--mode", mode, "--profile", profile, "--backends", backends,
         "-o", str(audit_log), str(recording)]
    )  # fmt: skip
    assert status == 0
    proxy, audited = _records(proxy_log), _records(audit_log)
    actions = {r["action"] for r in proxy}
    assert len(proxy) >= len(CORPUS) - 3  # the clean ones leave no record
    assert actions >= {"skipped-oversize", "skipped-signed"} or mode == "reject" or backends
    if backends:  # the corpus holds targets Tomcat or nginx read otherwise than RFC 3986
        assert any(r.get("backends") for r in proxy)
    for mine, theirs in zip(proxy, audited, strict=True):
        assert mine == theirs


def test_strict_refusal_keeps_its_findings_in_both() -> None:
    """A target the strict profile refuses is recorded with the findings of the lenient
    reading, by the proxy and by ``urlsan audit`` alike."""
    from urlsan.addon import decision
    from urlsan.audit.sources import Request

    settings = decision.settings("audit", "strict")
    request = Request(None, "", "GET", "http", "example.com", b"/a/%2e%2e/b%7e c", "HTTP/1.1", "")
    outcome = decision.examine(request, settings)
    assert outcome is not None and outcome.rejected_by
    assert "encoded-dot-segment" in {f.rule for f in outcome.findings}


@pytest.mark.parametrize(
    "mode, target, action",
    [
        ("rewrite", b"/a/..;/b", "rejected"),  # Tomcat strips ";" before it resolves ".."
        ("reject", b"/a/..;/b", "rejected"),
        ("redirect", b"/a/..;/b", "rejected"),
        ("audit", b"/a/..;/b", "unchanged"),  # recorded with the finding, forwarded
        ("rewrite", b"/a/b/..", "rewritten"),  # forwarded as /a/, which Tomcat reads so
        ("audit", b"/a/b/..", "audited"),  # forwarded as it came: RFC 3986 /a/, Tomcat /a
        ("rewrite", b"/a/%7eb/", "rewritten"),  # Tomcat reads /a/~b/, as RFC 3986 does
        ("rewrite", b"/index.html", "unchanged"),
    ],
)
def test_a_protected_backend(mode: str, target: bytes, action: str) -> None:
    from urlsan.addon import decision
    from urlsan.audit.sources import Request

    settings = decision.settings(mode, backends=["tomcat"])
    request = Request(None, "", "GET", "http", "example.com", target, "HTTP/1.1", "")
    outcome = decision.examine(request, settings)
    assert outcome is not None and outcome.action == action
    diverging = [f for f in outcome.findings if f.rule == "backend-divergence"]
    assert bool(diverging) == (outcome.rejected_by == "urlsan_backends" or mode == "audit")
    if diverging:
        assert diverging[0].detail.startswith("tomcat routes it as ")
        assert outcome.facts["backends"][0]["server"] == "tomcat"


def test_an_unknown_backend_is_an_error() -> None:
    from urlsan.addon import decision

    with pytest.raises(ValueError, match="urlsan_backends: unknown server 'tomcta'"):
        decision.settings(backends="tomcta")


def test_the_addon_option(tmp_path: Path) -> None:
    from mitmproxy import exceptions

    addon = UrlSanitizer()
    with taddons.context(addon) as tctx:
        tctx.configure(addon, urlsan_backends=["tomcat"], urlsan_log=str(tmp_path / "log"))
        assert "protecting tomcat" in addon.startup_line()
        f = _flow(b"GET", b"/a/..;/b", b"example.com", False, b"", [])
        addon.requestheaders(f)
        assert f.response is not None and f.response.status_code == 400
        assert b"tomcat routes it as '/b'" in f.response.content
        assert f.metadata["urlsan"]["backends"][0]["path"] == "/b"
        with pytest.raises(exceptions.OptionsError, match="unknown server 'tomcta'"):
            tctx.configure(addon, urlsan_backends=["tomcta"])


def _asked(entry: tuple[bytes, bytes, bytes, bool, bytes, list[tuple[bytes, bytes]]]) -> Request:
    method, target, host, http2, authority, headers = entry
    signature = next((v.decode() for k, v in headers if k.lower() == b"authorization"), None)
    return Request(
        None,
        "",
        method.decode(),
        "http",
        host.decode(),
        target,
        "HTTP/2.0" if http2 else "HTTP/1.1",
        "",
        signature,
        authority.decode() or None,
    )


def _said(outcome: decision.Outcome | None) -> tuple[object, ...] | None:
    """What an outcome says, but for the refusal's exception object (a new one per check)."""
    if outcome is None:
        return None
    return (*outcome._replace(target=outcome.target._replace(refused=None)), outcome.facts)


@pytest.mark.parametrize("backends", [(), ("tomcat", "nginx@example.com")])
@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("mode", MODES)
def test_examine_says_what_decide_says(mode: str, profile: str, backends: tuple[str, ...]) -> None:
    """`examine` answers most requests without `decide` (the target and Host are canonical,
    nothing found): the same outcome `decide` gives them, and for every other request its own."""
    settings = decision.settings(mode, profile, backends=backends)
    quick = 0
    for entry in CORPUS:
        request = _asked(entry)
        if len(request.target) > settings.max_target:
            continue
        target = decision.check(request.target, settings.targets, request.host)
        outcome = decision.examine(request, settings)
        assert _said(outcome) == _said(decision.decide(request, settings, target))
        quick += decision.untouched(target, settings, "http", request.host, request.authority)
    assert quick >= 2  # the clean requests of the corpus took the quick way


def test_examine_with_a_workers_check() -> None:
    """A target checked in a worker process (`job`) is decided on that check, never again."""
    settings = decision.settings("rewrite")
    request = _asked((b"GET", b"/a/./b?%7e", b"Example.com", False, b"", []))
    assert decision.checks_target(request, settings)
    target = decision.job(request, settings)()
    assert target.wire == b"/a/b?~"
    outcome = decision.examine(request, settings, target)
    assert outcome is not None and outcome.action == "rewritten"
    assert outcome.host == "example.com" and outcome.target is target


@pytest.mark.parametrize(
    ("method", "size", "checked"),
    [
        ("GET", MAX_TARGET, True),
        ("GET", MAX_TARGET + 1, False),  # oversize: never checked at all
        ("CONNECT", 100, False),  # no request-target to check
    ],
)
def test_checks_target(method: str, size: int, checked: bool) -> None:
    request = _asked((method.encode(), b"/" + b"a" * (size - 1), b"h", False, b"", []))
    assert decision.checks_target(request, decision.settings()) is checked
    outcome = decision.examine(request, decision.settings())
    assert (outcome is not None and outcome.target.url != "") is checked


def test_the_addon_asks_the_decision_once_per_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """One `examine` per request, CONNECT included (which it answers None: left alone)."""
    asked: list[Request] = []
    examine = decision.examine

    def counted(request: Request, *args: Any, **kwargs: Any) -> decision.Outcome | None:
        asked.append(request)
        return examine(request, *args, **kwargs)

    monkeypatch.setattr(decision, "examine", counted)
    addon = UrlSanitizer()
    with taddons.context(addon) as tctx:
        tctx.configure(addon, urlsan_max_inline=MAX_TARGET)
        for entry in CORPUS:
            assert addon.requestheaders(_flow(*entry)) is None
        connect = tflow.tflow(req=tutils.treq(method=b"CONNECT", path=b"", authority=b"h:443"))
        assert addon.requestheaders(connect) is None
        assert "urlsan" not in connect.metadata and connect.response is None
    assert [r.target for r in asked] == [entry[1] for entry in CORPUS] + [b""]
    assert addon.errors == 0 and sum(addon.actions.values()) == len(CORPUS)
