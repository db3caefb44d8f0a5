"""URLs per second per core through urlsan.duckdb and urlsan.polars against the in-process loop
over `urlsan.core.canonicalize` on the same URLs, and SURT keys per second against the `surt`
package.

    .venv/bin/python bench/archive.py [--repeat 2] [--rounds 3]

Corpora: ada-kasztp.txt and ada-userbait.txt from ada-url/url-various-datasets (~59k real URLs,
see ../shared/data/SOURCES.md), repeated ``--repeat`` times.  All in this one process, one core:
DuckDB runs with ``threads=1`` (a Python UDF holds the GIL anyway), Polars on its column.  The
column is loaded into DuckDB's table or Polars' frame before the clock starts; the figure is the
query (``SELECT count(urlsan_canonicalize(url))``, ``select(pl.col("url").urlsan…)``) against
``[canonicalize(u, policy).url for u in urls]``, and the same functions through Python lists
(rows to a list, the list loop, a new array) instead of urlsan's compiled loop over Arrow's
buffers; the url, changed and rules columns (``urlsan_rules``, ``.urlsan.result()``) against
the loop that makes them as lists, ``urlsan.core.many.columns``.  CPU seconds of this process,
the paths interleaved round by round; the best of ``--rounds`` counts.  First, the share of
rows that leave the compiled path (a call of ``canonicalize``; the query rules, in Python).
Goals: DuckDB and
Polars at least 1.0x the loop; SURT keys (ia profile) at least 20x the surt package.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from corpus import load  # bench/corpus.py: this folder is on sys.path when run

HERE = Path(__file__).resolve().parent


def best(runs: list[Callable[[], object]], rounds: int) -> list[float]:
    """The best CPU seconds of each run, the runs interleaved round by round (a shared machine's
    load then weighs on all of them alike)."""
    times = [float("inf")] * len(runs)
    for _ in range(rounds):
        for k, run in enumerate(runs):
            start = time.process_time()
            run()
            times[k] = min(times[k], time.process_time() - start)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("--corpus-dir", type=Path, default=HERE.parent.parent / "shared" / "data")
    parser.add_argument("--repeat", type=int, default=2, help="repeat the corpus (default: 2)")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds; the best counts")
    args = parser.parse_args(argv)

    import duckdb
    import polars as pl
    import pyarrow as pa  # type: ignore[import-untyped]  # no stubs
    import surt as reference

    import urlsan.duckdb
    import urlsan.polars
    from urlsan._columns import build_policy, canonical_urls, columns
    from urlsan.core import canonicalize, surt

    urls = load(args.corpus_dir, args.repeat)
    n = len(urls)
    policy = build_policy("crawler")
    con = duckdb.connect(config={"threads": 1})
    urlsan.duckdb.register(con)
    con.execute("CREATE TABLE t (url VARCHAR)")
    con.execute("INSERT INTO t SELECT * FROM (SELECT unnest($1))", [urls])
    frame = pl.DataFrame({"url": urls})

    def duck(function: str) -> Callable[[], object]:
        return lambda: con.execute(f"SELECT count({function}(url)) FROM t").fetchall()

    # The same functions through Python lists (rows to a list, the list loop, a new array): the
    # way around the compiled loop over Arrow's buffers, for comparison.
    def by_lists(values: Any) -> Any:
        return pa.array(canonical_urls(values.to_pylist(), policy), pa.large_string())

    varchar = duckdb.sqltype("VARCHAR")
    con.create_function(
        "by_lists", by_lists, [varchar], varchar, type="arrow", null_handling="special"
    )
    lists_expr = pl.col("url").map_batches(
        lambda s: pl.Series(s.name, canonical_urls(s.to_list(), policy), pl.String),
        return_dtype=pl.String,
    )

    def polars(expression: pl.Expr) -> Callable[[], object]:
        return lambda: frame.select(expression)

    canon_rows = [
        ("loop: canonicalize(u).url", lambda: [canonicalize(u, policy).url for u in urls]),
        ("DuckDB urlsan_canonicalize", duck("urlsan_canonicalize")),
        ("Polars .urlsan.canonicalize()", polars(pl.col("url").urlsan.canonicalize())),
        ("DuckDB, through Python lists", duck("by_lists")),
        ("Polars, through Python lists", polars(lists_expr)),
    ]
    result_rows = [
        ("loop: many.columns(urls)", lambda: columns(urls, policy)),
        ("DuckDB urlsan_rules", duck("urlsan_rules")),
        ("DuckDB urlsan_changed", duck("urlsan_changed")),
        ("Polars .urlsan.result()", polars(pl.col("url").urlsan.result())),
    ]
    surt_rows = [
        ("surt package: surt.surt(u)", lambda: [reference.surt(u) for u in urls]),
        ("loop: urlsan surt(u)", lambda: [surt(u) for u in urls]),
        ("DuckDB urlsan_surt", duck("urlsan_surt")),
        ("Polars .urlsan.surt()", polars(pl.col("url").urlsan.surt())),
        ("loop: surt(u, profile='urlsan')", lambda: [surt(u, profile="urlsan") for u in urls]),
    ]
    tables = (
        ("canonical URLs", canon_rows),
        ("url, changed and rules", result_rows),
        ("SURT keys", surt_rows),
    )
    left_to_python(pa.array(urls), policy)
    for title, rows in tables:
        print(f"\n{title}: {n:,} URLs, CPU seconds of one core, best of {args.rounds}")
        print(f"{'path':34} {'URLs/s':>12} {'vs first':>9}")
        seconds = best([run for _, run in rows], args.rounds)
        for (name, _), took in zip(rows, seconds, strict=True):
            print(f"{name:34} {n / took:12,.0f} {seconds[0] / took:8.2f}x")
    return 0


def left_to_python(column: Any, policy: Any) -> None:
    """How many rows of the column leave the compiled path over Arrow's buffers, in one untimed
    pass with its two ways out counted: the call of `canonicalize` for a row the compiled twin
    does not serve, and the query rules (Python's) of a row it does."""
    from urlsan import _columns

    calls = {"canonicalize": 0, "query rules": 0}
    saved = _columns.canonicalize, _columns.ascii_twin
    twin = saved[1](policy)
    if twin is None:
        print("\nthe compiled twin is not loaded: every row is canonicalize's")
        return

    def counted(name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            calls[name] += 1
            return call(*args)

        return run

    query = None if twin[2] is None else counted("query rules", twin[2])
    _columns.canonicalize = counted("canonicalize", saved[0])  # type: ignore[assignment]
    _columns.ascii_twin = lambda _: (twin[0], twin[1], query, twin[3])  # type: ignore[assignment]
    try:
        _columns.arrow_urls(column, policy)
    finally:
        _columns.canonicalize, _columns.ascii_twin = saved  # type: ignore[assignment]
    n = len(column)
    print(f"\nrows of the url column that leave the compiled path ({n:,} rows, crawler profile)")
    for name, count in calls.items():
        print(f"  {name:14} {count:8,}  {count / n:7.2%}")


if __name__ == "__main__":
    raise SystemExit(main())
