"""`canonicalize`: split first, then run each component's rules in the documented order.

The order (README, Rules, lists each rule with its RFC section):
  scheme     lowercase-scheme
  userinfo   character rules
  host       idna-host, lowercase-host, character rules, strip-host-dot, numeric-host
  port       drop-empty-port, strip-port-zeros, drop-default-port
  path       backslash-as-slash, character rules (+ decode/reject-escaped-slash), merge-slashes,
             remove-dot-segments, empty-path, dot-prefix
  query      character rules, drop-params, sort-query, drop-empty-query (query_rules)
  fragment   strip-fragment, character rules
Character rules, in one pass: decode-unreserved, uppercase-escape, encode-stray-percent,
encode-unsafe, encode-non-ascii.  Each escape is decoded at most once, so "%2541" stays "%2541".
"""

from __future__ import annotations

import re
from functools import lru_cache

from . import compiled, rules
from . import findings as detect
from .policy import DEFAULT_POLICY, DEFAULT_PORTS, Policy
from .result import InvalidTarget, Result
from .split import FORMS, Parts, split

_COMPONENTS = ("userinfo", "host", "path", "query", "fragment")

compiled.setup(DEFAULT_PORTS)
_twin = compiled.twin


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


def canonicalize(
    target: str | bytes, policy: Policy = DEFAULT_POLICY, *, form: str = "auto"
) -> Result:
    """The canonical form of a URI-reference or request-target, with every rewrite recorded.

    ``form`` names the request-target form when the caller knows it (a proxy does): ``origin``
    reads "//a" as a path, ``authority`` reads "h:443" as host and port.  ``auto`` tells the forms
    apart by their shape.  Never raises for a non-strict policy; a strict one raises
    `InvalidTarget` where it would have to repair, and so does the opt-in
    ``reject-escaped-slash`` for an escaped or raw backslash or slash in the path.
    """
    if not isinstance(target, str):
        target = bytes(target).decode("utf-8", "surrogateescape")
    if _twin is not None and policy.compiled >= 0:
        result = _twin(target, policy.compiled, form)
        if result is not None:
            return _twin_query_rules(result, policy) if policy.query_rules else result
    if "/." not in target:
        if (form == "auto" or form == "absolute") and policy.fast_absolute(target):
            return Result(target, target)
        if (form == "auto" or form == "origin") and policy.fast_origin(target):
            return Result(target, target)
    return canonicalize_python(target, policy, form=form)


def canonicalize_python(
    target: str | bytes, policy: Policy = DEFAULT_POLICY, *, form: str = "auto"
) -> Result:
    """`canonicalize` without the fast path and the compiled twin: the reference they must match."""
    if not isinstance(target, str):
        target = bytes(target).decode("utf-8", "surrogateescape")
    if form not in FORMS:
        raise ValueError(f"unknown form {form!r}; choose one of {', '.join(FORMS)}")
    return _Canonicalizer(policy, target).run(split(target, form))


def query_rules(policy: Policy, edits: rules.Edits, text: str, start: int, raw: str) -> str | None:
    """drop-params, sort-query, drop-empty-query on a query the character rules have run on.

    ``raw`` is the query as it was in the input, at ``start``.  None: no query is left.
    """
    on = policy.rules.__contains__
    if on("drop-params") and text:
        drops = policy.drops_param
        kept = "&".join(p for p in text.split("&") if not drops(rules.query_name(p)))
        if kept != text:
            edits.add("drop-params", "query", start, start + len(raw), text, kept)
            if not kept:
                return None  # nothing of the query is left, not even an empty one
            text = kept
    if on("sort-query") and "&" in text:
        ordered = "&".join(sorted(text.split("&"), key=rules.query_name))
        if ordered != text:
            edits.add("sort-query", "query", start, start + len(raw), text, ordered)
            text = ordered
    if on("drop-empty-query") and text == "":
        edits.add("drop-empty-query", "query", start - 1, start, "?", "")
        return None
    return text


