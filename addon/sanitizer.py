"""The urlsan addon: rewrite, audit or reject every request-target, and log each rewrite.

Runs in ``requestheaders``, so that requests with streamed bodies are covered too.  All URL logic
is `urlsan.core`'s, and what a request becomes is `urlsan.addon.decision`'s (which ``urlsan audit``
asks too); this module applies that outcome to the flow and hands mitmproxy bytes.

Nothing slow runs on mitmproxy's event loop, which serves every client.  A target up to
``urlsan_max_inline`` bytes (8 KiB: what browsers and servers accept) is canonicalized inline, in
microseconds.  A longer one goes to a worker process (`decision.check` is pure; a thread would not
do, it would hold the GIL), while the hook hands mitmproxy a coroutine to await, so that other
flows go on.  One longer than ``urlsan_max_target`` (64 KiB) is not canonicalized at all: it is
answered ``414 URI Too Long`` in reject mode, and otherwise forwarded unchanged and logged as
``skipped-oversize`` (rewrite and redirect answer 414 instead if it holds bytes that must never
reach the request line).
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import functools
import json
import logging
import multiprocessing
import os
import re
from collections import Counter
from collections.abc import Coroutine, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, NamedTuple

from mitmproxy import command, ctx, exceptions, flowfilter, http

from .._about import warn_if_no_twin
from ..audit import record as audit_record
from ..audit.log import AuditLog
from ..audit.redact import DEFAULT_REDACT, Redactor
from ..core import Finding, Policy, backends
from ..core.compiled import fields_as_slots
from . import decision
from .decision import TOO_LONG, Outcome, Request
from .options import (
    CHOICE,
    COUNT,
    FILTER,
    MAX_INLINE,
    MAX_TARGET,
    MODES,
    NAMES,
    PREFIX,
    PROXY,
    SIGNED,
    SPECS,
    TEXT,
    taken_by,
)
from .target import Checked, lower_priority, wire_safe

__all__ = [
    "MODES",
    "SIGNED",
    "Settings",
    "UrlSanitizer",
    "known_options",
    "parse_settings",
    "unknown_options",
]

logger = logging.getLogger(__name__)

_MARKS = {"rejected": ":no_entry:", "skipped-signed": ":warning:", "skipped-oversize": ":warning:"}
_LOGGED_TARGET = 200  # bytes of a target quoted in an error message
_COMMENT_TARGET = 1000  # characters of the original target in a flow's comment
_COMMENT_FINDINGS = 10  # findings named in a flow's comment
_UNSHOWN = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Records waiting for their response's status: in-flight requests, whose flows mitmproxy holds
# anyway.  Past this many the oldest is written without one, so that the table stays bounded
# even if a flow never ends (no response, no error).
MAX_PENDING = 10_000
# mitmproxy's type of each kind of option (urlsan.addon.options).
_TYPES: dict[str, Any] = {
    TEXT: str,
    CHOICE: str,
    COUNT: int,
    SPECS: Sequence[str],
    NAMES: Sequence[str],
    FILTER: str | None,
}
# The options `Settings` is parsed from (every one but the log's), as `parse_settings` names them.
_SETTINGS_ARGS = {
    o.name: "filter_expr" if o.name == "filter" else o.name
    for o in taken_by(PROXY)
    if o.name != "log"
}
_DECIDING = frozenset(PREFIX + name for name in _SETTINGS_ARGS)


@fields_as_slots  # read on every request
class Settings(NamedTuple):
    """The addon's configuration, parsed from its options in one go: the decision's
    (`urlsan.addon.decision.Settings`), and what only a live proxy has."""

    decision: decision.Settings
    filter: flowfilter.TFilter | None
    redactor: Redactor
    max_inline: int

    @property
    def mode(self) -> str:
        return self.decision.mode

    @property
    def policy(self) -> Policy:
        return self.decision.policy


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
    backends: Sequence[str] = (),
) -> Settings:
    """Build `Settings` from option values.  Raises `ValueError` naming the bad option."""
    if max_inline < 0:
        raise ValueError(f"urlsan_max_inline must be 0 or more, not {max_inline}")
    if max_target < max_inline:
        raise ValueError(
            f"urlsan_max_target ({max_target}) must not be less than urlsan_max_inline "
            f"({max_inline})"
        )
    decided = decision.settings(
        mode,
        profile,
        rules,
        signed=signed,
        max_target=max_target,
        drop_params=drop_params,
        keep_params=keep_params,
        backends=backends,
    )
    flt = None
    if filter_expr:
        try:
            flt = flowfilter.parse(filter_expr)
        except ValueError as e:
            raise ValueError(f"urlsan_filter: {e}") from e
    # Names as `urlsan audit --redact` takes them, and as urlsan_backends is read: comma-separated
    # (--set urlsan_redact=a,b is two names, as it is in config.yaml's list).
    names = [name for value in redact for name in value.split(",")]
    return Settings(decided, flt, Redactor.of(names), max_inline)


def unknown_options(names: Iterable[str], known: Iterable[str]) -> list[str]:
    """A message for each of ``names`` (options mitmproxy was given but knows no addon for)
    that is meant for urlsan: it starts with "urlsan", or it is close to one of urlsan's
    ``known`` options.  Each names the closest known option, so that a misspelt option is
    refused instead of silently doing nothing."""
    known = sorted(known)
    messages = []
    for name in sorted(names):
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
        ours = name.lower().startswith("urlsan")
        if not ours and not difflib.get_close_matches(name, known, n=1, cutoff=0.8):
            continue  # another addon's, or mitmproxy's own business
        hint = f"did you mean {close[0]}?" if close else "see `urlsan proxy --help`"
        messages.append(f"unknown option {name}: {hint}")
    return messages


class UrlSanitizer:
    def __init__(self) -> None:
        self.settings = parse_settings("rewrite", "rfc3986", "", None, DEFAULT_REDACT, "skip")
        self.log: AuditLog | None = None
        self._created: str | None = None  # the log's path, when this addon created the file
        self.started = False  # `running`: the proxy serves, and its log is kept
        self.actions: Counter[str] = Counter()
        self.rules: Counter[str] = Counter()
        self.errors = 0
        self.log_lost = 0  # audit records lost to write failures (reported by AuditLog, once)
        self._workers: ProcessPoolExecutor | None = None  # for targets over urlsan_max_inline
        # Decided requests whose record waits for the response's status: flow id → (flow,
        # outcome, the request as it came, its time).  Written at responseheaders, error, or done.
        self._pending: dict[str, tuple[http.HTTPFlow, Outcome, Request, str]] = {}

    def load(self, loader: Any) -> None:
        warn_if_no_twin(logger.warning)  # once per process: the fix is a wheel or a compiler
        for option in taken_by(PROXY):  # declared once, in urlsan.addon.options
            default = option.default
            loader.add_option(
                option.option,
                _TYPES[option.kind],
                list(default) if isinstance(default, tuple) else default,
                option.help,
                **({"choices": option.choices} if option.kind == CHOICE else {}),
            )

    def configure(self, updated: set[str]) -> None:
        if updated & _DECIDING:
            o = ctx.options
            try:
                self.settings = parse_settings(
                    **{arg: getattr(o, PREFIX + name) for name, arg in _SETTINGS_ARGS.items()}
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
                created = not os.path.lexists(path)
                try:
                    new = AuditLog(path, self.settings.redactor)
                except OSError as e:
                    raise exceptions.OptionsError(  # type: ignore[no-untyped-call]
                        f"Cannot open urlsan_log {path!r}: {e.strerror or e} (--set "
                        "urlsan_log=FILE names another file, --set urlsan_log= keeps none)"
                    ) from e
            if self.log:
                self._flush()  # the requests seen so far belong to the log they came under
                self.log.close()
            self.log = new
            self._created = path if new and created else None

    def discard_log(self) -> None:
        """The proxy does not start (a misspelt option, a bad value of another addon's, a port
        in use): close the log, and remove it if this addon created it and it is empty, so that
        a refused command line leaves nothing behind."""
        log, created, self.log, self._created = self.log, self._created, None, None
        if log is None:
            return
        log.close()
        if created and log.path == created:
            with contextlib.suppress(OSError):
                if os.path.getsize(created) == 0:
                    os.remove(created)

    def running(self) -> None:
        """Refuse misspelt options (mitmproxy keeps unknown ones aside, silently), then say in
        one line what urlsan will do."""
        mistakes = unknown_options(ctx.options.deferred, known_options(ctx.options))
        if mistakes:
            logger.error("urlsan: %s; stopping.", "; ".join(mistakes))
            self.discard_log()
            ctx.master.shutdown()  # type: ignore[no-untyped-call]
            return
        self.started = True
        logger.info(self.startup_line())

    def startup_line(self) -> str:
        """Mode, profile, rule changes, filter and audit log, as the proxy starts."""
        o = ctx.options
        decided = self.settings.decision
        parts = [f"urlsan: {decided.mode} mode", f"profile {decided.policy.name}"]
        parts.append(f"rules {o.urlsan_rules}" if o.urlsan_rules else "the profile's rules")
        for name in ("urlsan_drop_params", "urlsan_keep_params"):
            if getattr(o, name):
                parts.append(f"{name} {','.join(getattr(o, name))}")
        if decided.backends:
            parts.append(f"protecting {backends.described(decided.backends)}")
        if decided.signed != "skip":
            parts.append(f"signed requests {decided.signed}")
        if o.urlsan_filter:
            parts.append(f"only flows matching {o.urlsan_filter!r}")
        parts.append(f"audit log {os.path.abspath(self.log.path)}" if self.log else "no audit log")
        return ", ".join(parts)

    def requestheaders(self, flow: http.HTTPFlow) -> Coroutine[Any, Any, None] | None:
        """Check the request-target.  Inline for ordinary targets; for one longer than
        urlsan_max_inline, a coroutine that mitmproxy awaits (it awaits whatever a hook returns)
        while the work is done in a worker process.  What the request becomes is
        `urlsan.addon.decision`'s to say, asked once (`decision.examine`); this applies it to
        the flow.
        """
        if flow.response or flow.error or not flow.live:
            return None
        settings = self.settings
        if settings.filter and not settings.filter(flow):
            return None
        try:
            asked = _request(flow.request)
            # Longer than the event loop takes: to a worker, if the decision checks it at all.
            if len(asked.target) > settings.max_inline and decision.checks_target(
                asked, settings.decision
            ):
                return self._check_long(flow, settings, asked)
        except Exception:
            self._failed(flow, settings)
            return None
        self._decide(flow, settings, asked)
        return None

    async def _check_long(self, flow: http.HTTPFlow, settings: Settings, asked: Request) -> None:
        job = decision.job(asked, settings.decision, flow.request.host)
        try:
            target = await asyncio.get_running_loop().run_in_executor(self._pool(), job)
        except Exception as e:
            if isinstance(e, BrokenProcessPool):  # a worker died (killed, out of memory)
                self._workers = None
            self._failed(flow, settings)
            return
        if flow.response or flow.error or not flow.live:
            return  # the client went away, or the flow was killed, while we waited
        self._decide(flow, settings, asked, target)

    def _pool(self) -> ProcessPoolExecutor:
        if self._workers is None:
            # spawn, never fork: mitmproxy's process has threads, and the worker needs only
            # urlsan.core.  One worker, at a lower priority: long targets queue there, and
            # neither take every core nor the CPU the event loop needs.
            context = multiprocessing.get_context("spawn")
            self._workers = ProcessPoolExecutor(1, mp_context=context, initializer=lower_priority)
        return self._workers

    def _decide(
        self,
        flow: http.HTTPFlow,
        settings: Settings,
        asked: Request,
        target: Checked | None = None,
    ) -> None:
        """Ask the decision what ``asked`` becomes (``target``: a worker's check of its
        target) and apply the outcome to the flow."""
        try:
            # The flow's host (a mitmproxy property) only stands in for a missing Host header.
            outcome = decision.examine(
                asked,
                settings.decision,
                target,
                destination=None if asked.host else flow.request.host,
            )
            if outcome is None:
                return  # a CONNECT, mitmproxy's own http_connect handling
            # `_unchanged`'s own test first: a call less for every request it would refuse
            if (
                outcome.action == "unchanged"
                and not outcome.findings
                and self._unchanged(flow, outcome)
            ):
                return
        except Exception:
            self._failed(flow, settings)
            return
        data = flow.request.data
        saved = (data.path, data.authority, data.headers.fields)
        try:
            self._apply(flow, outcome)
        except Exception:
            # Never drop or corrupt a request because of urlsan: restore what it was.
            data.path, data.authority, data.headers.fields = saved
            self._failed(flow, settings)
            return
        self._done_with(flow, outcome, asked)

    def _unchanged(self, flow: http.HTTPFlow, outcome: Outcome) -> bool:
        """Most requests, at their own cost: nothing to change, nothing found, so nothing to
        apply or record but their facts and their count.  False for any other outcome, which
        `_apply` and `_done_with` then apply (to the same effect on these)."""
        if outcome.action != "unchanged" or outcome.findings:
            return False
        flow.metadata["urlsan"] = outcome.facts
        self.actions["unchanged"] += 1
        return True

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

    def _done_with(self, flow: http.HTTPFlow, outcome: Outcome, asked: Request) -> None:
        """Count the outcome and write its audit record, of ``asked``: the request as it came,
        which the decision read."""
        self.actions[outcome.action] += 1
        rules = self.rules
        for rule in outcome.rules:  # not Counter.update: its Mapping test costs more than this
            rules[rule] += 1
        # outcome.recorded, without the property's frame (every decided request comes here)
        if self.log and (outcome.action != "unchanged" or outcome.findings):
            # Written once the response's status is known (`responseheaders`, `error`, `done`).
            pending = self._pending
            if len(pending) >= MAX_PENDING:
                self._write(*pending.pop(next(iter(pending))), None)
            pending[flow.id] = (flow, outcome, asked, audit_record.now())

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        """The status is known: write the record of the request (urlsan's own answers, 400,
        414 and 308, come here too)."""
        if self._pending:
            entry = self._pending.pop(flow.id, None)
            if entry is not None and flow.response is not None:
                _, outcome, asked, ts = entry  # not *entry: a call without a tuple and a dict
                self._write(flow, outcome, asked, ts, flow.response.status_code)

    def error(self, flow: http.HTTPFlow) -> None:
        """No response will come (the upstream failed, the client went away): the record is
        written without a status."""
        if self._pending:
            entry = self._pending.pop(flow.id, None)
            if entry is not None:
                self._write(*entry, flow.response.status_code if flow.response else None)

    def _flush(self) -> None:
        """Write every waiting record, without a status: the log closes or changes."""
        pending, self._pending = self._pending, {}
        for entry in pending.values():
            self._write(*entry, None)

    def _write(
        self, flow: http.HTTPFlow, outcome: Outcome, asked: Request, ts: str, status: int | None
    ) -> None:
        """Write the audit record of ``asked``, the request as it came, with the client's
        address and the response's ``status``."""
        log = self.log
        if log is None:
            return
        try:
            client = audit_record.address(flow.client_conn.peername)
            # asked._replace(client=client, status=status), without _replace's dict of fields
            answered = _new(Request, (asked[0], client, *asked[2:-1], status))
            record = decision.record(
                answered,
                outcome,
                self.settings.decision,
                ts,
                facts=flow.metadata["urlsan"],  # built once, for flow.metadata, capped as logged
                # the flow's host (a mitmproxy property) only stands in for a missing Host header
                host=None if outcome.host or asked.host else flow.request.host,
            )
            if not log.write(record):
                self.log_lost += 1
        except Exception as e:  # a bug, not the file: AuditLog.write handles OSError
            self.errors += 1
            logger.error(
                "urlsan: could not write to audit log %s: %s; requests are still served, "
                "but this one is missing from the log",
                log.path,
                e,
            )

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
            flow.response.reason = "Permanent Redirect"  # RFC 9110 §15.4.9; mitmproxy has none
            request.stream = False
        elif action == "rewritten":
            if outcome.target.changed:
                request.data.path = _wire(outcome.target)
            if outcome.host:
                request.host_header = outcome.host
            if outcome.authority:
                request.data.authority = outcome.authority.encode("ascii")
        if action != "unchanged" or outcome.findings:
            # mitmweb shows a flow's comment and mark, not its metadata: what an auditor looks
            # for (the target as it came, the findings) goes in the comment.
            note = _comment(outcome)
            flow.comment = f"{flow.comment}\n{note}" if flow.comment else note
            if not flow.marked and action != "unchanged":
                flow.marked = _MARKS.get(action, ":wrench:")
        flow.metadata["urlsan"] = outcome.facts

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
            f"urlsan: {total} request{'' if total == 1 else 's'} checked in "
            f"{self.settings.mode} mode: {actions}. "
            f"Rules that changed requests most often: {top}. Errors: {self.errors}.{lost}"
        )

    def done(self) -> None:
        if self._workers is not None:
            self._workers.shutdown(wait=False, cancel_futures=True)
            self._workers = None
        if self.log:
            self._flush()  # requests still waiting for a response: recorded without a status
            self.log.close()
            self.log = None
        logger.info(self.summary())


