"""Every urlsan option, declared once: its name, type, default, help, the front ends that take it,
and what it sets.

The proxy's ``urlsan_*`` options (`UrlSanitizer.load`), the flags of ``urlsan audit`` and
``urlsan canon`` (`urlsan.cli.flags`), ``urlsan proxy --help`` and the options tables of the
documentation (`proxy_table`, `flags_table`) are all derived from `OPTIONS`.  Pure data: no
mitmproxy and no argparse here, so that the addon and the command line both read it.

A front end names an option its own way: the proxy ``urlsan_drop_params`` (mitmproxy's
convention, an addon's options prefixed with its name), the command line ``--drop-params``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from ..audit.redact import DEFAULT_REDACT
from ..core import backends
from ..core.options import OptionNames
from ..core.policy import PROFILES

PREFIX = "urlsan_"

# The values of the options that `urlsan.addon.decision` reads (and imports from here, so that the
# command line reads this table without importing the decision).
MODES: tuple[str, ...] = ("rewrite", "audit", "reject", "redirect")
SIGNED: tuple[str, ...] = ("skip", "rewrite")
MAX_INLINE = 8 * 1024  # bytes: what browsers and servers accept (see the addon's worker)
# Bytes: eight times the request line nginx (8 KiB) and Apache (8,190 bytes) accept by default,
# so real targets are canonicalized; a longer one is hostile or broken, and its canonical form
# (up to three times as long) would cost the event loop to forward.
MAX_TARGET = 64 * 1024

# The front ends: mitmproxy's options (so `urlsan proxy --set`, mitmdump -s, mitmweb's :set),
# and the flags of two subcommands.
PROXY = "proxy"
AUDIT = "audit"
CANON = "canon"
FRONTS = (PROXY, AUDIT, CANON)

# What an option's value is, which each front end reads its own way (`urlsan.cli.flags`,
# `UrlSanitizer.load`): TEXT a string, CHOICE one of `Option.choices`, COUNT a whole number
# (bytes), SPECS parameter specs ('[HOST:]NAME[,NAME...]', the commas inside one spec), NAMES
# names (comma-separated, in the proxy as on the command line), FILTER a mitmproxy filter
# expression or none.
TEXT, CHOICE, COUNT, SPECS, NAMES, FILTER = "text", "choice", "count", "specs", "names", "filter"

# The argument a flag of each kind takes, in --help and the docs (unless `Option.metavar` says).
_FLAG_ARGUMENTS = {
    TEXT: "VALUE",
    CHOICE: "NAME",
    COUNT: "BYTES",
    SPECS: "SPEC",
    NAMES: "NAMES",
    FILTER: "EXPR",
}

# What an option sets: the Policy (`urlsan.core.options.policy_from_options`), the decision's
# other settings (`urlsan.addon.decision.settings`), the audit record (redaction), which flows
# are decided at all, or the live proxy alone (where its log goes, what runs in a worker).
POLICY, DECISION, RECORD, FLOWS, LIVE = "policy", "decision", "record", "flows", "live"


class Option(NamedTuple):
    """One option, as every front end takes it."""

    name: str  # bare, snake_case: the proxy's is PREFIX + name, the flag --name-with-dashes
    kind: str  # TEXT, CHOICE, COUNT, SPECS, NAMES or FILTER
    default: Any  # immutable: a str, an int, a tuple or None
    help: str  # plain text: the proxy option's help, and the flag's unless `helps` says
    fronts: frozenset[str]  # of FRONTS
    sets: str  # POLICY, DECISION, RECORD, FLOWS or LIVE
    brief: str  # one line of markdown, for the README's table
    doc: str = ""  # markdown, for the proxy's page (default: help)
    choices: tuple[str, ...] = ()
    # The flag's argument (default: from the kind).  A CHOICE with a metavar is checked where
    # its value is read, not by argparse: --profile's error is the Policy's, which lists them.
    metavar: str = ""
    # Where a front end differs: its default, or its help (canon has no proxy behind it).
    defaults: tuple[tuple[str, Any], ...] = ()
    helps: tuple[tuple[str, str], ...] = ()

    @property
    def option(self) -> str:
        """The proxy's name: ``urlsan_drop_params``."""
        return PREFIX + self.name

    @property
    def flag(self) -> str:
        """The command line's name: ``--drop-params``."""
        return "--" + self.name.replace("_", "-")

    def default_for(self, front: str) -> Any:
        return dict(self.defaults).get(front, self.default)

    def help_for(self, front: str) -> str:
        return dict(self.helps).get(front, self.help)


