"""What the data-frame integrations (`urlsan.spark`, `urlsan.dask`, `urlsan.duckdb`,
`urlsan.polars`) share: the policy their options name, the loop that turns a batch of URLs into
the url / changed / rules columns, and the one that turns it into SURT keys.

Pure Python: neither Spark, Dask, DuckDB, Polars nor pandas is needed here, so each integration
needs only its own extra.  `arrow_urls` and `arrow_surt_keys` take a pyarrow string column:
with the compiled loop (core/_columns.c) they read its buffers and write the result's, the
twin straight from the buffer for the ASCII rows it serves and one call for each other row, no
list of rows; without it (``URLSAN_NO_EXTENSIONS``, no compiler) they go through
the list functions here.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from urlsan.core import Policy, canonicalize, many
from urlsan.core.canonical import ascii_twin
from urlsan.core.options import policy_from_options
from urlsan.core.params import parse_spec
from urlsan.core.surt import PROFILES as SURT_PROFILES
from urlsan.core.surt import ia_key, urlsan_key

Columns = many.Columns

_map_strings: Callable[..., tuple[int, bytes | None, bytes, bytes]] | None = None
_map_result: Callable[..., tuple[Any, ...]] | None = None
if not os.environ.get("URLSAN_NO_EXTENSIONS"):
    with contextlib.suppress(ImportError):  # built without it: the list path
        from urlsan.core._columns import map_result as _map_result
        from urlsan.core._columns import map_strings as _map_strings

# The fields of `arrow_result`'s struct: `columns`'s three lists.
URL, CHANGED, RULES = "url", "changed", "rules"

# The rules on a query's parameters, in the order they run (`urlsan.core.query`); interned, as
# the compiled twin's rule names are, so that the loop tells two names apart by identity.
_QUERY_RULES: tuple[str, str, str] = (
    sys.intern("drop-params"),
    sys.intern("sort-query"),
    sys.intern("drop-empty-query"),
)

# What the compiled loop takes of a policy: the twin's capsule, its switches, the Python query
# rules (`driver.query_rules_url`, or None), the policy, and `query_spec` (None: the Python
# query rules run on each URL with a query).
ColumnTwin = tuple[object, int, Callable[..., Any] | None, Policy, tuple[Any, ...] | None]
QuerySpec = tuple[bool, bool, bool, tuple[Any, ...], tuple[Any, ...], tuple[str, str, str]]


def build_policy(
    profile: str = "crawler",
    rules: str = "",
    drop_params: str | Iterable[str] = (),
    keep_params: str | Iterable[str] = (),
) -> Policy:
    """The policy of a profile, with rules switched on or off and parameter specs added;
    `ValueError` names the bad argument."""
    return policy_from_options(profile, rules, drop_params, keep_params)


def columns(values: Iterable[object], policy: Policy) -> Columns:
    """The url, changed and rules of each value, as three lists: `urlsan.core.many.columns`."""
    return many.columns(values if type(values) is list else list(values), policy)


def surt_keys(
    values: Iterable[object], profile: str = "ia", policy: Policy | None = None
) -> list[str | None]:
    """The SURT key of each value (`urlsan.core.surt`): None for None, NaN, any other non-str,
    a blank string, and a URL the profile cannot key (a port that is not a number, a URL the
    policy refuses)."""
    if profile not in SURT_PROFILES:
        raise ValueError(f"unknown SURT profile {profile!r}: one of {', '.join(SURT_PROFILES)}")
    if profile == "urlsan":
        urls, _, _ = columns(values, policy if policy is not None else build_policy("rfc3986"))
        return [None if url is None else urlsan_key(url) for url in urls]
    out: list[str | None] = []
    append = out.append
    for value in values:
        if type(value) is not str or not (text := value.strip(many.BLANKS)):
            append(None)
            continue
        try:
            append(ia_key(text))
        except ValueError:  # InvalidTarget: a port that is not a number
            append(None)
    return out


def canonical_urls(values: Iterable[object], policy: Policy) -> list[str | None]:
    """The url column of `columns` alone, without building the other two: the compiled loop
    (`urlsan.core.many.urls`) runs until a value it leaves to the slow way (None, a blank, a URL
    the policy refuses), which `columns` answers, and then goes on after it."""
    rest: list[Any] = values if type(values) is list else list(values)
    out: list[str | None] = []
    restarts = 0
    while rest:
        done = many.urls(rest, policy)
        out += done
        if len(done) == len(rest):
            break
        restarts += 1
        if restarts > 16:  # many values for the slow way: one pass of `columns` for the rest
            out += columns(rest[len(done) :], policy)[0]
            break
        out.append(columns(rest[len(done) : len(done) + 1], policy)[0][0])
        rest = rest[len(done) + 1 :]
    return out


def column_twin(policy: Policy) -> ColumnTwin | None:
    """`canonical.ascii_twin` of ``policy`` with its `query_spec`: what the compiled loop
    (core/_columns.c) takes; None when every row is ``canonicalize``'s."""
    twin = ascii_twin(policy)
    if twin is None:
        return None
    return (*twin, query_spec(policy) if twin[2] is not None else None)


@lru_cache(maxsize=64)
def query_spec(policy: Policy) -> QuerySpec | None:
    """The query rules of ``policy`` as the compiled loop runs them itself: which of
    drop-params, sort-query and drop-empty-query are on, the drop and keep specs as
    `params.parse_spec` reads them (``(host pattern or None, name patterns)``, lowercase), and
    the rules' names.  None when a pattern is more than the loop matches (a ``[...]`` class,
    which is also how a bracketed IP-literal host reads to fnmatch, or a character that is not
    ASCII, which a case-insensitive regex may fold onto an ASCII one): then
    `driver.query_rules_url` runs them, in Python."""
    drop, keep = (
        tuple(parse_spec(spec) for spec in specs)
        for specs in (policy.drop_params, policy.keep_params)
    )
    patterns = [p for spec in (*drop, *keep) for p in (spec.host or "", *spec.names)]
    if not all(p.isascii() and "[" not in p for p in patterns):
        return None
    on = [rule in policy.rules for rule in _QUERY_RULES]
    return on[0], on[1], on[2], drop, keep, _QUERY_RULES


