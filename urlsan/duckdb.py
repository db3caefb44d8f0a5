"""urlsan in DuckDB: vectorized SQL functions over Arrow, registered on a connection.

    import duckdb
    import urlsan.duckdb

    con = duckdb.connect()
    urlsan.duckdb.register(con)
    con.sql("SELECT urlsan_canonicalize(url), urlsan_surt(url) FROM 'crawl.parquet'")

`register` adds, for a VARCHAR argument:

* ``urlsan_canonicalize(url)`` → VARCHAR: the canonical URL under the policy;
* ``urlsan_changed(url)`` → BOOLEAN: whether it differs from the input;
* ``urlsan_rules(url)`` → VARCHAR[]: the rules that fired, each once, in the order they ran;
* ``urlsan_surt(url)`` → VARCHAR: the SURT key (`urlsan.core.surt`), the ia profile by default,
  as ``surt.surt`` and CDX indexes write it;
* ``urlsan_surt_urlsan(url)`` → VARCHAR: the key of urlsan's meaning-preserving form
  (``profile="urlsan"``), which never merges two URLs that `canonicalize` keeps apart.

NULL in, NULL out; a blank URL gives NULL too.  A URL the policy refuses (the ``strict``
profile, the opt-in ``reject-escaped-slash``) gives a NULL URL, ``changed`` false and the
refusing rule in ``urlsan_rules``; a URL the SURT profile cannot key (a port that is not a
number) gives a NULL key.  DuckDB hands each function a vector of rows (2,048) as one Arrow
array at a time, so Python is entered once per vector, not once per row; the url and SURT
columns are read from and written to Arrow's buffers by a compiled loop, without a list of
rows.  Needs duckdb and pyarrow: ``pip install 'urlsan[duckdb]'``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any

import duckdb
import pyarrow  # type: ignore[import-untyped]  # noqa: F401  # needed: fail at import

from urlsan._columns import arrow_result, arrow_surt_keys, arrow_urls, build_policy, surt_keys
from urlsan.core import Policy

__all__ = ["register"]


def _url_column(policy: Policy) -> Callable[[Any], Any]:
    def batch(values: Any) -> Any:
        return arrow_urls(values, policy)

    return batch


def _result_column(policy: Policy, field: str) -> Callable[[Any], Any]:
    def batch(values: Any) -> Any:
        return arrow_result(values, policy).field(field)

    return batch


def _surt_column(profile: str, policy: Policy | None) -> Callable[[Any], Any]:
    def batch(values: Any) -> Any:
        return arrow_surt_keys(values, profile, policy)

    return batch


def register(
    con: duckdb.DuckDBPyConnection,
    *,
    profile: str = "crawler",
    rules: str = "",
    drop_params: str | Iterable[str] = (),
    keep_params: str | Iterable[str] = (),
    policy: Policy | None = None,
    surt_profile: str = "ia",
    prefix: str = "urlsan_",
) -> duckdb.DuckDBPyConnection:
    """Add urlsan's SQL functions (the module's docstring lists them) to ``con``; returns it.

    ``profile``, ``rules``, ``drop_params`` and ``keep_params`` choose the canonicalization
    policy as `urlsan canon`'s options do (``policy`` overrides them); ``surt_profile`` is the
    profile of ``urlsan_surt`` (``"ia"`` or ``"urlsan"``).  ``prefix`` starts each function's
    name.  `ValueError` names a bad option; registering twice on one connection replaces the
    functions."""
    if policy is None:
        policy = build_policy(profile, rules, drop_params, keep_params)
    surt_keys([], surt_profile)  # a bad profile fails here, not at the first query
    varchar, boolean = duckdb.sqltype("VARCHAR"), duckdb.sqltype("BOOLEAN")
    functions = [
        ("canonicalize", _url_column(policy), varchar),
        ("changed", _result_column(policy, "changed"), boolean),
        ("rules", _result_column(policy, "rules"), duckdb.list_type(varchar)),
        ("surt", _surt_column(surt_profile, None), varchar),
        ("surt_urlsan", _surt_column("urlsan", None), varchar),
    ]
    for name, function, returns in functions:
        full = prefix + name
        with contextlib.suppress(duckdb.InvalidInputException):  # not registered yet
            con.remove_function(full)
        create: Any = (
            con.create_function
        )  # duckdb's stubs type the Arrow kind's function too narrowly
        create(full, function, [varchar], returns, type="arrow", null_handling="special")
    return con