_PARAM_SPEC = (
    "[HOST:]NAME[,NAME...], names shell-style patterns in any case ('utm_*,fbclid', "
    "'example.com:ref,src')"
)

OPTIONS: tuple[Option, ...] = (
    Option(
        "mode",
        CHOICE,
        "rewrite",
        "What urlsan does with a non-canonical request-target. rewrite: forward the canonical "
        "target. audit: forward it unchanged, log what would change. reject: answer 400 to a "
        "target that is not a valid RFC 3986 URI-reference, forward valid ones canonicalized. "
        "redirect: answer GET/HEAD with a 308 to the canonical target, rewrite the others.",
        frozenset({PROXY, AUDIT}),
        DECISION,
        "`rewrite`, `audit`, `reject` or `redirect` (308 to the canonical target)",
        doc="`rewrite`: forward the canonical target. `audit`: forward the target unchanged, "
        "log what would change. `reject`: answer `400 Bad Request` to a target that is not a "
        "valid RFC 3986 URI-reference — its fragment included, though a valid fragment is then "
        "stripped — with a plain-text reason naming the rule and offset; forward valid ones "
        "canonicalized. `redirect`: answer GET and HEAD with `308 Permanent Redirect` to the "
        "canonical target, rewrite the other methods.",
        choices=MODES,
        defaults=((AUDIT, "audit"),),
        helps=(
            (
                AUDIT,
                "record what the proxy would have done in this urlsan_mode: rewrite, audit "
                "(forward unchanged), reject (400 to an invalid target) or redirect (308)",
            ),
        ),
    ),
    Option(
        "log",
        TEXT,
        "",
        "Path of urlsan's JSON Lines audit log (appended to, created readable by its owner "
        "alone); empty: no log. urlsan proxy writes urlsan-audit.jsonl in the current "
        "directory unless this names another file or is set empty.",
        frozenset({PROXY}),
        LIVE,
        "the JSON Lines audit log, appended to; empty: none",
        doc="Path of the JSON Lines audit log, appended to; empty: none. An unwritable path "
        "stops start-up; a write failure later is logged once as an error and counted in "
        "`urlsan.stats`, and the proxy keeps serving (see "
        "[the audit log](audit-log.md#faults-while-running)).",
    ),
    Option(
        "profile",
        CHOICE,
        "rfc3986",
        "Canonicalization profile: rfc3986 (meaning-preserving), rfc2396, crawler, strict.",
        frozenset({PROXY, AUDIT, CANON}),
        POLICY,
        "the rules: a profile (`crawler` adds the lossy rules a crawler wants)",
        doc="`rfc3986` (meaning-preserving rules only), `rfc2396`, `crawler` (also lossy "
        "rules: sort query, drop tracking parameters, …), `strict` (repair nothing). See "
        "[Rules and profiles](rules.md).",
        choices=tuple(PROFILES),
        metavar="NAME",
    ),
    Option(
        "rules",
        TEXT,
        "",
        'Rules switched on or off on top of the profile, e.g. "+merge-slashes,'
        '-remove-dot-segments". strip-fragment is on unless switched off here.',
        frozenset({PROXY, AUDIT, CANON}),
        POLICY,
        "rules switched on or off on top of the profile (`+merge-slashes`)",
        doc="Rules switched on or off on top of the profile: "
        "`+merge-slashes,-remove-dot-segments`. The proxy switches `strip-fragment` on (a "
        "fragment is never sent to a server); `-strip-fragment` here turns it off.",
        metavar="SPEC",
        helps=(
            (
                CANON,
                "Rules switched on or off on top of the profile, e.g. "
                '"+merge-slashes,-remove-dot-segments".',
            ),
        ),
    ),
    Option(
        "drop_params",
        SPECS,
        (),
        f"Parameter specs for drop-params, added to the profile's: {_PARAM_SPEC}; query "
        "parameters and ;path parameters. Setting it switches drop-params on.",
        frozenset({PROXY, AUDIT, CANON}),
        POLICY,
        "query parameters to drop",
        doc="Parameter specs for `drop-params` (see [Parameters](rules.md#parameters)), added "
        "to the profile's: `--set urlsan_drop_params='example.com:ref,src'`. Setting it "
        "switches `drop-params` on.",
        metavar="SPEC",
    ),
    Option(
        "keep_params",
        SPECS,
        (),
        "An allowlist of query parameters, [HOST:]NAME[,NAME...]: on a host a spec covers, "
        "every parameter it does not name is dropped. Setting it switches drop-params on.",
        frozenset({PROXY, AUDIT, CANON}),
        POLICY,
        "query parameters to keep alone",
        doc="An allowlist of query parameters, in the same form (see "
        "[Parameters](rules.md#parameters)): on a host a spec covers, every parameter it does "
        "not name is dropped. Setting it switches `drop-params` on.",
        metavar="SPEC",
    ),
    Option(
        "filter",
        FILTER,
        None,
        'Only touch flows matching this mitmproxy filter expression, e.g. "!~d s3.amazonaws.com".',
        frozenset({PROXY, AUDIT}),
        FLOWS,
        "a mitmproxy filter expression: only matching flows are touched",
        doc="A mitmproxy filter expression; only matching flows are touched, e.g. "
        "`!~d s3.amazonaws.com`.",
        metavar="EXPR",
        helps=(
            (
                AUDIT,
                "only audit the flows matching this mitmproxy filter expression, as the "
                'proxy\'s urlsan_filter does ("!~d s3.amazonaws.com"); flow files only, '
                "matched on the request as the proxy saw it",
            ),
        ),
    ),
    Option(
        "redact",
        NAMES,
        DEFAULT_REDACT,
        "Query parameter names (any case, comma-separated) whose values are masked in the "
        "audit log. "
        "Setting it replaces the default list. Userinfo passwords are always masked.",
        frozenset({PROXY, AUDIT}),
        RECORD,
        "query parameters whose values the log masks",
        doc="Query parameter names (any case, compared after %-decoding; comma-separated) whose "
        "values are "
        "written as `***` in the audit log. Setting the option replaces the list. Userinfo "
        "passwords are always masked.",
    ),
    Option(
        "signed",
        CHOICE,
        "skip",
        "skip: only audit requests whose URL or Authorization header carries a signature "
        "(S3/GCS presigned URLs, CloudFront, Azure SAS, AWS SigV4), since any byte change "
        "breaks it. rewrite: treat them like any other request.",
        frozenset({PROXY, AUDIT}),
        DECISION,
        "signed URLs (S3, GCS, CloudFront, Azure SAS) are only audited",
        doc="`skip`: a request whose signature covers its URL is only audited (action "
        "`skipped-signed`), since any byte change breaks the signature. `rewrite`: treat it "
        "like any other request.",
        choices=SIGNED,
    ),
    Option(
        "max_inline",
        COUNT,
        MAX_INLINE,
        "Request-targets up to this many bytes are canonicalized on mitmproxy's event loop; "
        "longer ones in a worker process, while other requests are served.",
        frozenset({PROXY}),
        LIVE,
        "longer targets go to a worker process",
        doc="Request-targets up to this many bytes are canonicalized inline, on mitmproxy's "
        "event loop (a few microseconds). Longer ones are canonicalized in a worker process "
        "while the other requests are served (see [Long targets](#long-targets)). `0` sends "
        "every target to the worker.",
    ),
    Option(
        "max_target",
        COUNT,
        MAX_TARGET,
        "Request-targets longer than this many bytes are not canonicalized. audit forwards "
        "them unchanged (action skipped-oversize); rewrite and redirect too, unless they hold "
        "bytes never forwarded (controls, spaces, non-ASCII): 414 URI Too Long; reject "
        "answers 414.",
        frozenset({PROXY, AUDIT}),
        DECISION,
        "longer targets are not canonicalized",
        doc="Request-targets longer than this many bytes are not canonicalized. `reject` "
        "answers `414 URI Too Long`. `rewrite` and `redirect` forward a target made of visible "
        "ASCII unchanged (action `skipped-oversize`) and answer `414` to one holding bytes that "
        "are never forwarded (controls, spaces, raw non-ASCII). `audit` forwards it unchanged "
        "(`skipped-oversize`). Must not be less than `urlsan_max_inline`.",
        metavar="BYTES",
    ),
    Option(
        "backends",
        NAMES,
        (),
        f"The servers behind the proxy to protect: {', '.join(backends.MEASURED)} "
        f"({', '.join(n for n in backends.NAMES if n not in backends.MEASURED)} from their "
        "documentation), or custom:TRAIT,TRAIT,... (urlsan probe URL finds which); NAME@HOST "
        "protects requests to that host only. A request one of "
        "them would route on another path than RFC 3986 reads (the reading urlsan's record "
        "and the proxy's filters see) is answered 400 in rewrite, reject and redirect "
        "modes, and recorded with the server's reading in audit mode.",
        frozenset({PROXY, AUDIT, CANON}),
        DECISION,
        "servers behind the proxy to protect: "
        + ", ".join(f"`{name}`" for name in backends.MEASURED),
        doc="The servers behind the proxy to protect (see [Backends](backends.md)): "
        + ", ".join(f"`{name}`" for name in backends.NAMES)
        + ", or `custom:TRAIT,...`; `NAME@HOST` protects requests to that host only. "
        "A request one of them would route on another path than RFC 3986 reads is "
        "answered `400` in `rewrite`, `reject` and `redirect` modes, and recorded with the "
        "server's reading in `audit` mode.",
        choices=backends.NAMES,
        helps=(
            (
                CANON,
                "servers behind a proxy: a URL one of them would route otherwise than "
                "RFC 3986 reads its canonical form gets a backend-divergence finding, and is "
                "an offender for --check",
            ),
        ),
    ),
)

