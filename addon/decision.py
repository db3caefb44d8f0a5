"""What urlsan does with one request, and the audit record it leaves: decided here, once.

The addon (`urlsan.addon.sanitizer`) applies an `Outcome` to a live flow; ``urlsan audit`` writes
the record of the same `Outcome` for a recorded request.  Both ask this module, so that a request
read back from a recording gets the record the proxy wrote for it (but for the time, and the
client's port where the recording has another).  No mitmproxy here: a request is a plain
`Request` value (`urlsan.audit.traffic.Request`), and the work runs in a worker process too.

The actions, in the order they are decided:

    unchanged         the target and Host are canonical already (recorded only with findings)
    rejected          reject mode: the target is no valid URI-reference, or a rule refused it;
                      any mode: it is longer than ``max_target`` and holds bytes never forwarded
    audited           audit mode: what would change (or be refused) is only recorded
    skipped-signed    a signature covers the target (``signed="skip"``): only recorded
    skipped-oversize  longer than ``max_target``: never canonicalized, forwarded as it came
    redirected        redirect mode, GET or HEAD: a 308 to the canonical target
    rewritten         the canonical target (and Host) forwarded
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import urllib.parse
from collections.abc import Callable, Sequence
from functools import lru_cache, partial
from typing import Any, NamedTuple

from ..audit import record as audit_record
from ..audit.record import MAX_EDITS, MAX_TEXT
from ..audit.traffic import Request
from ..core import Edit, Finding, InvalidTarget, Policy, canonicalize
from ..core import backends as servers
from ..core.compiled import fields_as_slots
from ..core.options import OptionNames, policy_from_options
from .options import MAX_INLINE, MAX_TARGET, MODES, SIGNED  # the option table's values
from .signed import detect_signature, may_carry_signature
from .target import Checked, HostCheck, check_target, edit_rules, host_check, wire_safe

__all__ = [
    "MAX_INLINE",
    "MAX_TARGET",
    "MODES",
    "SIGNED",
    "Checked",
    "Outcome",
    "Request",
    "Settings",
    "checks_target",
    "decide",
    "examine",
    "job",
    "record",
    "settings",
]

# RFC 9110 §15.4.9: a 308 makes the client repeat the method and body; only the safe methods
# are redirected, so that a client never sends a body twice.
REDIRECT_METHODS = frozenset({"GET", "HEAD"})
TOO_LONG = "urlsan_max_target"  # rejected_by, for a target refused for its length alone
BACKENDS = "urlsan_backends"  # rejected_by, for a target a protected server reads otherwise

# The proxy's option names, which its messages and a record's reasons quote.
OPTION_NAMES = OptionNames(
    "urlsan_profile", "urlsan_rules", "urlsan_drop_params", "urlsan_keep_params"
)


@fields_as_slots  # read on every request
class Settings(NamedTuple):
    """The decision's configuration; build it with `settings`."""

    mode: str
    policy: Policy  # the profile and rules, strip-fragment on unless switched off
    signed: str
    max_target: int
    # What `check_target` is given for this mode: the policy it checks with (strict in reject
    # mode: nothing repaired, invalid raises), the one a fragment is checked with first (reject
    # mode only, since strip-fragment would drop an invalid fragment unseen), and a lenient one
    # that never raises, for the findings of a target the others refused.
    targets: tuple[Policy, Policy | None, Policy]
    hosts: HostCheck  # the Host check of the policy the mode checks hosts with
    lenient_hosts: HostCheck
    # The servers behind the proxy (`urlsan.core.backends`) whose reading of a forwarded
    # target must be RFC 3986's: a request one of them would route otherwise is refused
    # (recorded only, in audit mode).
    backends: tuple[str, ...] = ()


