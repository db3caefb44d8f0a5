"""The reference driver: split first, then walk the rule pipeline component by component.

The order is `pipeline.PIPELINE`'s (README, Rules): this module maps each of its steps to the
small function below that carries it out, and runs the steps of the rules a policy has on.
It is pure Python and knows nothing of the accelerators: `canonical.py` chooses, per target,
between the compiled twin, the fast path and this driver, and holds the other two to it
(`canonicalize_python`).  It also runs the query rules on a Result of the compiled twin, which
leaves them out (`query_rules_after`).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any, NamedTuple

from . import findings as detect
from . import query, rules
from .charsets import IPV4_ADDRESS, LDH_LOWER_HOST
from .pipeline import CHARACTERS, COMPONENTS, PIPELINE, Step
from .policy import DEFAULT_POLICY, DEFAULT_PORTS, PROFILES, Policy
from .result import InvalidTarget, Result
from .split import FORMS, Split, spans, split, split_authority

_COMPONENTS = ("userinfo", "host", "path", "query", "fragment")
_new = tuple.__new__


def canonicalize_python(
    target: str | bytes,
    policy: Policy | str = DEFAULT_POLICY,
    *,
    form: str = "auto",
    host: str | None = None,
) -> Result:
    """`canonicalize` without the compiled twin and the fast path: the reference they match."""
    return reference(text_of(target), policy_of(policy), form, host)


def canonicalize_authority(
    authority: str | bytes, policy: Policy | str = DEFAULT_POLICY, *, scheme: str | None = None
) -> Result:
    """The canonical form of an authority alone: a Host header, an HTTP/2 ``:authority`` or a
    CONNECT target (``[userinfo@]host[:port]``, RFC 9110 §7.2, RFC 3986 §3.2).

    Offsets in the `Result` point into ``authority``.  With a ``scheme`` its default port is
    dropped (``example.com:80`` for http); an empty port (``host:``) always is.  All of the text
    is the authority: a "/", "?" or "#" in it is escaped in the host, never split off.
    """
    text = text_of(authority)
    userinfo, host, port = split_authority(text, 0)
    absent = (None, 0)
    parts = ("authority-only", scheme, 0, *userinfo, *host, *port, *absent, *absent, *absent)
    return _Canonicalizer(policy_of(policy), text).run(parts)


def text_of(target: object) -> str:
    """A target as text: bytes (as a proxy holds them) decoded as UTF-8, a byte that is no
    UTF-8 as a lone surrogate (surrogateescape), so that offsets count characters."""
    if isinstance(target, str):
        return target
    if isinstance(target, bytes | bytearray | memoryview):
        return bytes(target).decode("utf-8", "surrogateescape")
    raise TypeError(f"a target is str or bytes, not {type(target).__name__}")


def policy_of(policy: object) -> Policy:
    """A `Policy`, or the named profile's."""
    if isinstance(policy, Policy):
        return policy
    if isinstance(policy, str):
        if policy not in PROFILES:
            raise ValueError(f"unknown profile {policy!r}; choose one of {', '.join(PROFILES)}")
        return _profile(policy)
    raise TypeError(f"policy is a Policy or a profile name, not {type(policy).__name__}")


@lru_cache(maxsize=8)
def _profile(name: str) -> Policy:
    return Policy.profile(name)


def reference(target: str, policy: Policy, form: str, host: str | None = None) -> Result:
    """`canonicalize_python` of a str target under a `Policy`."""
    if form not in FORMS:
        raise ValueError(f"unknown form {form!r}; choose one of {', '.join(FORMS)}")
    return _Canonicalizer(policy, target, host).run(spans(target, form))