BY_NAME: Mapping[str, Option] = MappingProxyType({o.name: o for o in OPTIONS})


def taken_by(front: str) -> tuple[Option, ...]:
    """The options ``front`` (one of `FRONTS`) takes, in the table's order."""
    return tuple(o for o in OPTIONS if front in o.fronts)


def flag_argument(option: Option) -> str:
    """The argument of ``option``'s flag, as --help shows it: ``--drop-params SPEC``."""
    if option.kind == CHOICE and not option.metavar:
        return "|".join(option.choices)
    return option.metavar or _FLAG_ARGUMENTS[option.kind]


def option_names(front: str) -> OptionNames:
    """What ``front`` calls the policy's options, for `urlsan.core.options`' messages."""
    options = [BY_NAME[n] for n in ("profile", "rules", "drop_params", "keep_params")]
    profile, rules, drop, keep = (o.option if front == PROXY else o.flag for o in options)
    return OptionNames(profile, rules, drop, keep)


def shown_default(value: Any) -> str:
    """A default as a person reads it: ``(none)`` for nothing, a list comma-separated."""
    if value is None or value == "" or value == ():
        return "(none)"
    if isinstance(value, tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _markdown_default(value: Any, brief: bool) -> str:
    if value is None or value == "" or value == ():
        return "*(none)*"
    if isinstance(value, tuple):
        shown = [f"`{v}`" for v in value]
        return ", ".join([*shown[:3], "…"] if brief and len(shown) > 4 else shown)
    return f"`{value}`"


def proxy_table(brief: bool = False, defaults: Iterable[tuple[str, str]] = ()) -> str:
    """The proxy's options as a markdown table: the docs' (``brief``: the README's, one short
    line each).  ``defaults``: cells of the Default column that say more than the table's
    default (``urlsan proxy`` sets urlsan_log)."""
    special = dict(defaults)
    lines = ["| Option | Default | Meaning |", "|---|---|---|"]
    for o in taken_by(PROXY):
        default = special.get(o.name) or _markdown_default(o.default, brief)
        meaning = o.brief if brief else (o.doc or o.help)
        lines.append(f"| `{o.option}` | {default} | {_cell(meaning)} |")
    return "\n".join(lines) + "\n"


def flags_table(front: str) -> str:
    """The flags of ``urlsan FRONT`` that are the proxy's options, as a markdown table."""
    lines = ["| Flag | Default | As the proxy's |", "|---|---|---|"]
    for o in taken_by(front):
        argument = flag_argument(o).replace("|", "\\|")
        default = _markdown_default(o.default_for(front), brief=True)
        lines.append(f"| `{o.flag} {argument}` | {default} | `{o.option}` |")
    return "\n".join(lines) + "\n"
