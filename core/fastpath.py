"""Patterns for targets that are already canonical, so `canonicalize` can return them untouched.

They accept a conservative subset: a lowercase http(s)/ws(s) URL with a DNS name ending in a
letter (numeric hosts are findings), no userinfo, no port, no escape, no character that needs
one, and origin-form targets.  Whatever they refuse takes the full path, so being strict here
costs speed, never correctness.  The caller also sends anything containing "/." (dot segments)
down the full path.
"""

from __future__ import annotations

import re

from .charsets import LDH_LOWER_HOST, PCHAR, regex_class

# RFC 3986 §3.3 pchar, less pct-encoded.
_PCHAR = regex_class(PCHAR)
_HOST = LDH_LOWER_HOST


def fast_patterns(
    rules: frozenset[str], query_rules: bool
) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(absolute-form, origin-form) patterns that no rule in ``rules`` would touch.

    ``query_rules``: some rule of policy.QUERY_RULES is on, so any query may change."""
    # With merge-slashes: segments each ended by one "/", after the pattern's own leading "/".
    # Unambiguous and possessive, so a refused target fails in linear time; the former
    # "(?:/?[pchar]+)*/?" backtracked 2^n ways on "/aaa…a%" and also let "http://h//a" through.
    # Every run is possessive: the path's class holds no "?" or "#", the query's no "#", so
    # giving characters back never helps, and a target refused at an escape in its path fails
    # there, without trying the query and fragment at every shorter path first.
    path = f"(?:[{_PCHAR}]++/)*+[{_PCHAR}]*+" if "merge-slashes" in rules else f"[{_PCHAR}/]*+"
    # An optional part as "(?:x|)": a branch, one step of the regex engine where "?" loops.
    query = "" if query_rules else f"(?:\\?[{_PCHAR}/?]*+|)"
    fragment = "" if "strip-fragment" in rules else f"(?:#[{_PCHAR}/?]*+|)"
    absolute = re.compile(f"(?:https?|wss?)://{_HOST}/{path}{query}{fragment}")
    origin = re.compile(f"/(?!/){path}{query}{fragment}")
    return absolute, origin
