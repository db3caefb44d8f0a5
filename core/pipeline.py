"""The rules, and the order they run in, as data: each rule declared once, here.

A rule's entry in `RULES` says everything about it that is not code: its name, the RFC section
that licenses it, whether it keeps meaning (on in the default profile) or is lossy (opt-in),
what it does (the line ``urlsan rules`` prints, and its row in the rules table of
docs/rules.md, written by tools/doc_tables.py), its examples, whether the crawler profile
switches it on, whether it is a repair that cannot be switched off, and how the compiled twin
treats it.  Its component and the step it belongs to are its place in `PIPELINE`, the one
statement of the order: the components in output order, and within each its steps.

Derived from them: the driver's walk (`driver.py`, whose handler tables are checked against
`PIPELINE` on import), the profiles and the rules the twin leaves to the driver (`policy.py`),
and the check of the twin's switches, `_speedups.FLAGS`, when it is loaded
(`twin_disagreements`).

Character rules run as one pass over a component (`CHARACTERS`), so that each escape is decoded
at most once ("%2541" stays "%2541"); in the path that pass also decodes or refuses escaped
slashes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import NamedTuple

# How the compiled twin (core/_speedups.c) treats a rule, as its FLAGS say (rule → bit):
TWIN_SWITCH = "switch"  # a bit of its own: the twin applies the rule when it is on
TWIN_DECLINES = "declines"  # a bit shared by several: the twin declines what they may touch
TWIN_AFTER = "after"  # no bit: the driver runs it on the twin's result (the query rules)
# No bit, nor need of one: a repair the twin always makes, or a rule whose targets it declines
# whatever the policy (a non-ASCII host, a relative reference).
TWIN_NONE = "none"
TWIN_KINDS = (TWIN_SWITCH, TWIN_DECLINES, TWIN_AFTER, TWIN_NONE)


class Example(NamedTuple):
    """A target and what the rule makes of it, under the default profile with the rule on."""

    target: str
    canonical: str | None  # None: the rule refuses the target (`InvalidTarget`)


class Rule(NamedTuple):
    name: str
    section: str  # the RFC section that licenses it
    lossy: bool  # True: may change what the origin server sees (opt-in); False: keeps meaning
    summary: str  # what it does, in Markdown (`plain` without its code marks)
    examples: tuple[Example, ...] = ()
    crawler: bool = False  # a lossy rule the crawler profile switches on
    required: bool = False  # a repair without which the output is no valid URI-reference
    twin: str = TWIN_NONE  # how the compiled twin treats it (TWIN_KINDS)

    @property
    def plain(self) -> str:
        """`summary` as ``urlsan rules`` prints it: without its Markdown code marks."""
        return self.summary.replace("`", "")


class Step(NamedTuple):
    """One step of the driver: ``rules`` applied to ``component``; ``when`` narrows it."""

    component: str
    name: str  # the rule, or CHARACTERS
    rules: tuple[str, ...]
    when: str = ""


CHARACTERS = "characters"
CHARACTER_RULES = (
    "decode-unreserved",
    "uppercase-escape",
    "encode-stray-percent",
    "encode-unsafe",
    "encode-non-ascii",
)


def _rule(component: str, name: str, when: str = "") -> Step:
    return Step(component, name, (name,), when)


def _characters(component: str, *extra: str) -> Step:
    return Step(component, CHARACTERS, CHARACTER_RULES + extra)


PIPELINE: tuple[Step, ...] = (
    _rule("scheme", "lowercase-scheme"),
    _characters("userinfo"),
    _rule("host", "idna-host"),
    # Before the character rules, so that its edits are the input's own characters; the host's
    # character pass then decodes "%41" straight to "a".
    _rule("host", "lowercase-host"),
    _characters("host"),
    _rule("host", "strip-host-dot"),
    _rule("host", "numeric-host"),
    _rule("port", "drop-empty-port"),
    _rule("port", "strip-port-zeros"),
    _rule("port", "drop-default-port"),
    _rule("path", "backslash-as-slash"),
    _characters("path", "decode-escaped-slash", "reject-escaped-slash"),
    # Path parameters (";jsessionid=…") before dot segments: "..;jsessionid=1" is then "..".
    _rule("path", "drop-params", "path parameters"),
    _rule("path", "merge-slashes"),
    # RFC 9112 §3.2.1: origin-form is an absolute-path, "" is sent as "/"; before the dot
    # segments, so that "." is resolved as the "/." it is sent as.
    _rule("path", "empty-path", "origin-form"),
    _rule("path", "remove-dot-segments"),
    _rule("path", "empty-path", "with an authority"),
    _rule("path", "dot-prefix"),
    _characters("query"),
    _rule("query", "drop-params", "query parameters"),
    _rule("query", "sort-query"),
    _rule("query", "drop-empty-query"),
    _rule("fragment", "strip-fragment"),
    _characters("fragment"),
)

COMPONENTS: tuple[str, ...] = tuple(dict.fromkeys(step.component for step in PIPELINE))


def _examples(*pairs: tuple[str, str | None]) -> tuple[Example, ...]:
    return tuple(Example(*pair) for pair in pairs)


# Every rule once, in the order it first runs (`PIPELINE`'s, which the check below holds).
RULES: tuple[Rule, ...] = (
    Rule(
        "lowercase-scheme",
        "RFC 3986 §3.1, §6.2.2.1",
        lossy=False,
        summary="`HTTP` → `http`",
        examples=_examples(("HTTP://example.com/", "http://example.com/")),
        twin=TWIN_SWITCH,
    ),
    Rule(
        "decode-unreserved",
        "RFC 3986 §2.3, §6.2.2.2",
        lossy=False,
        summary="`%7e` → `~`, `%41` → `A`",
        examples=_examples(("/%7euser/%41", "/~user/A"), ("/%2541", "/%2541")),
        twin=TWIN_SWITCH,
    ),
    Rule(
        "uppercase-escape",
        "RFC 3986 §2.1, §6.2.2.1",
        lossy=False,
        summary="`%2f` → `%2F`",
        examples=_examples(("/a%2fb", "/a%2Fb")),
        twin=TWIN_SWITCH,
    ),
    Rule(
        "encode-stray-percent",
        "RFC 3986 §2.4",
        lossy=False,
        summary="a `%` that starts no escape → `%25`",
        examples=_examples(("/a%zz", "/a%25zz"), ("/100%", "/100%25")),
        required=True,
    ),
    Rule(
        "encode-unsafe",
        "RFC 3986 §2, Appendix A; RFC 2396 §2.4.3",
        lossy=False,
        summary='controls, space, `"<>`, `{}`, `|`, `\\^`, backtick, `[]` and any delimiter not '
        "allowed in the component → `%XX`",
        examples=_examples(("/a b<c>", "/a%20b%3Cc%3E"), ("/{x}|y", "/%7Bx%7D%7Cy")),
        required=True,
    ),
    Rule(
        "encode-non-ascii",
        "RFC 3986 §2.5, RFC 3987 §3.1",
        lossy=False,
        summary="non-ASCII → its UTF-8 bytes (a raw byte as itself), percent-encoded",
        examples=_examples(("/café", "/caf%C3%A9")),
        required=True,
    ),
    Rule(
        "idna-host",
        "RFC 3986 §3.2.2, UTS 46",
        lossy=False,
        summary="non-ASCII host → IDNA A-label",
        examples=_examples(("http://bücher.example/", "http://xn--bcher-kva.example/")),
    ),
    Rule(
        "lowercase-host",
        "RFC 3986 §3.2.2, §6.2.2.1",
        lossy=False,
        summary="`Example.COM` → `example.com`",
        examples=_examples(("http://Example.COM/", "http://example.com/")),
        twin=TWIN_SWITCH,
    ),
    Rule(
        "strip-host-dot",
        "RFC 1034 §3.1",
        lossy=True,
        summary="`example.com.` → `example.com`",
        examples=_examples(("http://example.com./", "http://example.com/")),
        crawler=True,
        twin=TWIN_SWITCH,
    ),
    Rule(
        "numeric-host",
        "WHATWG URL §4.4 (IPv4 parser)",
        lossy=True,
        summary="`0x7f.1`, `0177.0.0.1`, `2130706433` → `127.0.0.1`",
        examples=_examples(
            ("http://0x7f.1/", "http://127.0.0.1/"), ("http://2130706433/", "http://127.0.0.1/")
        ),
        crawler=True,
        twin=TWIN_SWITCH,
    ),
    Rule(
        "drop-empty-port",
        "RFC 3986 §3.2.3, §6.2.3",
        lossy=False,
        summary="`host:` → `host`",
        examples=_examples(("http://example.com:/", "http://example.com/")),
        twin=TWIN_SWITCH,
    ),
    Rule(
        "strip-port-zeros",
        "RFC 3986 §3.2.3, §6.2.3",
        lossy=False,
        summary="`:0080` → `:80`",
        examples=_examples(("http://example.com:08080/", "http://example.com:8080/")),
        twin=TWIN_SWITCH,
    ),
    Rule(
        "drop-default-port",
        "RFC 3986 §6.2.3",
        lossy=False,
        summary="`http://h:80/` → `http://h/` (80 for http/ws, 443 for https/wss)",
        examples=_examples(("http://h:80/", "http://h/"), ("wss://h:443/a", "wss://h/a")),
        twin=TWIN_SWITCH,
    ),
    Rule(
        "backslash-as-slash",
        "WHATWG URL §4.4 (special schemes)",
        lossy=True,
        summary="`\\` → `/` in the path",
        examples=_examples(("/a\\b", "/a/b")),
        twin=TWIN_DECLINES,
    ),
    Rule(
        "decode-escaped-slash",
        "RFC 3986 §2.2",
        lossy=True,
        summary="`%2F` → `/` in the path (`%5C` too with `backslash-as-slash`)",
        examples=_examples(("/a%2Fb", "/a/b")),
        twin=TWIN_DECLINES,
    ),
    Rule(
        "reject-escaped-slash",
        "RFC 3986 §2.2",
        lossy=True,
        summary="`%2F`, `%5C` or a raw `\\` in the path raises `InvalidTarget`",
        examples=_examples(("/a%2Fb", None), ("/a\\b", None)),
        twin=TWIN_DECLINES,
    ),
    Rule(
        "drop-params",
        "(none: tracking parameters, session IDs)",
        lossy=True,
        summary="drop query parameters (and `;name=value` path parameters) that the policy's "
        "parameter specs name: by default `utm_*`, `fbclid`, `gclid`, `PHPSESSID`, `jsessionid`, "
        "`sid`, … (`urlsan.core.params.DEFAULT_PARAMS`)",
        examples=_examples(("/a?utm_source=x&id=1", "/a?id=1"), ("/a;jsessionid=F00/b", "/a/b")),
        crawler=True,
        twin=TWIN_AFTER,
    ),
    Rule(
        "merge-slashes",
        "(none: nginx's `merge_slashes`)",
        lossy=True,
        summary="`//a///b` → `/a/b`",
        examples=_examples(("/x//a///b", "/x/a/b")),
        twin=TWIN_SWITCH,
    ),
    Rule(
        "empty-path",
        "RFC 3986 §6.2.3; RFC 9112 §3.2.1",
        lossy=False,
        summary="`http://h` → `http://h/`; an origin-form target gains its leading `/`",
        examples=_examples(("http://h", "http://h/"), ("http://h?q", "http://h/?q")),
        twin=TWIN_SWITCH,
    ),
    Rule(
        "remove-dot-segments",
        "RFC 3986 §5.2.4, §6.2.2.3",
        lossy=False,
        summary="`/a/./b/../c` → `/a/c`; `..` above the root is dropped and reported",
        examples=_examples(("/a/./b/../c", "/a/c"), ("/../a", "/a"), ("/a/%2e%2E/b", "/b")),
        twin=TWIN_SWITCH,
    ),
    Rule(
        "dot-prefix",
        "RFC 3986 §4.2, §5.2.4",
        lossy=False,
        summary="a relative path whose first segment has `:` gains `./`; a path `//a` without "
        "authority gains `/.`",
        examples=_examples(("b/../a:c", "./a:c")),
        required=True,
    ),
    Rule(
        "sort-query",
        "(none)",
        lossy=True,
        summary="sort query parameters by name, stably",
        examples=_examples(("/?b=2&a=1&b=1", "/?a=1&b=2&b=1")),
        crawler=True,
        twin=TWIN_AFTER,
    ),
    Rule(
        "drop-empty-query",
        "RFC 3986 §6.2.3 (not equivalent in general)",
        lossy=True,
        summary="`/a?` → `/a`",
        examples=_examples(("/a?", "/a")),
        crawler=True,
        twin=TWIN_AFTER,
    ),
    Rule(
        "strip-fragment",
        "RFC 3986 §3.5, RFC 9110 §7.1",
        lossy=True,
        summary="drop the fragment: it is never sent to a server (the proxy always strips it)",
        examples=_examples(("/a#top", "/a")),
        crawler=True,
        twin=TWIN_SWITCH,
    ),
)

if [r.name for r in RULES] != list(dict.fromkeys(r for step in PIPELINE for r in step.rules)):
    # a rule without a step, a step without a rule, or an entry out of the order they first run
    raise AssertionError("pipeline.PIPELINE and the rule declarations name different rules")


def twin_disagreements(flags: Mapping[str, int]) -> list[str]:
    """Where the compiled twin's switches (`_speedups.FLAGS`: rule → bit, 0 for none) disagree
    with the declared `Rule.twin`, one line each; empty when they agree.  A bit of its own is a
    switch; one several rules share makes the twin decline; no bit is either of the others."""
    declared = {rule.name: rule.twin for rule in RULES}
    wrong = [f"{name}: not a declared rule" for name in sorted(flags.keys() - declared.keys())]
    wrong += [f"{name}: missing from the twin" for name in sorted(declared.keys() - flags.keys())]
    rules_of = Counter(bit for bit in flags.values() if bit)
    for name, kind in declared.items():
        bit = flags.get(name)
        if bit is None:
            continue
        if not bit:
            seen: tuple[str, ...] = (TWIN_AFTER, TWIN_NONE)
        else:
            seen = (TWIN_DECLINES,) if rules_of[bit] > 1 else (TWIN_SWITCH,)
        if kind not in seen:
            wrong.append(f"{name}: declared {kind!r}, the twin's switch is {bit}")
    return wrong
