"""The urlsan addon: rewrite, audit or reject every request-target, and log each rewrite.

Runs in ``requestheaders``, so that requests with streamed bodies are covered too.  All URL logic
is `urlsan.core`'s; this module decides what to do with its answer and hands mitmproxy bytes.

Nothing slow runs on mitmproxy's event loop, which serves every client.  A target up to
``urlsan_max_inline`` bytes (8 KiB: what browsers and servers accept) is canonicalized inline, in
microseconds.  A longer one goes to a worker process (`check_target` is pure; a thread would not
do, it would hold the GIL), while the hook hands mitmproxy a coroutine to await, so that other
flows go on.  One longer than ``urlsan_max_target`` (64 KiB) is not canonicalized at all: it is
answered ``414 URI Too Long`` in reject mode, and otherwise forwarded unchanged and logged as
``skipped-oversize`` (rewrite and redirect answer 414 instead if it holds bytes that must never
reach the request line).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import logging
import multiprocessing
import time
from collections import Counter
from collections.abc import Coroutine, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, NamedTuple

from mitmproxy import command, ctx, exceptions, flowfilter, http
from mitmproxy.net.http import url

from .._about import warn_if_no_twin
from ..audit import record as audit_record
from ..audit.log import AuditLog
from ..audit.record import MAX_EDITS, MAX_TEXT
from ..audit.redact import DEFAULT_REDACT, Redactor
from ..core import Edit, Finding, InvalidTarget, Policy
from .signed import detect_signature, may_carry_signature
from .target import (
    MAX_CACHED_HOST,
    Checked,
    HostCheck,
    check_target,
    edit_rules,
    host_check,
    lower_priority,
    wire_safe,
)

logger = logging.getLogger(__name__)

MODES: tuple[str, ...] = ("rewrite", "audit", "reject", "redirect")
SIGNED: tuple[str, ...] = ("skip", "rewrite")
REDIRECT_METHODS = frozenset({b"GET", b"HEAD"})
MAX_INLINE = 8 * 1024  # urlsan_max_inline's default, bytes
# urlsan_max_target's default, bytes: eight times the request line nginx (8 KiB) and Apache
# (8,190 bytes) accept by default, so real targets are canonicalized; a longer one is hostile or
# broken, and its canonical form (up to three times as long) would cost the event loop to forward.
MAX_TARGET = 64 * 1024
TOO_LONG = "urlsan_max_target"  # rejected_by, for a target refused for its length alone

_MARKS = {"rejected": ":no_entry:", "skipped-signed": ":warning:", "skipped-oversize": ":warning:"}
_LOGGED_TARGET = 200  # bytes of a target quoted in an error message


class Settings(NamedTuple):
    """The addon's configuration, parsed from its options in one go."""

    mode: str
    policy: Policy
    strict: Policy  # the policy reject mode checks with: nothing repaired, invalid raises
    strict_fragment: Policy  # the same, keeping the fragment, so that it is checked too
    lenient: Policy  # never raises: the findings of a target the others refused
    filter: flowfilter.TFilter | None
    redactor: Redactor
    signed: str
    max_inline: int
    max_target: int
    # Derived once here, since every request reads them: `check_target`'s policy,
    # fragment_policy and lenient arguments for this mode, and `check_host` cached for the policy
    # the mode checks hosts with and for the lenient one.
    targets: tuple[Policy, Policy | None, Policy]
    hosts: HostCheck
    lenient_hosts: HostCheck