def query_rules_after(result: Result, policy: Policy, sent_to: str | None) -> Result | None:
    """The query's parameter steps on a Result of the compiled twin, which leaves them out;
    None when the reference must run instead (path parameters to drop: they go before dot
    removal, so that "..;jsessionid=1" is the ".." Tomcat reads it as).

    The twin handles targets whose first "?" before any "#" starts the query, in the input and
    in the output alike (a raw "?" in the path is escaped, and the authority has none).
    """
    url, target = result.url, result.input
    if url[:1] == "/":
        host = sent_to
    elif _plan_of(policy).by_host:  # splitting the URL costs 1.6 µs: only where a spec asks
        host = split(url, "absolute").host[0]
    else:
        host = None
    if ";" in _before_query(target) and policy.param_tests(host).path is not None:
        return None
    qmark, hash_ = url.find("?"), url.find("#")
    if qmark < 0 or 0 <= hash_ < qmark:
        return result
    end = hash_ if hash_ >= 0 else len(url)
    start = target.index("?") + 1
    c = _Canonicalizer(policy, target)
    c.raw, c.start = target[start:].partition("#")[0], start
    c.host = host
    # The steps after the characters step, which the twin ran.
    text = c.walk(c.steps["query"][1:], url[qmark + 1 : end])
    if not c.starts:  # each step records an edit exactly when it changes the query
        return result
    url = url[:qmark] + ("" if text is None else "?" + text) + url[end:]
    return Result(target, url, query.merged(result.edits, c.freeze()), result.findings)


def _before_query(target: str) -> str:
    """The target up to its query or fragment: where path parameters may be (a ";" after it is
    the query's, which drop-params reads as part of a parameter's value)."""
    return target.partition("?")[0].partition("#")[0]


def query_rules_url(url: str, policy: Policy, host: str | None) -> tuple[str, tuple[str, ...]]:
    """`query_rules_after` for a caller that keeps no `Result` (the Arrow column loop,
    core/_columns.c, through `canonical.ascii_twin`): the query rules on the twin's canonical
    ``url``, giving the URL and the rules that rewrote it, each once, in the order they ran,
    with no edit made.  ``host``: the URL's host as written, None for origin-form.  The caller
    leaves a target with a ";" before its query to `canonicalize` (path parameters, which
    `query_rules_after` leaves to the reference)."""
    hash_ = url.find("#")
    end = hash_ if hash_ >= 0 else len(url)
    qmark = url.find("?", 0, end)
    if qmark < 0:
        return url, ()
    c = _QueryRules(policy, host, qmark + 1, url[qmark + 1 : end])
    # The steps after the characters step, as above.
    text = _walk(c, _plan_of(policy).steps["query"][1:], c.raw)
    if not c.fired:  # each step records exactly when it changes the query
        return url, ()
    url = url[:qmark] + ("" if text is None else "?" + text) + url[end:]
    return url, tuple(dict.fromkeys(c.fired))


class _QueryRules:
    """What the query's steps read of a `_Canonicalizer` (``policy``, ``host``, ``start``,
    ``raw``), and a `query.Recorder` that keeps each rule's name alone: `query_rules_url`'s."""

    __slots__ = ("fired", "host", "policy", "raw", "start")

    def __init__(self, policy: Policy, host: str | None, start: int, raw: str) -> None:
        self.policy, self.host, self.start, self.raw = policy, host, start, raw
        self.fired: list[str] = []

    def whole(
        self, rule: str, component: str, start: int, end: int, before: str, after: str
    ) -> None:
        self.fired.append(rule)


@lru_cache(maxsize=16)
def _scanners(
    unreserved_2396: bool, slash: str, lower_host: bool, decode: bool, upper: bool
) -> dict[str, rules.Scanner]:
    return {
        c: rules.scanner(
            c,
            unreserved_2396,
            slash if c == "path" else "keep",
            lower_host and c == "host",
            decode,
            upper,
        )
        for c in _COMPONENTS
    }


# A step as the driver runs it: a search that finds what it may change (None: it always runs),
# and its handler; or `_character_pass` and the component's `Scanner.scan`, called with no
# handler between (`_steps`).
_Step = tuple["Callable[[str], object] | None", Callable[..., Any]]


def _character_pass(text: str) -> bool:
    """A marker, never called: a character step's handler in `_HANDLERS`, and in a step's place
    of its search, that the step is the component's `Scanner.scan` (`_step`)."""
    raise AssertionError(text)


class _Plan(NamedTuple):
    """What every canonicalization under one policy shares, derived once per policy."""

    on: Callable[[str], bool]
    scan: dict[str, rules.Scanner]
    steps: dict[str, tuple[_Step, ...]]
    # Per component, a fullmatch of texts that none of its steps changes or reports on: they
    # skip the walk.  Conservative: a text it refuses walks the steps, which decide.
    quiet: dict[str, Callable[[str], object]]
    # Whether a parameter spec is scoped by host: else drop-params drops the same on every host,
    # and the query rules after the twin need not split its URL to find the host.
    by_host: bool