def known_options(options: Any) -> list[str]:
    """urlsan's option names among mitmproxy's ``options``."""
    names: Iterable[str] = options.keys()  # an OptManager: keys(), no iteration
    return [name for name in names if name.startswith(PREFIX)]


def _escape(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def _comment(outcome: Outcome) -> str:
    """The flow's comment: the action and the rules (or the rule that refused the target),
    the target as it came, and the findings."""
    action = outcome.action
    if action == "unchanged":
        head = "urlsan found, forwarded unchanged"
    elif outcome.rejected_by:
        head = f"urlsan {action}: {outcome.rejected_by}"
    elif outcome.rules:
        head = _note(action, outcome.rules)
    else:
        head = f"urlsan {action}: {', '.join(f.rule for f in outcome.findings)}"
    before = outcome.target.input
    cut = "…" if len(before) > _COMMENT_TARGET else ""
    # Raw bytes that are not UTF-8 as \udcXX, controls and bidi overrides as \xXX/\uXXXX:
    # shown, never acted on by the page.
    shown = before[:_COMMENT_TARGET]
    if not (shown.isascii() and shown.isprintable()):  # most targets: nothing to escape
        shown = shown.encode("utf-8", "backslashreplace").decode("utf-8")
        shown = _UNSHOWN.sub(_escape, shown)
    # The lines joined as one f-string: no list per request
    if outcome.findings:
        return f"{head}\noriginal target: {shown}{cut}\n{_findings_note(tuple(outcome.findings))}"
    return f"{head}\noriginal target: {shown}{cut}"


@functools.lru_cache(maxsize=256)
def _findings_note(findings: tuple[Finding, ...]) -> str:
    """The comment's line of findings; a proxy sees the same few again and again."""
    named = [f"{f.rule} ({f.component} at {f.offset})" for f in findings[:_COMMENT_FINDINGS]]
    if len(findings) > _COMMENT_FINDINGS:
        named.append(f"{len(findings) - _COMMENT_FINDINGS} more")
    return f"findings: {', '.join(named)}"


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


def _request(request: http.Request) -> Request:
    """The request as `urlsan.addon.decision` reads it, as it came (the client's address and
    the response's status are the record's to add).  ``host`` is its Host header (HTTP/2's
    :authority); ``authority`` an HTTP/1 absolute-form request's.  One pass over the headers,
    without the case-insensitive multidict lookups (hot path)."""
    data = request.data
    host = authority = authorization = None
    version = data.http_version
    if data.authority:
        if version in _HTTP2_OR_3:  # its :authority is its Host header
            host = request.authority
        else:
            authority = request.authority
    seen_host = host is not None
    for name, value in data.headers.fields:
        size = len(name)
        if size == 4 and not seen_host and name.lower() == b"host":
            host = value.decode("utf-8", "surrogateescape")  # the first Host header
            seen_host = True
        elif size == 13 and name.lower() == b"authorization":
            authorization = value.decode("latin-1")  # the last Authorization header
    # mitmproxy's Request.method, .scheme and .http_version, read without their properties;
    # tuple.__new__: a NamedTuple's own __new__ is a Python frame, on every request.
    return _new(
        Request,
        (
            None,
            "",
            data.method.decode("utf-8", "surrogateescape").upper(),
            data.scheme.decode("utf-8", "surrogateescape"),
            host,
            data.path,
            version.decode("utf-8", "surrogateescape"),
            "",
            authorization,
            authority,
            None,
        ),
    )


_HTTP2_OR_3 = (b"HTTP/2.0", b"HTTP/3")  # mitmproxy's Request.is_http2 and .is_http3
_new = tuple.__new__


def _plain(status: int, text: str) -> http.Response:
    # The reason may quote the client's bytes: escape them, never echo them raw.
    body = text.encode("ascii", "backslashreplace") + b"\n"
    return http.Response.make(status, body, {"Content-Type": "text/plain; charset=utf-8"})