def parse_settings(
    mode: str,
    profile: str,
    rules: str,
    filter_expr: str | None,
    redact: Sequence[str],
    signed: str,
    max_inline: int = MAX_INLINE,
    max_target: int = MAX_TARGET,
    drop_params: Sequence[str] = (),
    keep_params: Sequence[str] = (),
) -> Settings:
    """Build `Settings` from option values.  Raises `ValueError` naming the bad option."""
    if mode not in MODES:
        raise ValueError(f"urlsan_mode must be one of {', '.join(MODES)}, not {mode!r}")
    if signed not in SIGNED:
        raise ValueError(f"urlsan_signed must be one of {', '.join(SIGNED)}, not {signed!r}")
    if max_inline < 0:
        raise ValueError(f"urlsan_max_inline must be 0 or more, not {max_inline}")
    if max_target < max_inline:
        raise ValueError(
            f"urlsan_max_target ({max_target}) must not be less than urlsan_max_inline "
            f"({max_inline})"
        )
    try:
        policy = Policy.profile(profile)
    except ValueError as e:
        raise ValueError(f"urlsan_profile: {e}") from e
    try:
        # RFC 9110 §7.1: a fragment is never sent to a server; urlsan_rules may still turn it off.
        policy = policy.with_rules("+strip-fragment").with_rules(rules)
    except ValueError as e:
        raise ValueError(f"urlsan_rules: {e}") from e
    for option, value in (("drop", drop_params), ("keep", keep_params)):
        if value:
            try:
                policy = policy.with_params(**{option: value})
            except ValueError as e:
                raise ValueError(f"urlsan_{option}_params: {e}") from e
    flt = None
    if filter_expr:
        try:
            flt = flowfilter.parse(filter_expr)
        except ValueError as e:
            raise ValueError(f"urlsan_filter: {e}") from e
    strict = dataclasses.replace(policy, strict=True)
    strict_fragment = strict.with_rules("-strip-fragment")
    lenient = dataclasses.replace(policy, strict=False).with_rules("-reject-escaped-slash")
    reject = mode == "reject"
    return Settings(
        mode=mode,
        policy=policy,
        strict=strict,
        strict_fragment=strict_fragment,
        lenient=lenient,
        filter=flt,
        redactor=Redactor.of(redact),
        signed=signed,
        max_inline=max_inline,
        max_target=max_target,
        targets=(strict, strict_fragment, lenient) if reject else (policy, None, lenient),
        hosts=host_check(strict if reject else policy),
        lenient_hosts=host_check(lenient),
    )


class Outcome(NamedTuple):
    """What the addon decided for one request."""

    action: str
    target: Checked  # what core said about the request-target
    host: str | None  # the canonical Host header / :authority, when it changed
    authority: str | None  # the canonical absolute-form authority, when it changed
    edits: tuple[Edit, ...]  # the target's, then the host's and authority's: at most MAX_EDITS
    edits_total: int
    rules: frozenset[str]  # every rule that changed something
    findings: tuple[Finding, ...]
    host_header: str | None = None  # as the client sent it
    reason: str = ""  # why a target was rejected (or, audited, would have been)
    rejected_by: str = ""  # the rule (or TOO_LONG) that refused it

    @property
    def after(self) -> str | None:
        """The canonical target; None when it was refused or never canonicalized."""
        if self.rejected_by or self.action == "skipped-oversize":
            return None
        return self.target.url

    @property
    def facts(self) -> dict[str, Any]:
        """``flow.metadata["urlsan"]``: the facts, for machines (and the audit log).

        As small as an audit record, whatever the request: at most `MAX_EDITS` edits, and
        ``before`` and ``after`` cut to `MAX_TEXT` characters (``"truncated": true``), since a
        megabyte target must not be held two or three times over by every flow mitmproxy keeps.
        """
        if self.action == "unchanged" and not self.findings:
            return audit_record.unchanged(self.target.input)
        return audit_record.facts(
            before=self.target.input,
            after=self.after,
            action=self.action,
            edits=self.edits,
            findings=self.findings,
            edits_total=self.edits_total,
            reason=self.reason if self.rejected_by else "",
            rejected_by=self.rejected_by,
        )