def settings(
    mode: str = "rewrite",
    profile: str = "rfc3986",
    rules: str = "",
    *,
    signed: str = "skip",
    max_target: int = MAX_TARGET,
    drop_params: Sequence[str] = (),
    keep_params: Sequence[str] = (),
    names: OptionNames = OPTION_NAMES,
    backends: str | Sequence[str] = (),
    backends_option: str = "urlsan_backends",
) -> Settings:
    """`Settings` from option values.  Raises `ValueError` naming the bad option as ``names``
    and ``backends_option`` (default: the proxy's) call it."""
    if mode not in MODES:
        raise ValueError(f"urlsan_mode must be one of {', '.join(MODES)}, not {mode!r}")
    if signed not in SIGNED:
        raise ValueError(f"urlsan_signed must be one of {', '.join(SIGNED)}, not {signed!r}")
    # RFC 9110 §7.1: a fragment is never sent to a server; the rules may still keep it.
    rules = ",".join(filter(None, ("+strip-fragment", rules)))
    policy = policy_from_options(profile, rules, drop_params, keep_params, names=names)
    strict = dataclasses.replace(policy, strict=True)
    lenient = dataclasses.replace(policy, strict=False).with_rules("-reject-escaped-slash")
    reject = mode == "reject"
    protected = servers.parse_names(backends, backends_option)
    return Settings(
        mode=mode,
        policy=policy,
        signed=signed,
        max_target=max_target,
        targets=(strict, strict.with_rules("-strip-fragment"), lenient)
        if reject
        else (policy, None, lenient),
        hosts=host_check(strict if reject else policy),
        lenient_hosts=host_check(lenient),
        backends=protected,
    )


@fields_as_slots  # read on every request
class Outcome(NamedTuple):
    """What urlsan decided for one request."""

    action: str
    target: Checked  # what core said about the request-target
    host: str | None  # the canonical Host header / :authority, when it changed
    authority: str | None  # the canonical absolute-form authority, when it changed
    edits: tuple[Edit, ...]  # the target's, then the host's and authority's: at most MAX_EDITS
    edits_total: int
    rules: frozenset[str]  # every rule that changed something
    findings: tuple[Finding, ...]
    reason: str = ""  # why a target was rejected (or, audited, would have been)
    rejected_by: str = ""  # the rule (or TOO_LONG, or BACKENDS) that refused it
    # The protected servers that would route the forwarded target otherwise than RFC 3986.
    divergences: tuple[servers.Divergence, ...] = ()
    # The protected servers (`Settings.backends`): they alone rank the target's severity.
    protected: tuple[str, ...] = ()

    @property
    def after(self) -> str | None:
        """The canonical target; None when it was refused or never canonicalized."""
        if self.rejected_by or self.action == "skipped-oversize":
            return None
        return self.target.url

    @property
    def recorded(self) -> bool:
        """Whether the request gets an audit record: every action but a quiet unchanged."""
        return self.action != "unchanged" or bool(self.findings)

    @property
    def facts(self) -> dict[str, Any]:
        """What urlsan did with the target, as the record holds it (and the addon's
        ``flow.metadata["urlsan"]``): at most `MAX_EDITS` edits, ``before`` and ``after`` cut
        to `MAX_TEXT` characters (``"truncated": true``)."""
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
            backends=[d._asdict() for d in self.divergences] if self.divergences else (),
            servers=self.protected,
        )


def form(raw: bytes) -> str:
    """The form `canonicalize` reads a request-target in: ``*`` is asterisk-form, anything else
    origin-form (what a proxy hands on; a recording may hold a bare word, read as it comes)."""
    if raw == b"*":
        return "asterisk"
    return "origin" if raw[:1] == b"/" else "auto"


# mitmproxy's reading of a Host header (`mitmproxy.net.http.url.parse_authority`): the host,
# without brackets and port; anything else is taken whole.
_AUTHORITY = re.compile(r"(?P<host>[^:]+|\[.+\])(?::\d+)?")


@lru_cache(maxsize=1024)
def sent_to(authority: str) -> str:
    """The host a request was sent to, from its Host header or authority: what parameter specs
    scoped by host (``example.com:ref``) are matched against."""
    m = _AUTHORITY.fullmatch(authority)
    if not m:
        return authority
    host = m.group("host")
    return host[1:-1] if host[:1] == "[" and host[-1:] == "]" else host


# RFC 1035 §2.3.4: a name is at most 255 octets; with a port, an IP-literal's brackets.  A longer
# Host is no host a cache would see twice, and is not kept in one (a client chooses its length).
_MAX_CACHED_HOST = 255 + len(":65535")