@lru_cache(maxsize=64)
def _plan(policy: Policy) -> _Plan:
    on = policy.rules.__contains__
    if on("reject-escaped-slash"):
        slash = "reject"
    elif on("decode-escaped-slash"):
        slash = "decode-all" if on("backslash-as-slash") else "decode"
    else:
        slash = "keep"
    scan = _scanners(
        policy.unreserved_2396,
        slash,
        on("lowercase-host"),
        on("decode-unreserved"),
        on("uppercase-escape"),
    )
    names = _step_names(policy.rules)
    quiet: dict[str, Callable[[str], object]] = {
        c: scan[c].clean if names[c] == (CHARACTERS,) else _never for c in _COMPONENTS
    }
    # A DNS name whose last label starts with a letter: the host steps only lowercase it (no
    # IDNA, no character to escape, no dot to strip, not numeric); lowercase, they leave it.
    # So they leave a dotted-decimal IPv4 address, which numeric-host would write as it is.
    quiet["host"] = _QUIET_HOST
    steps = _steps(policy.rules, scan)
    # An absolute path of segments that no rule touches: none empty ("//": merge-slashes, the
    # dot-prefix guard), none starting with "." (dot segments), no ";" when drop-params is on.
    # Only where the path's character pass is not its first step: else `path_part` runs that
    # pass alone on such a path, and this fullmatch is never asked.
    if steps["path"][0][0] is not _character_pass:
        segment = scan["path"].unit(without="/;" if on("drop-params") else "/")
        quiet["path"] = re.compile(f"(?:/(?![./])(?:{segment})*+)++").fullmatch
    # A path after an authority is absolute or empty (RFC 3986 §3.3) and no origin-form one:
    # the origin-form slash and the dot prefix have nothing to do there, so it skips them.
    steps[_AUTHORITY_PATH] = tuple(s for s in steps["path"] if s[1] not in _NOT_AFTER_AUTHORITY)
    by_host = on("drop-params") and policy.params_by_host
    return _Plan(on, scan, steps, quiet, by_host)


def _never(text: str) -> None:
    return None


_QUIET_HOST = re.compile(f"{LDH_LOWER_HOST.replace('a-z', 'A-Za-z')}|{IPV4_ADDRESS}").fullmatch
# Most calls reuse one policy: its plan without hashing it (`_Canonicalizer` reads it inline).
_last_plan: tuple[Policy, _Plan] | None = None
_edits = rules.Edits.__init__  # a global: quicker to call than through the module and class


def _plan_of(policy: Policy) -> _Plan:
    global _last_plan
    last = _last_plan
    if last is not None and last[0] is policy:
        return last[1]
    plan = _plan(policy)
    _last_plan = (policy, plan)
    return plan


def _walk(c: _Canonicalizer | _QueryRules, steps: tuple[_Step, ...], text: str) -> str | None:
    """Run a component's steps in pipeline order; None: the component is dropped.  A method of
    `_Canonicalizer`, and `query_rules_url`'s walk with its `_QueryRules`."""
    for needs, handler in steps:
        if needs is _character_pass:  # `Scanner.scan`, which never drops the component
            text = handler(text, c.start, c)
        elif needs is None or needs(text):
            out = handler(c, text)
            if out is None:
                return None
            text = out
    return text


