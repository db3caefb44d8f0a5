"""The urlsan addon: rewrite, audit or reject every request-target, and log each rewrite.

Runs in ``requestheaders``, so that requests with streamed bodies are covered too.  All URL logic
is `urlsan.core`'s; this module decides what to do with a `Result` and hands mitmproxy bytes.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

from mitmproxy import command, ctx, exceptions, flowfilter, http

from ..audit.log import AuditLog
from ..audit.record import MAX_EDITS
from ..audit.redact import DEFAULT_REDACT, Redactor
from ..core import Edit, Finding, InvalidTarget, Policy, Result, canonicalize
from .signed import detect_signature, may_carry_signature

logger = logging.getLogger(__name__)

MODES: tuple[str, ...] = ("rewrite", "audit", "reject", "redirect")
SIGNED: tuple[str, ...] = ("skip", "rewrite")
REDIRECT_METHODS = frozenset({b"GET", b"HEAD"})

# RFC 9112 §3.2: every request-target we assign must be visible ASCII only.  mitmproxy writes
# whatever bytes it is given into the request line, so a canonical target that failed this check
# (a bug in core) must never reach the wire: it would be a request-splitting vector.
_WIRE_SAFE = re.compile(rb"[\x21-\x7e]+")

_MARKS = {"rejected": ":no_entry:", "skipped-signed": ":warning:"}
_HOST_CACHE_SIZE = 1024


class Settings(NamedTuple):
    """The addon's configuration, parsed from its options in one go."""

    mode: str
    policy: Policy
    strict: Policy  # the policy reject mode checks with: nothing repaired, invalid raises
    strict_fragment: Policy  # the same, keeping the fragment, so that it is checked too
    filter: flowfilter.TFilter | None
    redactor: Redactor
    signed: str


def parse_settings(
    mode: str,
    profile: str,
    rules: str,
    filter_expr: str | None,
    redact: Sequence[str],
    signed: str,
) -> Settings:
    """Build `Settings` from option values.  Raises `ValueError` naming the bad option."""
    if mode not in MODES:
        raise ValueError(f"urlsan_mode must be one of {', '.join(MODES)}, not {mode!r}")
    if signed not in SIGNED:
        raise ValueError(f"urlsan_signed must be one of {', '.join(SIGNED)}, not {signed!r}")
    try:
        policy = Policy.profile(profile)
    except ValueError as e:
        raise ValueError(f"urlsan_profile: {e}") from e
    try:
        # RFC 9110 §7.1: a fragment is never sent to a server; urlsan_rules may still turn it off.
        policy = policy.with_rules("+strip-fragment").with_rules(rules)
    except ValueError as e:
        raise ValueError(f"urlsan_rules: {e}") from e
    flt = None
    if filter_expr:
        try:
            flt = flowfilter.parse(filter_expr)
        except ValueError as e:
            raise ValueError(f"urlsan_filter: {e}") from e
    return Settings(
        mode=mode,
        policy=policy,
        strict=dataclasses.replace(policy, strict=True),
        strict_fragment=dataclasses.replace(policy, strict=True).with_rules("-strip-fragment"),
        filter=flt,
        redactor=Redactor.of(redact),
        signed=signed,
    )


class Outcome(NamedTuple):
    """What the addon decided for one request."""

    action: str
    result: Result  # of the request-target
    host: str | None  # the canonical Host header / :authority, when it changed
    authority: str | None  # the canonical absolute-form authority, when it changed
    edits: tuple[Edit, ...]
    findings: tuple[Finding, ...]
    reason: str = ""  # why a target was rejected
    host_header: str | None = None  # as the client sent it

    @property
    def facts(self) -> dict[str, Any]:
        """``flow.metadata["urlsan"]``: the facts, for machines (and the audit log).

        At most `MAX_EDITS` edits, as in the audit log: a 100 KB target can carry 100,000 edits,
        and building a dict for each would stall the proxy and hold megabytes per flow.
        """
        facts: dict[str, Any] = {
            "action": self.action,
            "before": self.result.input,
            "after": self.result.url if self.action != "rejected" else None,
            "edits": [e.as_dict() for e in self.edits[:MAX_EDITS]],
        }
        if len(self.edits) > MAX_EDITS:
            facts["edits_truncated"] = len(self.edits) - MAX_EDITS
        facts["findings"] = [f.as_dict() for f in self.findings]
        return facts