def check(
    raw: bytes,
    targets: tuple[Policy, Policy | None, Policy],
    host: str | None,
    *,
    limit: int | None = None,
) -> Checked:
    """What core says of the request-target ``raw`` sent to ``host`` (its Host header or
    authority), with the policies a mode checks targets with (`Settings.targets`).  Pure, and
    its arguments pickle: a worker process runs it for a long target, with a ``limit``
    (`check_target`)."""
    if host and len(host) > _MAX_CACHED_HOST:
        where: str | None = sent_to.__wrapped__(host)
    else:
        where = sent_to(host) if host else None
    # `form`, in line for the origin-form targets a proxy is sent (one call less per request)
    shape = "origin" if raw[:1] == b"/" else form(raw)
    policy, fragment_policy, lenient = targets  # not *targets: a call without a tuple and dict
    return check_target(raw, shape, policy, fragment_policy, lenient, limit=limit, host=where)


def _canonical_host(
    value: str | None, scheme: str, check: HostCheck
) -> tuple[str | None, tuple[Edit, ...]]:
    """The canonical form of a Host header or authority, or None when it is already canonical.
    Edit offsets count in ``value``.  Anything that is not a bare host[:port] (userinfo, a path)
    is left alone: that is the proxy's to refuse, not ours to repair."""
    if not value:
        return None, ()
    canonical, edits = check(value, scheme or "http")
    return (None if canonical == value else canonical), edits


def untouched(
    target: Checked, settings: Settings, scheme: str, host: str | None, authority: str | None
) -> bool:
    """Most requests, at their own cost: a target core left as it was and found nothing in,
    sent with a canonical Host (``host``) and no absolute-form ``authority``.  `decide` says
    ``unchanged``, with no findings, for exactly these."""
    if target.changed or target.findings or target.refused is not None or authority:
        return False
    if settings.backends and not servers.plain(target.input.encode("utf-8", "surrogateescape")):
        return False  # a protected server may read it otherwise: `decide` looks
    try:
        return _canonical_host(host, scheme, settings.hosts)[0] is None
    except InvalidTarget:
        return False


def quiet(settings: Settings) -> Callable[[bytes, str | None], bool] | None:
    """A test of an origin-form request-target (bytes) and the Host it was sent to (None:
    none), True when `examine` would find the request `untouched` and say nothing of it,
    without a `Request`: the target is no longer than ``max_target``, core leaves it as it is
    and finds nothing in it, and the Host is canonical.  None when the settings decide more
    than the target and Host (``backends``).  False means only that `examine` must decide.
    ``urlsan audit`` passes over most lines of a server's log with it."""
    if settings.backends:
        return None
    policy, fragment_policy, _ = settings.targets
    longest = settings.max_target

    def test(target: bytes, host: str | None) -> bool:
        # `check`, as `examine` calls it: form "origin"; in reject mode a fragment is checked
        # by a policy of its own first.
        if len(target) > longest or (fragment_policy is not None and b"#"[0] in target):
            return False
        if host is not None:  # parameter specs scoped by host; the Host's own check
            return untouched(check(target, settings.targets, host), settings, "", host, None)
        try:
            result = canonicalize(target, policy, form="origin")
        except InvalidTarget:
            return False
        return result.url == result.input and not result.findings

    return test