class _Canonicalizer(rules.Edits):
    """One canonicalization: the policy's steps, and the edits and findings recorded.  It is
    the `rules.Edits` its steps record to: one object to build per target, not two."""

    __slots__ = (
        "dots",
        "findings",
        "form",
        "has_authority",
        "host",
        "on",
        "policy",
        "quiet",
        "raw",
        "relative",
        "scan",
        "scheme",
        "start",
        "steps",
    )

    def __init__(self, policy: Policy, target: str, sent_to: str | None = None) -> None:
        self.policy = policy
        _edits(self, policy.strict, target)  # ``text``: the target
        self.findings: detect.Findings = {}
        last = _last_plan
        plan = last[1] if last is not None and last[0] is policy else _plan_of(policy)
        self.on, self.scan, self.steps, self.quiet, _ = plan
        # What the steps ask of the target: ``form`` and ``scheme`` set by `run` before any step
        # runs; ``host`` the Host an origin-form target was sent to, until `run` puts the host
        # as canonicalized in its place (for drop-params' host scopes; params.py lowercases).
        self.form: str
        self.scheme: str | None
        self.host = sent_to
        self.has_authority = False
        # The component on its way through its steps: ``raw`` as it was in the input, at
        # ``start``, set by each ``*_part`` as the component enters its steps (assigned there,
        # not through a method: a Python call costs the pure driver about 450 instructions);
        # the path's ``relative`` (a relative-path reference) and ``dots`` (remove-dot-segments
        # rewrote it) by `path_part`.

    walk = _walk  # one component's steps (a method: ``self.walk(steps, text)``)

    def structural(self, rule: str, component: str, before: str, after: str) -> None:
        """Record a rule that rewrote the whole component."""
        self.whole(rule, component, self.start, self.start + len(self.raw), before, after)

    def run(self, parts: Split) -> Result:
        # Unpacked at once: a plain tuple's fields are the quickest to read (`split.spans`).
        (
            form,
            scheme,
            scheme_at,
            userinfo,
            userinfo_at,
            host,
            host_at,
            port,
            port_at,
            path,
            path_at,
            query_,
            query_at,
            fragment,
            fragment_at,
        ) = parts
        self.form = form
        if form == "asterisk":
            return Result(self.text, self.text)
        authority_only = form == "authority-only"
        # The scheme split found starts with a letter (§3.1): lowercase when nothing is upper
        # (which is why lowercase-scheme has no search of its own in _NEEDS), as most are.
        if not (authority_only or scheme is None or scheme.islower()) and self.steps["scheme"]:
            # Its one step (_lowercase_scheme), without a walk.
            scheme = rules.lowercase_scheme(scheme, scheme_at, self)
        self.scheme = scheme
        out: list[str]
        if host is None:
            out = [scheme, ":"] if scheme is not None and not authority_only else []
        else:
            out = self.authority_part(scheme, userinfo, userinfo_at, host, host_at, port, port_at)
        if not authority_only:
            out.append(self.path_part(path or "", path_at))
            # An absent query or fragment (most targets) is None without a call.
            if query_ is not None:
                query_ = self.query_part(query_, query_at)
                if query_ is not None:
                    out += ("?", query_)
            if fragment is not None:
                fragment = self.fragment_part(fragment, fragment_at)
                if fragment is not None:
                    out += ("#", fragment)
        url = "".join(out)
        findings = detect.freeze(self.findings) if self.findings else ()  # most targets have none
        # Result's own __new__ is Python code: tuple.__new__ builds the same value faster.
        edits = tuple(self.done) if self.afters is None else self.freeze()  # no open run: as is
        return _new(Result, (self.text, url, edits, findings))

    def authority_part(
        self,
        scheme: str | None,
        userinfo: str | None,
        userinfo_at: int,
        host: str,
        host_at: int,
        port: str | None,
        port_at: int,
    ) -> list[str]:
        """The output up to the path: "//" with the scheme, if any, before it (§3.2), unless
        the target is the authority alone; then [ userinfo "@" ] host [ ":" port ]."""
        self.has_authority = True
        form = self.form
        out: list[str]
        if form == "authority-only" or form == "authority":  # no "//", and no scheme
            out = []
        else:
            out = ["//"] if scheme is None else [scheme, "://"]
        if userinfo is not None:
            userinfo = self.userinfo_part(userinfo, userinfo_at)
            if userinfo is not None:
                out += (userinfo, "@")
        host = self.host = self.host_part(host, host_at)
        out.append(host)
        if port is not None:
            port = self.port_part(port, port_at)
            if port is not None:
                out += (":", port)
        return out

    # --- components, in output order: each takes its text and its offset in the input

    def userinfo_part(self, text: str, start: int) -> str | None:
        detect.userinfo(text, start, self.findings)
        detect.escapes(text, "userinfo", start, self.findings)
        if self.quiet["userinfo"](text):
            return text
        self.raw, self.start = text, start
        return self.walk(self.steps["userinfo"], text)

    def host_part(self, text: str, start: int) -> str:
        # A DNS name in any case, its last label a letter's, or a dotted-decimal IPv4 address.
        if self.quiet["host"](text):
            lower = text.lower()
            if lower == text:
                return text  # no host step changes it or reports on it
            if self.on("lowercase-host"):  # the host steps only lowercase it: one edit
                self.add("lowercase-host", "host", start, start + len(text), text, lower)
                return lower
        literal = rules.ip_literal(text) if text[:1] == "[" else None
        if literal is not None:
            return self.ip_literal(literal, start)
        if "[" in text or ":" in text:
            detect.host(text, start, self.findings)
        self.raw, self.start = text, start
        return self.walk(self.steps["host"], text) or ""

    def ip_literal(self, literal: re.Match[str], start: int) -> str:
        """An IP-literal host: the address is case-insensitive (§6.2.2.1), but a zone ID names
        a network interface, and those are case-sensitive (RFC 6874 §2): its case is kept."""
        on = self.on
        lower = on("lowercase-host")
        if literal["future"] is not None:
            text = literal[0]
            return rules.lowercase_host(text, start, self) if lower else text
        address = literal["address"]
        if lower:
            address = rules.lowercase_host(address, start + 1, self)
        zone = literal["zone"]
        if zone is None:
            return f"[{address}]"
        if literal["percent"] == "%":
            at = start + literal.start("percent")
            self.repair("encode-stray-percent", "host", at, "bare '%' before an IPv6 zone ID")
            self.add("encode-stray-percent", "host", at, at + 1, "%", "%25")
        # The zone's own escapes follow §6.2.2: RFC 3986's unreserved set only (ZoneID has no
        # room for RFC 2396's marks), and no lowercasing.
        zones = rules.scanner(
            "host", False, "keep", False, on("decode-unreserved"), on("uppercase-escape")
        )
        zone = zones.scan(zone, start + literal.start("zone"), self)
        return f"[{address}%25{zone}]"

    def port_part(self, port: str, start: int) -> str | None:
        if port[:1] not in ("", "0") and DEFAULT_PORTS.get(self.scheme or "") != port:
            return port
        self.raw, self.start = port, start
        return self.walk(self.steps["port"], port)

    def path_part(self, text: str, start: int) -> str:
        relative = (
            not self.has_authority
            and self.scheme is None
            and self.form != "origin"
            and text[:1] != "/"
        )
        dotted = detect.path(text, start, not relative, self.findings)
        detect.escapes(text, "path", start, self.findings)
        steps = self.steps[_AUTHORITY_PATH if self.has_authority else "path"]
        needs, characters = steps[0]
        if needs is _character_pass:
            # The characters come first (most policies).  When no segment is for any other
            # step (absolute; none empty or starting with a dot, raw or escaped, which the pass
            # may decode; no ";"), the pass is all there is to do: one regex, when it finds
            # nothing, where the quiet fullmatch and then the pass each took one.
            if not dotted and text[:1] == "/" and "//" not in text and ";" not in text:
                return characters(text, start, self)  # type: ignore[no-any-return]
        elif not dotted and self.quiet["path"](text):  # a dot segment is never quiet
            return text
        self.raw, self.start = text, start
        self.relative = relative
        self.dots = False
        if relative and ":" in text.partition("/")[0]:
            # §4.2: "a:b" is no relative-path reference (it reads as a scheme), even when dot
            # removal would drop the segment; a strict policy says so.
            self.repair("dot-prefix", "path", start, "first segment of a relative path has ':'")
        return self.walk(steps, text) or ""

    def query_part(self, text: str, start: int) -> str | None:
        detect.escapes(text, "query", start, self.findings)
        if self.quiet["query"](text):
            return text
        self.raw, self.start = text, start
        return self.walk(self.steps["query"], text)

    def fragment_part(self, text: str, start: int) -> str | None:
        if not self.on("strip-fragment"):
            detect.escapes(text, "fragment", start, self.findings)
        if self.quiet["fragment"](text):
            return text
        self.raw, self.start = text, start
        return self.walk(self.steps["fragment"], text)


