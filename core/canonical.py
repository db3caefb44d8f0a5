"""`canonicalize`: split first, then run each component's rules in the documented order.

The order (docs/rules.md):
  scheme     lowercase-scheme
  userinfo   character rules
  host       idna-host, character rules, lowercase-host, strip-host-dot, numeric-host
  port       drop-empty-port, strip-port-zeros, drop-default-port
  path       backslash-as-slash, character rules (+ decode/reject-escaped-slash), merge-slashes,
             remove-dot-segments, empty-path, dot-prefix
  query      character rules, drop-params, sort-query, drop-empty-query
  fragment   strip-fragment, character rules
Character rules, in one pass: decode-unreserved, uppercase-escape, encode-stray-percent,
encode-unsafe, encode-non-ascii.  Each escape is decoded at most once, so "%2541" stays "%2541".
"""

from __future__ import annotations

import re
from functools import lru_cache

from urlsan.core import findings as detect
from urlsan.core import rules
from urlsan.core.policy import DEFAULT_POLICY, DEFAULT_PORTS, Policy
from urlsan.core.result import Finding, Result
from urlsan.core.split import FORMS, Parts, Span, split

_PCHAR = r"A-Za-z0-9\-._~!$&'()*+,;=:@"


@lru_cache(maxsize=32)
def _fast_paths(policy_rules: frozenset[str]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Patterns that only match targets no rule of the policy would touch or report on.

    Absolute http(s)/ws(s) URLs with a lowercase DNS name, no port, no userinfo, no escape, and
    origin-form targets; a "/." anywhere sends the target down the full path (dot segments).
    """
    path = f"[{_PCHAR}/]*" if "merge-slashes" not in policy_rules else f"(?:/?[{_PCHAR}]+)*/?"
    query = f"(?:\\?[{_PCHAR}/?]*)?"
    if policy_rules & {"drop-params", "sort-query", "drop-empty-query"}:
        query = ""
    fragment = "" if "strip-fragment" in policy_rules else f"(?:#[{_PCHAR}/?]*)?"
    host = r"(?:[a-z0-9\-]+\.)*[a-z][a-z0-9\-]*"
    absolute = re.compile(f"(?:https?|wss?)://{host}/{path}{query}{fragment}")
    origin = re.compile(f"/(?!/){path}{query}{fragment}")
    return absolute, origin


def canonicalize(
    target: str | bytes, policy: Policy = DEFAULT_POLICY, *, form: str = "auto"
) -> Result:
    """The canonical form of a URI-reference or request-target, with every rewrite recorded.

    ``form`` names the request-target form when the caller knows it (a proxy does): ``origin``
    reads "//a" as a path, ``authority`` reads "h:443" as host and port.  ``auto`` tells the forms
    apart by their shape.  Never raises for a non-strict policy; a strict one raises
    `InvalidTarget` where it would have to repair.
    """
    if not isinstance(target, str):
        target = bytes(target).decode("utf-8", "surrogateescape")
    if form not in FORMS:
        raise ValueError(f"unknown form {form!r}; choose one of {', '.join(FORMS)}")

    if "/." not in target:
        absolute, origin = _fast_paths(policy.rules)
        if form in ("auto", "absolute") and absolute.fullmatch(target):
            return Result(target, target)
        if form in ("auto", "origin") and origin.fullmatch(target):
            return Result(target, target)

    return _Canonicalizer(policy, target).run(split(target, form))


class _Canonicalizer:
    __slots__ = ("edits", "findings", "on", "policy", "slash", "target")

    def __init__(self, policy: Policy, target: str) -> None:
        self.policy = policy
        self.on = policy.rules.__contains__
        self.target = target
        self.edits = rules.Edits(policy.strict)
        self.findings: list[Finding] = []
        if self.on("reject-escaped-slash"):
            self.slash = "reject"
        elif self.on("decode-escaped-slash"):
            self.slash = "decode-all" if self.on("backslash-as-slash") else "decode"
        else:
            self.slash = "keep"

    def chars(self, component: str, span: Span, text: str) -> str:
        scanner = rules.scanner(component, self.policy.unreserved_2396,
                                self.slash if component == "path" else "keep")
        return scanner.scan(text, span.start, self.edits)

    def structural(self, rule: str, component: str, span: Span, before: str, after: str) -> None:
        assert span.text is not None
        self.edits.add(rule, component, span.start, span.start + len(span.text), before, after)

    def run(self, parts: Parts) -> Result:
        if parts.form == "asterisk":
            return Result(self.target, self.target)
        scheme = self.scheme(parts.scheme)
        out: list[str] = [scheme + ":"] if scheme is not None else []
        if parts.has_authority:
            userinfo = self.userinfo(parts.userinfo)
            host = self.host(parts.host)
            port = self.port(parts.port, scheme, parts.form)
            if parts.form != "authority":
                out.append("//")
            if userinfo is not None:
                out += (userinfo, "@")
            out.append(host)
            if port is not None:
                out += (":", port)
        out.append(self.path(parts, scheme))
        query = self.query(parts.query)
        if query is not None:
            out += ("?", query)
        fragment = self.fragment(parts.fragment)
        if fragment is not None:
            out += ("#", fragment)
        url = "".join(out)
        return Result(self.target, url, self.edits.freeze(), tuple(self.findings))

    # --- components, in output order

    def scheme(self, span: Span) -> str | None:
        if span.text is None or not self.on("lowercase-scheme"):
            return span.text
        return rules.lowercase_scheme(span.text, span.start, self.edits)

    def userinfo(self, span: Span) -> str | None:
        if span.text is None:
            return None
        detect.userinfo(span.text, span.start, self.findings)
        detect.escapes(span.text, "userinfo", span.start, self.findings)
        return self.chars("userinfo", span, span.text)

    def host(self, span: Span) -> str:
        text = span.text or ""
        if text.startswith("[") and rules.is_ip_literal(text):
            return rules.lowercase_host(text, span.start, self.edits) if self.on(
                "lowercase-host") else text
        if not text.isascii():
            a_label = rules.idna_host(text) if self.on("idna-host") else None
            if a_label is None and self.on("idna-host"):
                self.findings.append(Finding("invalid-idn", "host", span.start, text))
            elif a_label is not None:
                self.edits.repair("idna-host", "host", span.start, "non-ASCII host")
                self.edits.add("idna-host", "host", span.start, span.start + len(text), text,
                               a_label)
                text = a_label
        text = self.chars("host", span, text)
        if self.on("lowercase-host"):
            text = rules.lowercase_host(text, span.start, self.edits)
        if self.on("strip-host-dot") and len(text) > 1 and text.endswith("."):
            self.structural("strip-host-dot", "host", span, text, text[:-1])
            text = text[:-1]
        if rules.ends_in_number(text):
            dotted = rules.parse_ipv4(text)
            if dotted is not None and dotted != text:
                self.findings.append(Finding("numeric-host", "host", span.start, text))
                if self.on("numeric-host"):
                    self.structural("numeric-host", "host", span, text, dotted)
                    text = dotted
        return text

    def port(self, span: Span, scheme: str | None, form: str) -> str | None:
        port = span.text
        if port is None:
            return None
        edits = self.edits
        if port == "":
            if not self.on("drop-empty-port") or form == "authority":
                return port
            edits.add("drop-empty-port", "port", span.start - 1, span.start, ":", "")
            return None
        if self.on("strip-port-zeros") and len(port) > 1 and port[0] == "0":
            stripped = port.lstrip("0") or "0"
            self.structural("strip-port-zeros", "port", span, port, stripped)
            port = stripped
        if (self.on("drop-default-port") and form != "authority" and scheme is not None
                and DEFAULT_PORTS.get(scheme) == port):
            edits.add("drop-default-port", "port", span.start - 1,
                      span.start + len(span.text or ""), ":" + port, "")
            return None
        return port

    def path(self, parts: Parts, scheme: str | None) -> str:
        span = parts.path
        text = span.text or ""
        on = self.on
        relative = scheme is None and not parts.has_authority and not text.startswith("/")
        if parts.form == "origin":
            relative = False
        detect.path(text, span.start, not relative, self.findings)
        detect.escapes(text, "path", span.start, self.findings)
        if on("backslash-as-slash") and "\\" in text:
            for m in re.finditer(r"\\+", text):
                self.edits.add("backslash-as-slash", "path", span.start + m.start(),
                               span.start + m.end(), m.group(), "/" * len(m.group()))
            text = text.replace("\\", "/")
        text = self.chars("path", span, text)
        if on("merge-slashes") and "//" in text:
            merged = rules.merge_slashes(text)
            self.structural("merge-slashes", "path", span, text, merged)
            text = merged
        if on("remove-dot-segments") and rules.has_dot_segments(text):
            if relative:
                resolved = rules.remove_dot_segments_relative(text)
            elif text.startswith("/"):
                resolved = rules.remove_dot_segments(text)[0]
            else:
                resolved = text  # a rootless path (mailto:, urn:) is not hierarchical: left as is
            if resolved != text:
                self.structural("remove-dot-segments", "path", span, text, resolved)
                text = resolved
        if on("empty-path"):
            if parts.form == "origin" and not text.startswith("/"):
                self.structural("empty-path", "path", span, text, "/" + text)
                text = "/" + text
            elif (text == "" and parts.has_authority and parts.form != "authority"
                  and (scheme is None or scheme in DEFAULT_PORTS)):
                self.edits.add("empty-path", "path", span.start, span.start, "", "/")
                text = "/"
        return self._dot_prefix(text, span, relative, parts)

    def _dot_prefix(self, text: str, span: Span, relative: bool, parts: Parts) -> str:
        # RFC 3986 §4.2 and §5.2.4's note: the result must not read as another kind of reference.
        guard = ""
        if relative and (":" in text.partition("/")[0] or text.startswith("//")):
            guard = "./"  # "a:b" would read as a scheme, "//a" as an authority
        elif (not parts.has_authority and parts.form != "origin" and text.startswith("//")):
            guard = "/."  # "/.//a": "//a" would read as an authority
        if guard:
            self.edits.repair("dot-prefix", "path", span.start, "path reads as another part")
            self.edits.add("dot-prefix", "path", span.start, span.start, "", guard)
        return guard + text

    def query(self, span: Span) -> str | None:
        text = span.text
        if text is None:
            return None
        on = self.on
        detect.escapes(text, "query", span.start, self.findings)
        text = self.chars("query", span, text)
        if on("drop-params") and text:
            kept = [p for p in text.split("&") if not self.policy.drops_param(rules.query_name(p))]
            new = "&".join(kept)
            if new != text:
                self.structural("drop-params", "query", span, text, new)
                if not new:
                    return None  # nothing of the query is left, not even an empty one
                text = new
        if on("sort-query") and "&" in text:
            pairs = text.split("&")
            ordered = "&".join(sorted(pairs, key=rules.query_name))
            if ordered != text:
                self.structural("sort-query", "query", span, text, ordered)
                text = ordered
        if on("drop-empty-query") and text == "":
            self.edits.add("drop-empty-query", "query", span.start - 1, span.start, "?", "")
            return None
        return text

    def fragment(self, span: Span) -> str | None:
        text = span.text
        if text is None:
            return None
        if self.on("strip-fragment"):
            self.edits.add("strip-fragment", "fragment", span.start - 1, span.start + len(text),
                           "#" + text, "")
            return None
        detect.escapes(text, "fragment", span.start, self.findings)
        return self.chars("fragment", span, text)