class UrlSanitizer:
    def __init__(self) -> None:
        self.settings = parse_settings("rewrite", "rfc3986", "", None, DEFAULT_REDACT, "skip")
        self.log: AuditLog | None = None
        self.actions: Counter[str] = Counter()
        self.rules: Counter[str] = Counter()
        self.errors = 0
        self.log_lost = 0  # audit records lost to write failures (reported by AuditLog, once)
        self._hosts: dict[tuple[str, str, bool], tuple[str, tuple[Edit, ...], tuple[Finding, ...]]]
        self._hosts = {}

    def load(self, loader: Any) -> None:
        loader.add_option(
            "urlsan_mode",
            str,
            "rewrite",
            "What urlsan does with a non-canonical request-target. rewrite: forward the canonical "
            "target. audit: forward it unchanged, log what would change. reject: answer 400 to a "
            "target that is not a valid RFC 3986 URI-reference, forward valid ones canonicalized. "
            "redirect: answer GET/HEAD with a 308 to the canonical target, rewrite the others.",
            choices=MODES,
        )
        loader.add_option(
            "urlsan_log",
            str,
            "",
            "Path of urlsan's JSON Lines audit log (appended to); empty: no log.",
        )
        loader.add_option(
            "urlsan_profile",
            str,
            "rfc3986",
            "Canonicalization profile: rfc3986 (meaning-preserving), rfc2396, crawler, strict.",
            choices=("rfc3986", "rfc2396", "crawler", "strict"),
        )
        loader.add_option(
            "urlsan_rules",
            str,
            "",
            'Rules switched on or off on top of the profile, e.g. "+merge-slashes,'
            '-remove-dot-segments". strip-fragment is on unless switched off here.',
        )
        loader.add_option(
            "urlsan_filter",
            str | None,  # type: ignore[arg-type]
            None,
            "Only touch flows matching this mitmproxy filter expression, e.g. "
            '"!~d s3.amazonaws.com".',
        )
        loader.add_option(
            "urlsan_redact",
            Sequence[str],
            list(DEFAULT_REDACT),
            "Query parameter names (any case) whose values are masked in the audit log. "
            "Setting it replaces the default list. Userinfo passwords are always masked.",
        )
        loader.add_option(
            "urlsan_signed",
            str,
            "skip",
            "skip: only audit requests whose URL or Authorization header carries a signature "
            "(S3/GCS presigned URLs, CloudFront, Azure SAS, AWS SigV4), since any byte change "
            "breaks it. rewrite: treat them like any other request.",
            choices=SIGNED,
        )

    def configure(self, updated: set[str]) -> None:
        names = {
            "urlsan_mode",
            "urlsan_profile",
            "urlsan_rules",
            "urlsan_filter",
            "urlsan_redact",
            "urlsan_signed",
        }
        if updated & names:
            o = ctx.options
            try:
                self.settings = parse_settings(
                    o.urlsan_mode,
                    o.urlsan_profile,
                    o.urlsan_rules,
                    o.urlsan_filter,
                    o.urlsan_redact,
                    o.urlsan_signed,
                )
            except ValueError as e:
                raise exceptions.OptionsError(  # type: ignore[no-untyped-call]
                    f"Cannot parse urlsan options: {e}"
                ) from e
            self._hosts = {}
            if self.log:
                self.log.redactor = self.settings.redactor
        if "urlsan_log" in updated:
            path = ctx.options.urlsan_log
            new = None
            if path:
                try:
                    new = AuditLog(path, self.settings.redactor)
                except OSError as e:
                    raise exceptions.OptionsError(  # type: ignore[no-untyped-call]
                        f"Cannot open urlsan_log {path!r}: {e.strerror or e}"
                    ) from e
            if self.log:
                self.log.close()
            self.log = new

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        if flow.response or flow.error or not flow.live:
            return
        request = flow.request
        if request.data.method == b"CONNECT":
            return  # authority-form: mitmproxy's own http_connect handling
        settings = self.settings
        if settings.filter and not settings.filter(flow):
            return
        saved = (request.data.path, request.data.authority, request.headers.fields)
        try:
            outcome = self._decide(request, settings)
            self._apply(flow, outcome, settings)
        except Exception:
            # Never drop or corrupt a request because of urlsan: restore what it was.
            request.data.path, request.data.authority, request.headers.fields = saved
            self.errors += 1
            logger.exception("urlsan failed on %s %r", request.method, request.data.path)
            if settings.mode == "reject":
                flow.response = _plain(400, "urlsan: internal error while checking the target")
                request.stream = False
            return
        self.actions[outcome.action] += 1
        self.rules.update({e.rule for e in outcome.edits})
        if self.log and (outcome.action != "unchanged" or outcome.findings):
            try:
                if not self._record(self.log, flow, outcome):
                    self.log_lost += 1
            except Exception as e:  # a bug, not the file: AuditLog.write handles OSError
                self.errors += 1
                logger.error(
                    "urlsan: could not write to audit log %s: %s; requests are still served, "
                    "but this one is missing from the log",
                    self.log.path,
                    e,
                )

    def _decide(self, request: http.Request, settings: Settings) -> Outcome:
        """Canonicalize target and authority, and choose the action.  Changes nothing."""
        reject = settings.mode == "reject"
        policy = settings.strict if reject else settings.policy
        form = "asterisk" if request.data.path == b"*" else "origin"
        raw = request.data.path
        try:
            if reject and b"#" in raw:
                # strip-fragment would drop an invalid fragment before strict mode saw it.
                canonicalize(raw, settings.strict_fragment, form=form)
            result = canonicalize(raw, policy, form=form)
            host_header = _host_header(request)
            host, host_edits, host_findings = self._authority(request.scheme, host_header, policy)
            authority = None
            auth_edits: tuple[Edit, ...] = ()
            if request.data.authority and not (request.is_http2 or request.is_http3):
                authority, auth_edits, _ = self._authority(
                    request.scheme, request.authority, policy
                )
        except InvalidTarget as e:
            result = Result(raw.decode("utf-8", "surrogateescape"), "")
            finding = Finding(e.rule, e.component, e.offset, e.message)
            if settings.mode == "audit":
                # An opt-in rejecting rule (reject-escaped-slash) fired: audit mode only reports.
                return Outcome("audited", result, None, None, (), (finding,), str(e))
            return Outcome("rejected", result, None, None, (), (finding,), str(e))

        edits = result.edits + host_edits + auth_edits
        findings = result.findings + host_findings
        if not (result.changed or host or authority):
            return Outcome("unchanged", result, None, None, edits, findings, "", host_header)
        if settings.signed == "skip" and self._signed(request, raw):
            action = "skipped-signed"
        elif settings.mode == "audit":
            action = "audited"
        elif (
            settings.mode == "redirect"
            and request.data.method in REDIRECT_METHODS
            and result.changed
            and not result.url.startswith("//")  # Location "//x" would name another host
        ):
            action = "redirected"
        else:
            action = "rewritten"
        return Outcome(action, result, host, authority, edits, findings, "", host_header)

    @staticmethod
    def _signed(request: http.Request, raw: bytes) -> bool:
        # Only a wire-safe signed target is exempt: controls or spaces are never forwarded.
        if not _WIRE_SAFE.fullmatch(raw):
            return False
        names = request.query.keys() if may_carry_signature(raw) else ()
        authorization = None
        for name, value in request.headers.fields:  # faster than the case-insensitive get()
            if len(name) == 13 and name.lower() == b"authorization":
                authorization = value.decode("latin-1")
        return detect_signature(names, authorization) is not None

    def _authority(
        self, scheme: str, value: str | None, policy: Policy
    ) -> tuple[str | None, tuple[Edit, ...], tuple[Finding, ...]]:
        """The canonical form of a Host header or authority, or None when it is already canonical.

        Edit offsets count in ``value``.  Anything that is not a bare host[:port] (userinfo, a
        path) is left alone: that is mitmproxy's to refuse, not ours to repair.
        """
        if not value:
            return None, (), ()
        key = (scheme, value, policy.strict)
        cached = self._hosts.get(key)
        if cached is None:
            prefix = f"{scheme}://"
            result = canonicalize(f"{prefix}{value}/", policy, form="absolute")
            shift = len(prefix)
            url = result.url
            canonical: str = value
            if (
                url.startswith(prefix)
                and url.endswith("/")
                and all(e.component in ("host", "port") for e in result.edits)
            ):
                canonical = url[shift:-1]
            if canonical == value or not _WIRE_SAFE.fullmatch(canonical.encode("ascii", "replace")):
                cached = (value, (), ())
            else:
                edits = tuple(
                    Edit(e.rule, e.component, e.start - shift, e.end - shift, e.before, e.after)
                    for e in result.edits
                )
                cached = (canonical, edits, ())
            if len(self._hosts) >= _HOST_CACHE_SIZE:
                self._hosts.clear()
            self._hosts[key] = cached
        canonical, edits, findings = cached
        return (None if canonical == value else canonical), edits, findings

    def _apply(self, flow: http.HTTPFlow, outcome: Outcome, settings: Settings) -> None:
        request = flow.request
        action = outcome.action
        if action == "rejected":
            flow.response = _plain(400, f"urlsan: {outcome.reason}")
            request.stream = False  # a response set here must not race a streamed body
        elif action == "redirected":
            location = outcome.result.url.encode("ascii")
            if not _WIRE_SAFE.fullmatch(location):
                raise ValueError(f"canonical target is not wire-safe: {location!r}")
            headers: dict[str, str | bytes] = {"Location": location, "Content-Length": "0"}
            flow.response = http.Response.make(308, b"", headers)
            request.stream = False
        elif action == "rewritten":
            if outcome.result.changed:
                path = outcome.result.url.encode("ascii")
                if not _WIRE_SAFE.fullmatch(path):
                    raise ValueError(f"canonical target is not wire-safe: {path!r}")
                request.data.path = path
            if outcome.host:
                request.host_header = outcome.host
            if outcome.authority:
                request.data.authority = outcome.authority.encode("ascii")
        if action != "unchanged":
            rules = sorted({e.rule for e in outcome.edits}) or [f.rule for f in outcome.findings]
            note = f"urlsan {action}: {', '.join(rules)}"
            flow.comment = f"{flow.comment}\n{note}" if flow.comment else note
            if not flow.marked:
                flow.marked = _MARKS.get(action, ":wrench:")
        flow.metadata["urlsan"] = outcome.facts

    def _record(self, log: AuditLog, flow: http.HTTPFlow, outcome: Outcome) -> bool:
        request = flow.request
        facts = flow.metadata["urlsan"]
        peer = flow.client_conn.peername
        client = ""
        if peer:
            ip, port = peer[0], peer[1]
            client = f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
        record: dict[str, Any] = {
            "ts": _rfc3339_now(),
            "client": client,
            "method": request.method,
            "scheme": request.scheme,
            "host": outcome.host or outcome.host_header or request.host,
            "http_version": request.http_version,
            "before": outcome.result.input,
            "after": outcome.result.url if outcome.action != "rejected" else None,
            "action": outcome.action,
            "edits": facts["edits"],
        }
        if "edits_truncated" in facts:
            record["edits_truncated"] = facts["edits_truncated"]
        record["findings"] = facts["findings"]
        if outcome.reason:
            record["reason"] = outcome.reason
        return log.write(record)

    def counts(self) -> dict[str, Any]:
        """Requests per action, requests each rule changed, internal errors, lost audit records."""
        return {
            "actions": dict(sorted(self.actions.items())),
            "rules": dict(sorted(self.rules.items())),
            "errors": self.errors,
            "audit_records_lost": self.log_lost,
        }

    @command.command("urlsan.stats")  # type: ignore[untyped-decorator]
    def stats(self) -> str:
        """Requests per action and per rule that changed them, errors, lost audit records: JSON."""
        return json.dumps(self.counts(), sort_keys=True)

    def summary(self) -> str:
        total = sum(self.actions.values())
        actions = ", ".join(f"{n} {a}" for a, n in sorted(self.actions.items())) or "none"
        top = ", ".join(f"{r} ({n})" for r, n in self.rules.most_common(5)) or "none"
        lost = f" Audit records lost: {self.log_lost}." if self.log_lost else ""
        return (
            f"urlsan: {total} requests checked in {self.settings.mode} mode: {actions}. "
            f"Rules that changed requests most often: {top}. Errors: {self.errors}.{lost}"
        )

    def done(self) -> None:
        if self.log:
            self.log.close()
            self.log = None
        logger.info(self.summary())


def _host_header(request: http.Request) -> str | None:
    """``request.host_header``, without the case-insensitive multidict lookup (hot path)."""
    if request.data.authority and (request.is_http2 or request.is_http3):
        return request.authority
    for name, value in request.data.headers.fields:
        if len(name) == 4 and name.lower() == b"host":
            return value.decode("utf-8", "surrogateescape")
    return None


_second: list[Any] = [0, ""]  # the last whole second and its formatted prefix


def _rfc3339_now() -> str:
    """The current UTC time as RFC 3339 with milliseconds: 2026-11-22T04:57:58.197Z."""
    now = time.time()
    whole = int(now)
    if whole != _second[0]:
        _second[:] = [whole, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))]
    return f"{_second[1]}.{int((now - whole) * 1000):03d}Z"


def _plain(status: int, text: str) -> http.Response:
    # The reason may quote the client's bytes: escape them, never echo them raw.
    body = text.encode("ascii", "backslashreplace") + b"\n"
    return http.Response.make(status, body, {"Content-Type": "text/plain; charset=utf-8"})