# --- the steps: one function per (component, rule) of pipeline.PIPELINE


def _lowercase_scheme(c: _Canonicalizer, text: str) -> str:
    return rules.lowercase_scheme(text, c.start, c)


def _idna_host(c: _Canonicalizer, text: str) -> str:
    if text.isascii():
        return text
    a_label = rules.idna_host(text)
    if a_label is None:
        detect.add(c.findings, "invalid-idn", "host", c.start, text)
        return text
    c.repair("idna-host", "host", c.start, "non-ASCII host")
    c.structural("idna-host", "host", text, a_label)
    return a_label


def _lowercase_host(c: _Canonicalizer, text: str) -> str:
    return rules.lowercase_host(text, c.start, c)


def _strip_host_dot(c: _Canonicalizer, text: str) -> str:
    if text[-1:] == "." and text.rstrip("."):
        # Every trailing dot ("h.." too), or the result would strip again: idempotence.
        c.structural("strip-host-dot", "host", text, text.rstrip("."))
        return text.rstrip(".")
    return text


def _numeric_host(c: _Canonicalizer, text: str) -> str:
    # A finding whether or not the rule is on: an auditor wants to see "0x7f.1" either way.
    if rules.ends_in_number(text):
        dotted = rules.parse_ipv4(text)
        if dotted is not None and dotted != text:
            detect.add(c.findings, "numeric-host", "host", c.start, text)
            if c.on("numeric-host"):
                c.structural("numeric-host", "host", text, dotted)
                return dotted
    return text