def decide(request: Request, settings: Settings, target: Checked) -> Outcome:
    """The outcome for ``request``, whose target core checked as ``target`` (`check`)."""
    error = target.refused
    host = authority = None
    host_edits: tuple[Edit, ...] = ()
    auth_edits: tuple[Edit, ...] = ()
    if error is None:
        try:
            host, host_edits = _canonical_host(request.host, request.scheme, settings.hosts)
            if request.authority:  # only absolute-form requests have one
                authority, auth_edits = _canonical_host(
                    request.authority, request.scheme, settings.hosts
                )
        except InvalidTarget as e:
            error = e
    if error is not None:
        return _refused(request, settings, target, error)
    edits, rules, total = target.edits, target.rules, target.edits_total
    if host_edits or auth_edits:
        edits = (edits + host_edits + auth_edits)[:MAX_EDITS]
        rules = rules | edit_rules(host_edits + auth_edits)
        total += len(host_edits) + len(auth_edits)
    action = _action(request, settings, target, target.changed or bool(host or authority))
    # for_host of no servers is () (as examine's quick answer has it), without its scan
    protected = _protected(request, settings) if settings.backends else ()
    outcome: Outcome = _new(
        Outcome,
        (
            action, target, host, authority, edits, total, rules, target.findings, "", "", (),
            protected,
        ),
    )  # fmt: skip
    if protected:
        diverging = _divergences(request, target, action, protected)
        if diverging:
            return _diverged(outcome, settings.mode, diverging)
    return outcome


def _protected(request: Request, settings: Settings) -> tuple[str, ...]:
    """The protected servers behind the proxy for ``request``'s host."""
    return servers.for_host(settings.backends, request.authority or request.host)


def _divergences(
    request: Request, target: Checked, action: str, names: tuple[str, ...]
) -> tuple[servers.Divergence, ...]:
    """The protected servers that would route what is forwarded otherwise than RFC 3986 reads
    it: the canonical target once rewritten (or redirected to), else the target as it came."""
    if form(request.target) != "origin":
        return ()
    canonical = target.wire.decode("ascii") if target.wire is not None else target.url
    forwarded = canonical if action in ("rewritten", "redirected") else request.target
    return servers.divergences(forwarded, names, canonical=canonical)


def _diverged(outcome: Outcome, mode: str, diverging: tuple[servers.Divergence, ...]) -> Outcome:
    """A protected server reads the target otherwise: refused (400) in rewrite, reject and
    redirect modes, recorded only in audit mode.  Each server is a finding."""
    findings = outcome.findings + servers.findings(diverging)
    if mode == "audit":
        return outcome._replace(findings=findings, divergences=diverging)
    return outcome._replace(
        action="rejected",
        authority=None,
        edits=(),
        edits_total=0,
        rules=frozenset(),
        findings=findings,
        reason="; ".join(servers.said(d) for d in diverging),
        rejected_by=BACKENDS,
        divergences=diverging,
    )


def _action(request: Request, settings: Settings, target: Checked, changed: bool) -> str:
    if not changed:
        return "unchanged"
    if settings.signed == "skip" and signed(request):
        return "skipped-signed"
    if settings.mode == "audit":
        return "audited"
    if (
        settings.mode == "redirect"
        and request.method in REDIRECT_METHODS
        and target.changed
        and not target.url.startswith("//")  # Location "//x" would name another host
    ):
        return "redirected"
    return "rewritten"


def _refused(
    request: Request, settings: Settings, target: Checked, error: InvalidTarget
) -> Outcome:
    """Rejected (audited, in audit mode): strict mode or reject-escaped-slash refused it."""
    host = None
    with contextlib.suppress(InvalidTarget):
        # The same canonical host a rewritten request logs, so that reports count one host.
        host, _ = _canonical_host(request.host, request.scheme, settings.lenient_hosts)
    action = "audited" if settings.mode == "audit" else "rejected"
    return Outcome(
        action, target, host, None, (), 0, frozenset(), target.findings, str(error), error.rule,
        protected=_protected(request, settings),  # the servers for its host, as decide
    )  # fmt: skip


def oversize(request: Request, settings: Settings) -> Outcome:
    """A target longer than ``max_target``: never canonicalized.  Forwarded as it came and
    recorded as ``skipped-oversize``; answered 414 in reject mode, and in rewrite and redirect
    modes when it holds bytes that must never reach a request line (RFC 9112 §3.2)."""
    raw = request.target
    # Enough bytes for the MAX_TEXT characters a record keeps, and one more to mark the cut.
    before = raw[: 4 * MAX_TEXT + 4].decode("utf-8", "surrogateescape")
    target = Checked(before, "", False, (), 0, frozenset(), ())
    if settings.mode == "reject" or (settings.mode != "audit" and not wire_safe(raw)):
        reason = (
            f"the request-target is {len(raw)} bytes long, more than urlsan_max_target "
            f"({settings.max_target})"
        )
        return Outcome("rejected", target, None, None, (), 0, frozenset(), (), reason, TOO_LONG)
    return Outcome("skipped-oversize", target, None, None, (), 0, frozenset(), ())