def _twin_query_rules(result: Result, policy: Policy) -> Result:
    """The query rules on a Result of the twin, which ran only the character rules there.

    The twin handles targets whose first "?" before any "#" starts the query, in the input and
    in the output alike (a raw "?" in the path is escaped, and the authority has none).
    """
    url = result.url
    qmark, hash_ = url.find("?"), url.find("#")
    if qmark < 0 or 0 <= hash_ < qmark:
        return result
    target = result.input
    start = target.index("?") + 1
    raw = target[start:].partition("#")[0]
    end = hash_ if hash_ >= 0 else len(url)
    text = url[qmark + 1 : end]
    edits = rules.Edits(False)
    query = query_rules(policy, edits, text, start, raw)
    if query == text:  # each query rule records an edit exactly when it changes the query
        return result
    url = url[:qmark] + ("" if query is None else "?" + query) + url[end:]
    # In the driver's order: the query's edits come before the fragment's.
    old = result.edits
    n = len(old)
    while n and old[n - 1].component == "fragment":
        n -= 1
    return Result(target, url, old[:n] + edits.freeze() + old[n:], result.findings)


class _Canonicalizer:
    """One canonicalization: the policy's switches, and the edits and findings recorded."""

    __slots__ = ("edits", "findings", "on", "policy", "scan", "target")

    def __init__(self, policy: Policy, target: str) -> None:
        self.policy = policy
        self.on = on = policy.rules.__contains__
        self.target = target
        self.edits = rules.Edits(policy.strict)
        self.findings = detect.Findings()
        if on("reject-escaped-slash"):
            slash = "reject"
        elif on("decode-escaped-slash"):
            slash = "decode-all" if on("backslash-as-slash") else "decode"
        else:
            slash = "keep"
        self.scan = _scanners(
            policy.unreserved_2396,
            slash,
            on("lowercase-host"),
            on("decode-unreserved"),
            on("uppercase-escape"),
        )

    def chars(self, component: str, text: str, start: int) -> str:
        return self.scan[component].scan(text, start, self.edits)

    def structural(
        self, rule: str, component: str, start: int, raw: str, before: str, after: str
    ) -> None:
        """Record a rule that rewrote a whole component (raw: its text in the input)."""
        self.edits.add(rule, component, start, start + len(raw), before, after)

    def run(self, parts: Parts) -> Result:
        if parts.form == "asterisk":
            return Result(self.target, self.target)
        scheme = self.scheme(*parts.scheme)
        out: list[str] = [scheme, ":"] if scheme is not None else []
        has_authority = parts.host[0] is not None
        if has_authority:
            userinfo = self.userinfo(*parts.userinfo)
            host = self.host(*parts.host)
            port = self.port(*parts.port, scheme, parts.form)
            if parts.form != "authority":
                out.append("//")
            if userinfo is not None:
                out += (userinfo, "@")
            out.append(host)
            if port is not None:
                out += (":", port)
        out.append(self.path(*parts.path, parts.form, scheme, has_authority))
        query = self.query(*parts.query)
        if query is not None:
            out += ("?", query)
        fragment = self.fragment(*parts.fragment)
        if fragment is not None:
            out += ("#", fragment)
        url = "".join(out)
        return Result(self.target, url, self.edits.freeze(), self.findings.freeze())

    # --- components, in output order

    def scheme(self, text: str | None, start: int) -> str | None:
        if text is None or not self.on("lowercase-scheme"):
            return text
        return rules.lowercase_scheme(text, start, self.edits)

    def userinfo(self, text: str | None, start: int) -> str | None:
        if text is None:
            return None
        detect.userinfo(text, start, self.findings)
        detect.escapes(text, "userinfo", start, self.findings)
        return self.chars("userinfo", text, start)

    def host(self, text: str | None, start: int) -> str:
        raw = text = text or ""
        on = self.on
        literal = rules.ip_literal(text) if text[:1] == "[" else None
        if literal is not None:
            return self.ip_literal(literal, start)
        if not text.isascii():
            a_label = rules.idna_host(text) if on("idna-host") else None
            if a_label is not None:
                self.edits.repair("idna-host", "host", start, "non-ASCII host")
                self.structural("idna-host", "host", start, raw, text, a_label)
                text = a_label
            elif on("idna-host"):
                self.findings.add("invalid-idn", "host", start, text)
        # lowercase-host before the character rules, so that its edits are the input's own
        # characters; the host's scanner then decodes "%41" straight to "a".
        if on("lowercase-host"):
            text = rules.lowercase_host(text, start, self.edits)
        text = self.chars("host", text, start)
        if on("strip-host-dot") and text[-1:] == "." and text.rstrip("."):
            # Every trailing dot ("h.." too), or the result would strip again: idempotence.
            self.structural("strip-host-dot", "host", start, raw, text, text.rstrip("."))
            text = text.rstrip(".")
        if rules.ends_in_number(text):
            dotted = rules.parse_ipv4(text)
            if dotted is not None and dotted != text:
                self.findings.add("numeric-host", "host", start, text)
                if on("numeric-host"):
                    self.structural("numeric-host", "host", start, raw, text, dotted)
                    text = dotted
        return text

    def ip_literal(self, literal: re.Match[str], start: int) -> str:
        """An IP-literal host: the address is case-insensitive (§6.2.2.1), but a zone ID names
        a network interface, and those are case-sensitive (RFC 6874 §2): its case is kept."""
        edits = self.edits
        on = self.on
        lower = on("lowercase-host")
        if literal["future"] is not None:
            text = literal[0]
            return rules.lowercase_host(text, start, edits) if lower else text
        address = literal["address"]
        if lower:
            address = rules.lowercase_host(address, start + 1, edits)
        zone = literal["zone"]
        if zone is None:
            return f"[{address}]"
        if literal["percent"] == "%":
            at = start + literal.start("percent")
            edits.repair("encode-stray-percent", "host", at, "bare '%' before an IPv6 zone ID")
            edits.add("encode-stray-percent", "host", at, at + 1, "%", "%25")
        # The zone's own escapes follow §6.2.2: RFC 3986's unreserved set only (ZoneID has no
        # room for RFC 2396's marks), and no lowercasing.
        zones = rules.scanner(
            "host", False, "keep", False, on("decode-unreserved"), on("uppercase-escape")
        )
        zone = zones.scan(zone, start + literal.start("zone"), edits)
        return f"[{address}%25{zone}]"

    def port(self, port: str | None, start: int, scheme: str | None, form: str) -> str | None:
        if port is None:
            return None
        raw = port
        if port == "":
            if not self.on("drop-empty-port") or form == "authority":
                return port
            self.edits.add("drop-empty-port", "port", start - 1, start, ":", "")
            return None
        if self.on("strip-port-zeros") and len(port) > 1 and port[0] == "0":
            stripped = port.lstrip("0") or "0"
            self.structural("strip-port-zeros", "port", start, raw, port, stripped)
            port = stripped
        if (
            self.on("drop-default-port")
            and form != "authority"
            and scheme is not None
            and DEFAULT_PORTS.get(scheme) == port
        ):
            self.edits.add("drop-default-port", "port", start - 1, start + len(raw), ":" + port, "")
            return None
        return port

    def path(
        self, text: str | None, start: int, form: str, scheme: str | None, has_authority: bool
    ) -> str:
        raw = text = text or ""
        on = self.on
        edits = self.edits
        relative = form != "origin" and scheme is None and not has_authority and text[:1] != "/"
        detect.path(text, start, not relative, self.findings)
        detect.escapes(text, "path", start, self.findings)
        if relative and ":" in text.partition("/")[0]:
            # §4.2: "a:b" is no relative-path reference (it reads as a scheme), even when dot
            # removal would drop the segment; a strict policy says so.
            edits.repair("dot-prefix", "path", start, "first segment of a relative path has ':'")
        if on("backslash-as-slash") and "\\" in text:
            for m in re.finditer(r"\\+", text):
                edits.add(
                    "backslash-as-slash",
                    "path",
                    start + m.start(),
                    start + m.end(),
                    m.group(),
                    "/" * len(m.group()),
                )
            text = text.replace("\\", "/")
        elif on("reject-escaped-slash") and "\\" in text:
            # A raw "\\" would be escaped to the "%5C" this rule refuses, so that the output
            # fails its own policy; WHATWG parsers and IIS read it as "/": refuse it too.
            raise InvalidTarget(
                "reject-escaped-slash", "path", start + text.index("\\"), "backslash in the path"
            )
        text = self.chars("path", text, start)
        # A relative "\\a" or "%2Fa" that backslash-as-slash or decode-escaped-slash turned into
        # "/a" is now an absolute path (as WHATWG reads "\\a"): no "./" guard to keep it relative.
        relative = relative and text[:1] != "/"
        if on("merge-slashes") and "//" in text:
            merged = rules.merge_slashes(text)
            self.structural("merge-slashes", "path", start, raw, text, merged)
            text = merged
        if on("empty-path") and form == "origin" and text[:1] != "/":
            # RFC 9112 §3.2.1: origin-form is an absolute-path; "" is sent as "/".  Before the
            # dot segments, so that "." is resolved as the "/." it is sent as.
            self.structural("empty-path", "path", start, raw, text, "/" + text)
            text = "/" + text
        dots = False
        if on("remove-dot-segments") and rules.has_dot_segments(text):
            if relative:
                resolved = rules.remove_dot_segments_relative(text)
            elif text[:1] == "/":
                resolved = rules.remove_dot_segments(text)[0]
            else:
                resolved = text  # a rootless path (mailto:, urn:) is not hierarchical: left as is
            # "./a:b" and "/.//a" are already resolved: their dot segment is the guard below.
            if (
                resolved != text
                and self._guard(resolved, relative, form, has_authority, True) + resolved != text
            ):
                self.structural("remove-dot-segments", "path", start, raw, text, resolved)
                text = resolved
                dots = True
        if (
            on("empty-path")
            and text == ""
            and has_authority
            and form != "authority"
            and (scheme is None or scheme in DEFAULT_PORTS)
        ):
            edits.add("empty-path", "path", start, start, "", "/")
            text = "/"
        guard = self._guard(text, relative, form, has_authority, dots)
        if guard:
            # Not a repair: an invalid input ("1a:b") was refused above; a guard that
            # normalizing made necessary keeps a valid input valid.
            edits.add("dot-prefix", "path", start, start, "", guard)
            text = guard + text
        return text

    @staticmethod
    def _guard(path: str, relative: bool, form: str, has_authority: bool, dots: bool) -> str:
        """RFC 3986 §4.2 and §5.2.4: the dot segment a path needs so as not to read as another
        kind of reference.  Origin-form "//a" is a path (RFC 9112 §3.2.1); only one that dot
        removal produced gets the guard, so that the result also reads as a path in auto form.
        ``dot-prefix`` is one of the rules that cannot be switched off (policy.REQUIRED_RULES)."""
        if relative and (":" in path.partition("/")[0] or path[:1] == "/"):
            return "./"  # "a:b" would read as a scheme, "/a" as an absolute path, "//a" authority
        if not has_authority and path[:2] == "//" and (form != "origin" or dots):
            return "/."  # "/.//a": "//a" would read as an authority
        return ""

    def query(self, text: str | None, start: int) -> str | None:
        if text is None:
            return None
        raw = text
        detect.escapes(text, "query", start, self.findings)
        text = self.chars("query", text, start)
        return query_rules(self.policy, self.edits, text, start, raw)

    def fragment(self, text: str | None, start: int) -> str | None:
        if text is None:
            return None
        if self.on("strip-fragment"):
            self.edits.add(
                "strip-fragment", "fragment", start - 1, start + len(text), "#" + text, ""
            )
            return None
        detect.escapes(text, "fragment", start, self.findings)
        return self.chars("fragment", text, start)