def arrow_urls(values: Any, policy: Policy) -> Any:
    """`canonical_urls` of a pyarrow string column (Array or ChunkedArray), as a pyarrow
    ``large_string`` array."""
    return _arrow_map(
        values,
        (canonicalize, (policy,), 1, lambda text: columns([text], policy)[0][0]),
        lambda rows: canonical_urls(rows, policy),
        column_twin(policy),
    )


def arrow_surt_keys(values: Any, profile: str = "ia", policy: Policy | None = None) -> Any:
    """`surt_keys` of a pyarrow string column (Array or ChunkedArray), as a pyarrow
    ``large_string`` array."""
    if profile == "ia":
        return _arrow_map(
            values,
            (ia_key, (), -1, lambda text: surt_keys([text])[0]),
            lambda rows: surt_keys(rows, profile, policy),
        )
    return _arrow_pylist(values, lambda rows: surt_keys(rows, profile, policy))


def arrow_result(values: Any, policy: Policy) -> Any:
    """`columns` of a pyarrow string column (Array or ChunkedArray), as a pyarrow struct array
    of ``url`` (``large_string``), ``changed`` (``bool``) and ``rules``
    (``list<string>``)."""
    import pyarrow as pa  # type: ignore[import-untyped]  # no stubs; the caller's extra has it

    if _map_result is None:
        return _struct(pa, *columns(values.to_pylist(), policy))
    twin = column_twin(policy)
    parts = [
        _struct_of(
            pa, chunk, _map_result(_one_row, (policy,), -1, None, *_buffers(pa, chunk), twin)
        )
        for chunk in _chunks(pa, values)
    ]
    if len(parts) == 1:
        return parts[0]
    return pa.concat_arrays(parts) if parts else _struct(pa, [], [], [])


def _one_row(text: str, policy: Policy) -> tuple[str | None, bool | None, list[str] | None]:
    urls, changed, rules = columns([text], policy)
    return urls[0], changed[0], rules[0]


def _struct(pa: Any, urls: list[Any], changed: list[Any], rules: list[Any]) -> Any:
    return pa.StructArray.from_arrays(
        [pa.array(urls, pa.large_string()), pa.array(changed, pa.bool_()),
         pa.array(rules, pa.list_(pa.string()))],
        names=[URL, CHANGED, RULES],
    )  # fmt: skip


def _struct_of(pa: Any, chunk: Any, made: tuple[Any, ...]) -> Any:
    """The struct array of one chunk from the buffers `map_result` wrote."""
    url_nulls, url_bits, url_offs, url_data = made[:4]
    row_nulls, row_bits, changed, list_offs, name_offs, names = made[4:]
    n = len(chunk)

    def buffer(b: bytes | None) -> Any:
        return None if b is None else pa.py_buffer(b)

    url = pa.Array.from_buffers(
        pa.large_string(), n, [buffer(url_bits), buffer(url_offs), buffer(url_data)], url_nulls
    )
    flags = pa.Array.from_buffers(pa.bool_(), n, [buffer(row_bits), buffer(changed)], row_nulls)
    count = len(name_offs) // 4 - 1
    strings = pa.Array.from_buffers(pa.string(), count, [None, buffer(name_offs), buffer(names)])
    rules = pa.Array.from_buffers(
        pa.list_(pa.string()), n, [buffer(row_bits), buffer(list_offs)], row_nulls,
        children=[strings],
    )  # fmt: skip
    return pa.StructArray.from_arrays([url, flags, rules], names=[URL, CHANGED, RULES])


def _chunks(pa: Any, values: Any) -> list[Any]:
    return values.chunks if isinstance(values, pa.ChunkedArray) else [values]


def _buffers(pa: Any, chunk: Any) -> tuple[Any, ...]:
    """validity, offsets, data, offset, length, large: what the compiled loop reads of a string
    chunk (another string type, string_view, is cast to large_string first)."""
    if chunk.type not in (pa.string(), pa.large_string()):
        chunk = chunk.cast(pa.large_string())
    validity, offsets, data = chunk.buffers()
    return validity, offsets, data, chunk.offset, len(chunk), chunk.type == pa.large_string()


def _arrow_map(
    values: Any,
    call: tuple[Callable[..., Any], tuple[Any, ...], int, Callable[[str], str | None]],
    by_list: Callable[[list[Any]], list[str | None]],
    twin: ColumnTwin | None = None,
) -> Any:
    import pyarrow as pa

    if _map_strings is None:
        return _arrow_pylist(values, by_list)
    out = []
    for chunk in _chunks(pa, values):
        nulls, bits, offs, text = _map_strings(*call, *_buffers(pa, chunk), twin)
        buffers = [None if bits is None else pa.py_buffer(bits), pa.py_buffer(offs)]
        buffers.append(pa.py_buffer(text))
        out.append(pa.Array.from_buffers(pa.large_string(), len(chunk), buffers, nulls))
    if len(out) == 1:
        return out[0]
    return pa.concat_arrays(out) if out else pa.array([], pa.large_string())


def _arrow_pylist(values: Any, by_list: Callable[[list[Any]], list[str | None]]) -> Any:
    import pyarrow as pa

    return pa.array(by_list(values.to_pylist()), pa.large_string())