def _drop_empty_port(c: _Canonicalizer, port: str) -> str | None:
    if port != "" or c.form == "authority":
        return port
    c.whole("drop-empty-port", "port", c.start - 1, c.start, ":", "")
    return None


def _strip_port_zeros(c: _Canonicalizer, port: str) -> str:
    if len(port) > 1 and port[0] == "0":
        stripped = port.lstrip("0") or "0"
        c.structural("strip-port-zeros", "port", port, stripped)
        return stripped
    return port


def _drop_default_port(c: _Canonicalizer, port: str) -> str | None:
    if c.form != "authority" and c.scheme is not None and DEFAULT_PORTS.get(c.scheme) == port:
        c.whole("drop-default-port", "port", c.start - 1, c.start + len(c.raw), ":" + port, "")
        return None
    return port


def _backslash_as_slash(c: _Canonicalizer, text: str) -> str:
    if "\\" not in text:
        return text
    for m in re.finditer(r"\\+", text):
        run = m.group()
        c.add(
            "backslash-as-slash",
            "path",
            c.start + m.start(),
            c.start + m.end(),
            run,
            "/" * len(run),
        )
    text = text.replace("\\", "/")
    c.relative = c.relative and text[:1] != "/"  # "\\a" is "/a" (as _path_characters says)
    return text


def _path_characters(c: _Canonicalizer, text: str) -> str:
    if "\\" in text and c.on("reject-escaped-slash"):
        # A raw "\\" would be escaped to the "%5C" this rule refuses, so that the output
        # fails its own policy; WHATWG parsers and IIS read it as "/": refuse it too.
        raise InvalidTarget(
            "reject-escaped-slash", "path", c.start + text.index("\\"), "backslash in the path"
        )
    text = c.scan["path"].scan(text, c.start, c)
    # A relative "\\a" or "%2Fa" that backslash-as-slash or decode-escaped-slash turned into
    # "/a" is now an absolute path (as WHATWG reads "\\a"): no "./" guard to keep it relative.
    c.relative = c.relative and text[:1] != "/"
    return text


def _path_params(c: _Canonicalizer, text: str) -> str:
    drops = c.policy.param_tests(c.host).path
    return text if drops is None else query.path_params(drops, c, text, c.start, c.raw)


def _merge_slashes(c: _Canonicalizer, text: str) -> str:
    if "//" not in text:
        return text
    merged = rules.merge_slashes(text)
    c.structural("merge-slashes", "path", text, merged)
    return merged


def _origin_slash(c: _Canonicalizer, text: str) -> str:
    if c.form == "origin" and text[:1] != "/":
        c.structural("empty-path", "path", text, "/" + text)
        return "/" + text
    return text


