"""urlsan in Polars: an expression namespace, ``.urlsan``, registered on import.

    import polars as pl
    import urlsan.polars  # noqa: F401  (registers the namespace)

    df.with_columns(
        canonical=pl.col("url").urlsan.canonicalize(),
        key=pl.col("url").urlsan.surt(),
    )

The namespace's methods, each an expression over a String column:

* ``canonicalize(profile="crawler", rules="", drop_params=(), keep_params=(), policy=None)``
  → String: the canonical URL;
* ``changed(…)`` → Boolean: whether it differs from the input; ``rules(…)`` → List(String):
  the rules that fired, each once, in the order they ran; ``result(…)`` → Struct of the three
  (``url``, ``changed``, ``rules``), for all of them at once;
* ``surt(profile="ia", policy=None)`` → String: the SURT key (`urlsan.core.surt`): ``"ia"``,
  as ``surt.surt`` and CDX indexes write it, or ``"urlsan"``, which never merges two URLs that
  `canonicalize` keeps apart.

Null in, null out; a blank URL gives null too.  A URL the policy refuses (the ``strict``
profile, the opt-in ``reject-escaped-slash``) gives a null URL, ``changed`` false and the
refusing rule in ``rules``; a URL the SURT profile cannot key gives a null key.  Polars hands
each expression a whole column (a batch in streaming mode), so Python is entered once per
batch, not once per row.  Needs polars: ``pip install 'urlsan[polars]'``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable

import polars as pl

from urlsan._columns import (
    arrow_result,
    arrow_surt_keys,
    arrow_urls,
    build_policy,
    canonical_urls,
    columns,
    surt_keys,
)
from urlsan.core import Policy

__all__ = ["UrlsanNamespace"]

# With pyarrow (which Polars' to_arrow needs), the url and SURT columns go through Arrow's
# buffers (urlsan._columns.arrow_urls); without it, through lists.
_ARROW = importlib.util.find_spec("pyarrow") is not None
_RULES = pl.List(pl.String)
_RESULT = pl.Struct({"url": pl.String, "changed": pl.Boolean, "rules": _RULES})


@pl.api.register_expr_namespace("urlsan")
class UrlsanNamespace:
    """``pl.col(…).urlsan``: canonical URLs, what changed, and SURT keys."""

    def __init__(self, expr: pl.Expr) -> None:
        self._expr = expr

    def canonicalize(
        self,
        profile: str = "crawler",
        rules: str = "",
        drop_params: str | Iterable[str] = (),
        keep_params: str | Iterable[str] = (),
        policy: Policy | None = None,
    ) -> pl.Expr:
        """The canonical URL under the policy the arguments name (``policy`` overrides them)."""
        chosen = policy or build_policy(profile, rules, drop_params, keep_params)

        def batch(values: pl.Series) -> pl.Series:
            if _ARROW:
                return pl.Series(values.name, arrow_urls(values.to_arrow(), chosen), pl.String)
            return pl.Series(values.name, canonical_urls(values.to_list(), chosen), pl.String)

        return self._expr.map_batches(batch, return_dtype=pl.String)

    def changed(
        self,
        profile: str = "crawler",
        rules: str = "",
        drop_params: str | Iterable[str] = (),
        keep_params: str | Iterable[str] = (),
        policy: Policy | None = None,
    ) -> pl.Expr:
        """Whether the canonical URL differs from the input."""
        return self._column(1, pl.Boolean, profile, rules, drop_params, keep_params, policy)

    def rules(
        self,
        profile: str = "crawler",
        rules: str = "",
        drop_params: str | Iterable[str] = (),
        keep_params: str | Iterable[str] = (),
        policy: Policy | None = None,
    ) -> pl.Expr:
        """The rules that fired, each once, in the order they ran."""
        return self._column(2, _RULES, profile, rules, drop_params, keep_params, policy)

    def result(
        self,
        profile: str = "crawler",
        rules: str = "",
        drop_params: str | Iterable[str] = (),
        keep_params: str | Iterable[str] = (),
        policy: Policy | None = None,
    ) -> pl.Expr:
        """A struct of ``url``, ``changed`` and ``rules``, from one pass over the column."""
        chosen = policy or build_policy(profile, rules, drop_params, keep_params)

        def batch(values: pl.Series) -> pl.Series:
            return _result(values, chosen).to_struct(values.name)

        return self._expr.map_batches(batch, return_dtype=_RESULT)

    def surt(self, profile: str = "ia", policy: Policy | None = None) -> pl.Expr:
        """The SURT key: ``"ia"`` (``org,archive)/index.html``) or ``"urlsan"``; ``policy`` is
        the urlsan profile's canonicalization (`canonicalize`'s default when None)."""
        surt_keys([], profile)  # a bad profile fails here, not when the query runs

        def batch(values: pl.Series) -> pl.Series:
            if _ARROW:
                keys = arrow_surt_keys(values.to_arrow(), profile, policy)
                return pl.Series(values.name, keys, pl.String)
            return pl.Series(values.name, surt_keys(values.to_list(), profile, policy), pl.String)

        return self._expr.map_batches(batch, return_dtype=pl.String)

    def _column(
        self,
        index: int,
        dtype: pl.DataType | type[pl.DataType],
        profile: str,
        rules: str,
        drop_params: str | Iterable[str],
        keep_params: str | Iterable[str],
        policy: Policy | None,
    ) -> pl.Expr:
        chosen = policy or build_policy(profile, rules, drop_params, keep_params)

        def batch(values: pl.Series) -> pl.Series:
            return _result(values, chosen).to_series(index).rename(values.name)

        return self._expr.map_batches(batch, return_dtype=dtype)


def _result(values: pl.Series, policy: Policy) -> pl.DataFrame:
    """The url, changed and rules columns of a batch: from Arrow's buffers (`arrow_result`)
    where pyarrow is installed, else through lists."""
    if _ARROW:
        made = arrow_result(values.to_arrow(), policy)
        return pl.DataFrame(
            [
                pl.Series(name, made.field(name), dtype)
                for name, dtype in _RESULT.to_schema().items()
            ]
        )
    urls, changed, fired = columns(values.to_list(), policy)
    return pl.DataFrame([urls, changed, fired], schema=_RESULT.to_schema(), orient="col")