def signed(request: Request) -> bool:
    """Whether a signature covers the request's target (a presigned URL's query, or an
    Authorization header that signs the URI): any byte change would break it.  Only a wire-safe
    target counts: controls or spaces are never forwarded, signed or not."""
    raw = request.target
    # no query, no signature in it (RFC 3986 §3.4): most targets, told without a call.  The
    # byte as an int, as core.surt._ia says why.
    in_query = b"?"[0] in raw and may_carry_signature(raw)
    if not in_query and request.authorization is None:
        return False  # the common case, decided without parsing or scanning the target
    if not wire_safe(raw):
        return False
    names: list[str] = []
    if in_query:
        query = raw.partition(b"?")[2].partition(b"#")[0].decode("utf-8", "surrogateescape")
        names = [k for k, _ in urllib.parse.parse_qsl(query, keep_blank_values=True)]
    return detect_signature(names, request.authorization) is not None


def examine(
    request: Request,
    settings: Settings,
    target: Checked | None = None,
    *,
    destination: str | None = None,
) -> Outcome | None:
    """The whole decision for one request, the proxy's and ``urlsan audit``'s alike: None for a
    CONNECT, which carries no request-target to check (authority-form: the proxy's own to
    handle).  ``target``: the request-target as a worker process checked it already (`job`);
    ``destination``: where the request went when it has no Host header (a proxy knows it, a
    recording may not)."""
    if request.method == "CONNECT":
        return None
    if len(request.target) > settings.max_target:
        return oversize(request, settings)
    if target is None:
        target = check(request.target, settings.targets, request.host or destination)
        # Most requests, at their own cost: what `decide` would say of them, without its work
        # (a target core changed, or found something in, is never untouched: told without a call)
        if not (target.changed or target.findings) and untouched(
            target, settings, request.scheme, request.host, request.authority
        ):
            return _new(
                Outcome,
                (
                    "unchanged",
                    target,
                    None,
                    None,
                    target.edits,
                    target.edits_total,
                    target.rules,
                    target.findings,
                    "",
                    "",
                    (),
                    _protected(request, settings) if settings.backends else (),
                ),
            )
    return decide(request, settings, target)


def checks_target(request: Request, settings: Settings) -> bool:
    """Whether `examine` checks ``request``'s target: not for a CONNECT, nor past
    ``max_target``.  A proxy checks a long one in a worker process instead (`job`) and hands
    the answer to `examine`."""
    return len(request.target) <= settings.max_target and request.method != "CONNECT"


def job(request: Request, settings: Settings, destination: str | None = None) -> partial[Checked]:
    """The check of a long request-target (`checks_target`), as a call for a worker process: its
    arguments pickle, and its answer holds the first `MAX_TEXT` characters of each text and the
    canonical target as wire-safe bytes, so that no megabyte crosses back.  ``destination`` as
    for `examine`."""
    return partial(
        check,
        request.target,
        settings.targets,
        request.host or destination,
        limit=MAX_TEXT + 1,
    )


def record(
    request: Request,
    outcome: Outcome,
    settings: Settings,
    ts: str,
    *,
    facts: dict[str, Any] | None = None,
    host: str | None = None,
) -> dict[str, Any]:
    """The audit record of ``request``: who asked for what, then ``outcome.facts`` (given as
    ``facts`` when already built), then the response's status (``request.status``, None when
    no response came).  ``host`` stands in for a request without a Host header."""
    return audit_record.build(
        ts=ts,
        client=request.client,
        method=request.method,
        scheme=request.scheme,
        host=outcome.host or request.host or host,
        http_version=request.http_version,
        profile=settings.policy.name,
        facts_=outcome.facts if facts is None else facts,
        status=request.status,
    )


_new = tuple.__new__  # a NamedTuple without its __new__'s Python frame, on every request