def _remove_dot_segments(c: _Canonicalizer, text: str) -> str:
    # Run only on a path with a dot segment (_NEEDS); without one it would resolve to itself.
    if c.relative:
        resolved = rules.remove_dot_segments_relative(text)
    elif text[:1] == "/":
        resolved = rules.remove_dot_segments(text)[0]
    else:
        return text  # a rootless path (mailto:, urn:) is not hierarchical: left as is
    # "./a:b" and "/.//a" are already resolved: their dot segment is the guard below (which a
    # path after an authority never needs).
    if resolved == text or (not c.has_authority and _guard(resolved, c, True) + resolved == text):
        return text
    c.structural("remove-dot-segments", "path", text, resolved)
    c.dots = True
    return resolved


def _empty_path(c: _Canonicalizer, text: str) -> str:
    if (
        text == ""
        and c.has_authority
        and c.form != "authority"
        and (c.scheme is None or c.scheme in DEFAULT_PORTS)
    ):
        c.whole("empty-path", "path", c.start, c.start, "", "/")
        return "/"
    return text


def _dot_prefix(c: _Canonicalizer, text: str) -> str:
    if not c.relative and (c.has_authority or text[:2] != "//"):
        return text  # most paths: _guard has none for them
    # A "//" that rewriting made ("/%2Fevil.example/x", "/\\a") gets its guard in origin-form
    # too: unguarded, it would read as a network-path reference to another host.
    guard = _guard(text, c, c.dots or c.raw[:2] != "//")
    if guard:
        # Not a repair: an invalid input ("1a:b") was refused above; a guard that
        # normalizing made necessary keeps a valid input valid.
        c.whole("dot-prefix", "path", c.start, c.start, "", guard)
    return guard + text


def _guard(path: str, c: _Canonicalizer, dots: bool) -> str:
    """RFC 3986 §4.2 and §5.2.4: the dot segment a path needs so as not to read as another
    kind of reference.  Origin-form "//a" is a path (RFC 9112 §3.2.1); only one that dot
    removal produced gets the guard, so that the result also reads as a path in auto form.
    ``dot-prefix`` is one of the rules that cannot be switched off (policy.REQUIRED_RULES)."""
    if c.relative and (":" in path.partition("/")[0] or path[:1] == "/"):
        return "./"  # "a:b" would read as a scheme, "/a" as an absolute path, "//a" authority
    if not c.has_authority and path[:2] == "//" and (c.form != "origin" or dots):
        return "/."  # "/.//a": "//a" would read as an authority
    return ""


def _query_params(c: _Canonicalizer | _QueryRules, text: str) -> str | None:
    return query.drop(c.policy.param_tests(c.host).query, c, text, c.start, c.raw)


def _sort_query(c: _Canonicalizer | _QueryRules, text: str) -> str:
    return query.sort(c, text, c.start, c.raw)


def _drop_empty_query(c: _Canonicalizer | _QueryRules, text: str) -> str | None:
    return query.drop_empty(c, text, c.start)


def _strip_fragment(c: _Canonicalizer, text: str) -> None:
    c.whole("strip-fragment", "fragment", c.start - 1, c.start + len(text), "#" + text, "")
    return None


# The path's steps after an authority (`_plan`): all but these.
_AUTHORITY_PATH = "path after an authority"
_NOT_AFTER_AUTHORITY = (_origin_slash, _dot_prefix)

_HANDLERS: dict[tuple[str, str, str], Any] = {
    ("scheme", "lowercase-scheme", ""): _lowercase_scheme,
    ("userinfo", CHARACTERS, ""): _character_pass,
    ("host", "idna-host", ""): _idna_host,
    ("host", "lowercase-host", ""): _lowercase_host,
    ("host", CHARACTERS, ""): _character_pass,
    ("host", "strip-host-dot", ""): _strip_host_dot,
    ("host", "numeric-host", ""): _numeric_host,
    ("port", "drop-empty-port", ""): _drop_empty_port,
    ("port", "strip-port-zeros", ""): _strip_port_zeros,
    ("port", "drop-default-port", ""): _drop_default_port,
    ("path", "backslash-as-slash", ""): _backslash_as_slash,
    ("path", CHARACTERS, ""): _path_characters,
    ("path", "drop-params", "path parameters"): _path_params,
    ("path", "merge-slashes", ""): _merge_slashes,
    ("path", "empty-path", "origin-form"): _origin_slash,
    ("path", "remove-dot-segments", ""): _remove_dot_segments,
    ("path", "empty-path", "with an authority"): _empty_path,
    ("path", "dot-prefix", ""): _dot_prefix,
    ("query", CHARACTERS, ""): _character_pass,
    ("query", "drop-params", "query parameters"): _query_params,
    ("query", "sort-query", ""): _sort_query,
    ("query", "drop-empty-query", ""): _drop_empty_query,
    ("fragment", "strip-fragment", ""): _strip_fragment,
    ("fragment", CHARACTERS, ""): _character_pass,
}