class UrlSanitizer:
    def __init__(self) -> None:
        self.settings = parse_settings("rewrite", "rfc3986", "", None, DEFAULT_REDACT, "skip")
        self.log: AuditLog | None = None
        self.actions: Counter[str] = Counter()
        self.rules: Counter[str] = Counter()
        self.errors = 0
        self.log_lost = 0  # audit records lost to write failures (reported by AuditLog, once)
        self._workers: ProcessPoolExecutor | None = None  # for targets over urlsan_max_inline

    def load(self, loader: Any) -> None:
        warn_if_no_twin(logger.warning)  # once per process: the fix is a wheel or a compiler
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
            "urlsan_drop_params",
            Sequence[str],
            [],
            "Parameter specs for drop-params, added to the profile's: [HOST:]NAME[,NAME...], "
            "names shell-style patterns in any case ('utm_*,fbclid', 'example.com:ref,src'); "
            "query parameters and ;path parameters. Setting it switches drop-params on.",
        )
        loader.add_option(
            "urlsan_keep_params",
            Sequence[str],
            [],
            "An allowlist of query parameters, [HOST:]NAME[,NAME...]: on a host a spec covers, "
            "every parameter it does not name is dropped. Setting it switches drop-params on.",
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
        loader.add_option(
            "urlsan_max_inline",
            int,
            MAX_INLINE,
            "Request-targets up to this many bytes are canonicalized on mitmproxy's event loop; "
            "longer ones in a worker process, while other requests are served.",
        )
        loader.add_option(
            "urlsan_max_target",
            int,
            MAX_TARGET,
            "Request-targets longer than this many bytes are not canonicalized. audit forwards "
            "them unchanged (action skipped-oversize); rewrite and redirect too, unless they hold "
            "bytes never forwarded (controls, spaces, non-ASCII): 414 URI Too Long; reject "
            "answers 414.",
        )

    def configure(self, updated: set[str]) -> None:
        names = {
            "urlsan_mode",
            "urlsan_profile",
            "urlsan_rules",
            "urlsan_filter",
            "urlsan_redact",
            "urlsan_signed",
            "urlsan_max_inline",
            "urlsan_max_target",
            "urlsan_drop_params",
            "urlsan_keep_params",
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
                    o.urlsan_max_inline,
                    o.urlsan_max_target,
                    o.urlsan_drop_params,
                    o.urlsan_keep_params,
                )
            except ValueError as e:
                raise exceptions.OptionsError(  # type: ignore[no-untyped-call]
                    f"Cannot parse urlsan options: {e}"
                ) from e
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

    def requestheaders(self, flow: http.HTTPFlow) -> Coroutine[Any, Any, None] | None:
        """Check the request-target.  Inline for ordinary targets; for one longer than
        urlsan_max_inline, a coroutine that mitmproxy awaits (it awaits whatever a hook returns)
        while the work is done in a worker process.
        """
        if flow.response or flow.error or not flow.live:
            return None
        request = flow.request
        if request.data.method == b"CONNECT":
            return None  # authority-form: mitmproxy's own http_connect handling
        settings = self.settings
        if settings.filter and not settings.filter(flow):
            return None
        raw = request.data.path
        if len(raw) > settings.max_inline:
            if len(raw) > settings.max_target:
                self._handle_oversize(flow, settings)  # never canonicalized: nothing to wait for
                return None
            return self._check_long(flow, settings)
        host_header = _host_header(request)
        try:
            target = check_target(
                raw, _form(raw), *settings.targets, host=_sent_to(request, host_header)
            )
        except Exception:
            self._failed(flow, settings)
            return None
        if not self._unchanged(flow, settings, target, host_header):
            self._handle(flow, settings, target, host_header)
        return None

    def _unchanged(
        self, flow: http.HTTPFlow, settings: Settings, target: Checked, host_header: str | None
    ) -> bool:
        """Most requests, at their own cost: a target core left as it was and found nothing in,
        sent with a canonical Host and no absolute-form authority.  False for any other request,
        which `_handle` then decides (the same outcome, through every step)."""
        if target.changed or target.findings or target.refused is not None:
            return False
        request = flow.request
        if request.data.authority and not (request.is_http2 or request.is_http3):
            return False
        try:
            if _authority(request, host_header, settings.hosts)[0] is not None:
                return False  # the Host header needs a rewrite
        except InvalidTarget:
            return False
        flow.metadata["urlsan"] = audit_record.unchanged(target.input)
        self.actions["unchanged"] += 1
        return True

    async def _check_long(self, flow: http.HTTPFlow, settings: Settings) -> None:
        raw = flow.request.data.path
        host_header = _host_header(flow.request)
        job = functools.partial(
            check_target,
            raw,
            _form(raw),
            *settings.targets,
            limit=MAX_TEXT + 1,
            host=_sent_to(flow.request, host_header),
        )
        try:
            target = await asyncio.get_running_loop().run_in_executor(self._pool(), job)
        except Exception as e:
            if isinstance(e, BrokenProcessPool):  # a worker died (killed, out of memory)
                self._workers = None
            self._failed(flow, settings)
            return
        if flow.response or flow.error or not flow.live:
            return  # the client went away, or the flow was killed, while we waited
        self._handle(flow, settings, target, host_header)

    def _pool(self) -> ProcessPoolExecutor:
        if self._workers is None:
            # spawn, never fork: mitmproxy's process has threads, and the worker needs only
            # urlsan.core.  One worker, at a lower priority: long targets queue there, and
            # neither take every core nor the CPU the event loop needs.
            context = multiprocessing.get_context("spawn")
            self._workers = ProcessPoolExecutor(1, mp_context=context, initializer=lower_priority)
        return self._workers

    def _handle(
        self, flow: http.HTTPFlow, settings: Settings, target: Checked, host_header: str | None
    ) -> None:
        request = flow.request
        saved = (request.data.path, request.data.authority, request.data.headers.fields)
        try:
            outcome = self._decide(request, settings, target, host_header)
            self._apply(flow, outcome)
        except Exception:
            # Never drop or corrupt a request because of urlsan: restore what it was.
            request.data.path, request.data.authority, request.data.headers.fields = saved
            self._failed(flow, settings)
            return
        self._done_with(flow, outcome)

    def _handle_oversize(self, flow: http.HTTPFlow, settings: Settings) -> None:
        request = flow.request
        raw = request.data.path
        # Enough bytes for the MAX_TEXT characters a record keeps, and one more to mark the cut.
        before = raw[: 4 * MAX_TEXT + 4].decode("utf-8", "surrogateescape")
        target = Checked(before, "", False, (), 0, frozenset(), ())
        host_header = _host_header(request)
        # Never forwarded unchecked: bytes that would split or smuggle a request (h2 :path).
        unsafe = settings.mode != "audit" and not wire_safe(raw)
        if settings.mode == "reject" or unsafe:
            reason = (
                f"the request-target is {len(raw)} bytes long, more than urlsan_max_target "
                f"({settings.max_target})"
            )
            outcome = Outcome(
                "rejected", target, None, None, (), 0, frozenset(), (), host_header, reason,
                TOO_LONG,
            )  # fmt: skip
        else:
            outcome = Outcome(
                "skipped-oversize", target, None, None, (), 0, frozenset(), (), host_header
            )
        try:
            self._apply(flow, outcome)
        except Exception:
            self._failed(flow, settings)
            return
        self._done_with(flow, outcome)

    def _failed(self, flow: http.HTTPFlow, settings: Settings) -> None:
        """An unexpected error (a bug): the request passes as it came, or 400 in reject mode.

        Called in an ``except`` block, so that the traceback is logged.
        """
        request = flow.request
        self.errors += 1
        logger.exception(
            "urlsan failed on %s %r", request.method, request.data.path[:_LOGGED_TARGET]
        )
        if settings.mode == "reject":
            flow.response = _plain(400, "urlsan: internal error while checking the target")
            request.stream = False

    def _done_with(self, flow: http.HTTPFlow, outcome: Outcome) -> None:
        """Count the outcome and write its audit record."""
        self.actions[outcome.action] += 1
        rules = self.rules
        for rule in outcome.rules:  # not Counter.update: its Mapping test costs more than this
            rules[rule] += 1
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

    def _decide(
        self,
        request: http.Request,
        settings: Settings,
        target: Checked,
        host_header: str | None,
    ) -> Outcome:
        """Canonicalize the authority and choose the action.  Changes nothing."""
        error = target.refused
        host = authority = None
        host_edits: tuple[Edit, ...] = ()
        auth_edits: tuple[Edit, ...] = ()
        if error is None:
            try:
                host, host_edits = _authority(request, host_header, settings.hosts)
                if request.data.authority and not (request.is_http2 or request.is_http3):
                    authority, auth_edits = _authority(request, request.authority, settings.hosts)
            except InvalidTarget as e:
                error = e
        if error is not None:
            return self._refused(request, settings, target, host_header, error)

        changed = target.changed or host or authority
        edits = target.edits
        if host_edits or auth_edits:
            edits = (edits + host_edits + auth_edits)[:MAX_EDITS]
        total = target.edits_total + len(host_edits) + len(auth_edits)
        rules = target.rules
        if host_edits or auth_edits:
            rules = rules | edit_rules(host_edits + auth_edits)
        if not changed:
            action = "unchanged"
        elif settings.signed == "skip" and self._signed(request, request.data.path):
            action = "skipped-signed"
        elif settings.mode == "audit":
            action = "audited"
        elif (
            settings.mode == "redirect"
            and request.data.method in REDIRECT_METHODS
            and target.changed
            and not target.url.startswith("//")  # Location "//x" would name another host
        ):
            action = "redirected"
        else:
            action = "rewritten"
        return _new(
            Outcome,
            (action, target, host, authority, edits, total, rules, target.findings, host_header,
             "", ""),
        )  # fmt: skip

    def _refused(
        self,
        request: http.Request,
        settings: Settings,
        target: Checked,
        host_header: str | None,
        error: InvalidTarget,
    ) -> Outcome:
        """Rejected (audited, in audit mode): strict mode or reject-escaped-slash refused it."""
        host = None
        with contextlib.suppress(InvalidTarget):
            # The same canonical host a rewritten request logs, so that reports count one host.
            host, _ = _authority(request, host_header, settings.lenient_hosts)
        action = "audited" if settings.mode == "audit" else "rejected"
        return Outcome(
            action, target, host, None, (), 0, frozenset(), target.findings, host_header,
            str(error), error.rule,
        )  # fmt: skip

    @staticmethod
    def _signed(request: http.Request, raw: bytes) -> bool:
        in_query = may_carry_signature(raw)
        authorization = None
        for name, value in request.data.headers.fields:  # faster than the case-insensitive get()
            if len(name) == 13 and name.lower() == b"authorization":
                authorization = value.decode("latin-1")
        if not in_query and authorization is None:
            return False  # the common case, decided without parsing or scanning the target
        # Only a wire-safe signed target is exempt: controls or spaces are never forwarded.
        if not wire_safe(raw):
            return False
        names = request.query.keys() if in_query else ()
        return detect_signature(names, authorization) is not None

    def _apply(self, flow: http.HTTPFlow, outcome: Outcome) -> None:
        request = flow.request
        action = outcome.action
        if action == "rejected":
            status = 414 if outcome.rejected_by == TOO_LONG else 400
            flow.response = _plain(status, f"urlsan: {outcome.reason}")
            request.stream = False  # a response set here must not race a streamed body
        elif action == "redirected":
            location = _wire(outcome.target)
            headers: dict[str, str | bytes] = {"Location": location, "Content-Length": "0"}
            flow.response = http.Response.make(308, b"", headers)
            request.stream = False
        elif action == "rewritten":
            if outcome.target.changed:
                request.data.path = _wire(outcome.target)
            if outcome.host:
                request.host_header = outcome.host
            if outcome.authority:
                request.data.authority = outcome.authority.encode("ascii")
        if action != "unchanged":
            if outcome.rejected_by:
                note = f"urlsan {action}: {outcome.rejected_by}"
            elif outcome.rules:
                note = _note(action, outcome.rules)
            else:
                note = f"urlsan {action}: {', '.join(f.rule for f in outcome.findings)}"
            flow.comment = f"{flow.comment}\n{note}" if flow.comment else note
            if not flow.marked:
                flow.marked = _MARKS.get(action, ":wrench:")
        flow.metadata["urlsan"] = outcome.facts

    def _record(self, log: AuditLog, flow: http.HTTPFlow, outcome: Outcome) -> bool:
        request = flow.request
        record = audit_record.build(
            ts=_rfc3339_now(),
            client=audit_record.address(flow.client_conn.peername),
            method=request.method,
            scheme=request.scheme,
            host=outcome.host or outcome.host_header or request.host,
            http_version=request.http_version,
            profile=self.settings.policy.name,
            # built once, for flow.metadata, capped as the log caps them
            facts_=flow.metadata["urlsan"],
        )
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
        if self._workers is not None:
            self._workers.shutdown(wait=False, cancel_futures=True)
            self._workers = None
        if self.log:
            self.log.close()
            self.log = None
        logger.info(self.summary())


_new = tuple.__new__  # a NamedTuple without its __new__'s Python frame, on every request


@functools.lru_cache(maxsize=256)
def _note(action: str, rules: frozenset[str]) -> str:
    """The flow's comment for an action and the rules that made it; a proxy sees few pairs."""
    return f"urlsan {action}: {', '.join(sorted(rules))}"


def _wire(target: Checked) -> bytes:
    """The canonical target as the bytes to send; raises unless they are wire-safe."""
    if target.wire is not None:
        return target.wire  # encoded and checked in the worker: megabytes stay off the loop
    data = target.url.encode("ascii")
    if not wire_safe(data):
        raise ValueError(f"canonical target is not wire-safe: {data[:200]!r}")
    return data


def _authority(
    request: http.Request, value: str | None, check: HostCheck
) -> tuple[str | None, tuple[Edit, ...]]:
    """The canonical form of a Host header or authority, or None when it is already canonical.

    Edit offsets count in ``value``.  Anything that is not a bare host[:port] (userinfo, a
    path) is left alone: that is mitmproxy's to refuse, not ours to repair.
    """
    if not value:
        return None, ()
    canonical, edits = check(value, request.scheme)
    return (None if canonical == value else canonical), edits


def _form(raw: bytes) -> str:
    return "asterisk" if raw == b"*" else "origin"


def _sent_to(request: http.Request, host_header: str | None) -> str:
    """``request.pretty_host`` from ``_host_header(request)``: where an origin-form target was
    sent, for parameter specs scoped by host."""
    if not host_header:
        return request.host
    if len(host_header) > MAX_CACHED_HOST:
        return _host_of.__wrapped__(host_header)
    return _host_of(host_header)


@functools.lru_cache(maxsize=1024)
def _host_of(authority: str) -> str:
    # As mitmproxy's pretty_host parses it, cached: a proxy sees the same few Host headers.
    return url.parse_authority(authority, check=False)[0]


def _host_header(request: http.Request) -> str | None:
    """``request.host_header``, without the case-insensitive multidict lookup (hot path)."""
    if request.data.authority and (request.is_http2 or request.is_http3):
        return request.authority
    for name, value in request.data.headers.fields:
        if len(name) == 4 and name.lower() == b"host":
            return value.decode("utf-8", "surrogateescape")
    return None


_second: list[Any] = [0, ""]  # the last whole second and its formatted prefix
_milli: list[Any] = [0, ""]  # the last millisecond and its formatted time


def _rfc3339_now() -> str:
    """The current UTC time as RFC 3339 with milliseconds: 2026-11-22T04:57:58.197Z."""
    now = int(time.time() * 1000)
    if now != _milli[0]:  # a busy proxy logs several records per millisecond
        whole, millis = divmod(now, 1000)
        if whole != _second[0]:
            _second[:] = [whole, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))]
        _milli[:] = [now, f"{_second[1]}.{millis:03d}Z"]
    text: str = _milli[1]
    return text


def _plain(status: int, text: str) -> http.Response:
    # The reason may quote the client's bytes: escape them, never echo them raw.
    body = text.encode("ascii", "backslashreplace") + b"\n"
    return http.Response.make(status, body, {"Content-Type": "text/plain; charset=utf-8"})
