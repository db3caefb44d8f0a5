"""RFC 3986 §5.2 reference resolution, transcribed for the tests (the core does not resolve).

A literal transcription of the RFC's pseudocode, so that it can check the core's dot-segment
removal independently and tell whether a canonicalized relative reference still resolves to the
same target.
"""

from __future__ import annotations

import re

# RFC 3986 Appendix B.
_SPLIT = re.compile(r"^(([^:/?#]+):)?(//([^/?#]*))?([^?#]*)(\?([^#]*))?(#(.*))?", re.DOTALL)


def parse(ref: str) -> tuple[str | None, str | None, str, str | None, str | None]:
    m = _SPLIT.match(ref)
    assert m is not None
    return m.group(2), m.group(4), m.group(5), m.group(7), m.group(9)


def remove_dot_segments(path: str) -> str:
    """§5.2.4, step by step: an input buffer and an output buffer."""
    inp, out = path, ""
    while inp:
        if inp.startswith("../"):  # A
            inp = inp[3:]
        elif inp.startswith("./"):
            inp = inp[2:]
        elif inp.startswith("/./"):  # B
            inp = "/" + inp[3:]
        elif inp == "/.":
            inp = "/"
        elif inp.startswith("/../"):  # C
            inp = "/" + inp[4:]
            out = out[: out.rfind("/")] if "/" in out else ""
        elif inp == "/..":
            inp = "/"
            out = out[: out.rfind("/")] if "/" in out else ""
        elif inp in (".", ".."):  # D
            inp = ""
        else:  # E
            start = 1 if inp.startswith("/") else 0
            cut = inp.find("/", start)
            cut = len(inp) if cut < 0 else cut
            out += inp[:cut]
            inp = inp[cut:]
    return out


def _merge(base_authority: str | None, base_path: str, ref_path: str) -> str:
    """§5.2.3."""
    if base_authority is not None and base_path == "":
        return "/" + ref_path
    return base_path[: base_path.rfind("/") + 1] + ref_path


def recompose(
    scheme: str | None,
    authority: str | None,
    path: str | None,
    query: str | None,
    fragment: str | None,
) -> str:
    """§5.3 (a None path is the empty path)."""
    out = ""
    if scheme is not None:
        out += scheme + ":"
    if authority is not None:
        out += "//" + authority
    out += path or ""
    if query is not None:
        out += "?" + query
    if fragment is not None:
        out += "#" + fragment
    return out


def resolve(base: str, ref: str) -> str:
    """§5.2.2, strict parser (a scheme in the reference is always taken as its own)."""
    b_scheme, b_auth, b_path, b_query, _ = parse(base)
    r_scheme, r_auth, r_path, r_query, r_frag = parse(ref)
    if r_scheme is not None:
        t = (r_scheme, r_auth, remove_dot_segments(r_path), r_query)
    elif r_auth is not None:
        t = (b_scheme, r_auth, remove_dot_segments(r_path), r_query)
    elif r_path == "":
        t = (b_scheme, b_auth, b_path, r_query if r_query is not None else b_query)
    elif r_path.startswith("/"):
        t = (b_scheme, b_auth, remove_dot_segments(r_path), r_query)
    else:
        t = (b_scheme, b_auth, remove_dot_segments(_merge(b_auth, b_path, r_path)), r_query)
    return recompose(*t, r_frag)