# What a text holds when a step may have something to do: a step whose search finds nothing
# is skipped (its handler would return the text as it is).  Steps not named here always run:
# those whose handler's own first test is quicker than a regex search (a search costs about
# two Python calls).  A test of the empty text is `operator.not_`.
_NEEDS: dict[tuple[str, str, str], str | Callable[[str], object]] = {
    ("host", "idna-host", ""): "[^\\x00-\\x7f]",
    ("host", "lowercase-host", ""): "[A-Z]",
    ("host", "strip-host-dot", ""): r"\.\Z",
    ("host", "numeric-host", ""): r"(?:\A|\.)[0-9][^.]*\.*\Z",  # rules.ends_in_number
    ("port", "drop-empty-port", ""): operator.not_,
    ("path", "backslash-as-slash", ""): r"\\",
    ("path", "drop-params", "path parameters"): ";",
    ("path", "merge-slashes", ""): "//",
    ("path", "remove-dot-segments", ""): rules.has_dot_segments,
    ("path", "empty-path", "with an authority"): operator.not_,
    ("query", "sort-query", ""): "&",
    ("query", "drop-empty-query", ""): operator.not_,
}

# Steps that run whatever the policy: their findings are reported even with the rule off.
_ALWAYS = frozenset({("host", "numeric-host", "")})

# The tables above are keyed by `pipeline.PIPELINE`'s steps: a handler for each, and no key
# that names no step (a step renamed in the declaration, its handler forgotten here).
_STEP_KEYS = frozenset((s.component, s.name, s.when) for s in PIPELINE)
if set(_HANDLERS) != _STEP_KEYS or not set(_NEEDS) | _ALWAYS <= _STEP_KEYS:
    raise AssertionError("driver's step tables and pipeline.PIPELINE name different steps")


def _runs(step: Step, on: frozenset[str]) -> bool:
    key = (step.component, step.name, step.when)
    return step.name == CHARACTERS or key in _ALWAYS or not on.isdisjoint(step.rules)


def _running(on: frozenset[str]) -> dict[str, tuple[Step, ...]]:
    """The steps a policy's rules switch on, per component, in pipeline order."""
    return {c: tuple(s for s in PIPELINE if s.component == c and _runs(s, on)) for c in COMPONENTS}


def _step_names(on: frozenset[str]) -> dict[str, tuple[str, ...]]:
    return {c: tuple(s.name for s in steps) for c, steps in _running(on).items()}


def _steps(on: frozenset[str], scan: dict[str, rules.Scanner]) -> dict[str, tuple[_Step, ...]]:
    """The steps a policy's rules switch on, per component, in pipeline order: each with the
    search that tells whether it has anything to do, and its handler."""
    # The path's escaped slashes, when a rule decodes or refuses them, need _path_characters;
    # without such a rule its character pass is its scanner's alone, as every other component's.
    slashes = not on.isdisjoint(("decode-escaped-slash", "reject-escaped-slash"))
    return {c: tuple(_step(s, scan, slashes) for s in steps) for c, steps in _running(on).items()}


def _step(step: Step, scan: dict[str, rules.Scanner], slashes: bool) -> _Step:
    handler = _HANDLERS[step.component, step.name, step.when]
    if handler is _path_characters and not slashes:
        handler = _character_pass
    if handler is _character_pass:  # its own first test, one match, is the quickest
        return (_character_pass, scan[step.component].scan)
    return (_needs(step), handler)


def _needs(step: Step) -> Callable[[str], object] | None:
    if step.name == CHARACTERS:
        return None  # the path's, with its slashes: the scanner's own first test
    pattern = _NEEDS.get((step.component, step.name, step.when))
    if pattern is None or callable(pattern):
        return pattern
    return re.compile(pattern).search
