"""URLs per second per core through urlsan.duckdb and urlsan.polars against the in-process loop
over `urlsan.core.canonicalize` on the same URLs, and SURT keys per second against the `surt`
package.

    .venv/bin/python bench/archive.py [--repeat 2] [--rounds 3] [--seed 1]

Corpora: ada-kasztp.txt and ada-userbait.txt from ada-url/url-various-datasets (~59k real URLs,
see ../shared/data/SOURCES.md), repeated ``--repeat`` times; and the same URLs spelled dirty by
bench/dirty.py's generator (`dirty.spell`: escapes, case, dot segments, backslashes, IP
literals, a finding kind's example now and then), each repetition spelled anew from
``--seed``, so that no URL repeats: the canonical URLs and the url, changed and rules columns on
both, under the crawler profile (its query rules included).  All in this one process, one core:
DuckDB runs with ``threads=1`` (a Python UDF holds the GIL anyway), Polars on its column.  The
column is loaded into DuckDB's table or Polars' frame before the clock starts; the figure is the
query (``SELECT count(urlsan_canonicalize(url))``, ``select(pl.col("url").urlsan…)``) against
``[canonicalize(u, policy).url for u in urls]``, and the same functions through Python lists
(rows to a list, the list loop, a new array) instead of urlsan's compiled loop over Arrow's
buffers; the url, changed and rules columns (``urlsan_rules``, ``.urlsan.result()``) against
the loop that makes them as lists, ``urlsan.core.many.columns``.  CPU seconds of this process,
the paths interleaved round by round; the best of ``--rounds`` counts.  First, for each corpus,
the share of rows that leave the compiled path (a call of ``canonicalize``; the query rules, in
Python).  Goals: DuckDB and Polars at least 2x the loop on the dirty URLs; SURT keys (ia
profile) at least 20x the surt package.
"""

from __future__ import annotations

import argparse
import random
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
    parser.add_argument("--seed", type=int, default=1, help="the dirty spellings' first seed")
    args = parser.parse_args(argv)

    import duckdb
    import polars as pl
    import pyarrow as pa  # type: ignore[import-untyped]  # no stubs
    import surt as reference
    from dirty import spell  # bench/dirty.py

    import urlsan.duckdb
    import urlsan.polars
    from urlsan._columns import build_policy, canonical_urls, columns
    from urlsan.core import canonicalize, surt

    urls = load(args.corpus_dir, args.repeat)
    real = load(args.corpus_dir)
    dirty: list[str] = []
    for k in range(args.repeat):  # each repetition spelled anew: no URL is seen twice
        rng = random.Random(args.seed + k)
        dirty += [spell(u, rng) for u in real]
    policy = build_policy("crawler")
    con = duckdb.connect(config={"threads": 1})
    urlsan.duckdb.register(con)
    frames = {}
    for table, rows in (("t", urls), ("dirty", dirty)):
        con.execute(f"CREATE TABLE {table} (url VARCHAR)")
        con.execute(f"INSERT INTO {table} SELECT * FROM (SELECT unnest($1))", [rows])
        frames[table] = pl.DataFrame({"url": rows})

    def duck(function: str, table: str = "t") -> Callable[[], object]:
        return lambda: con.execute(f"SELECT count({function}(url)) FROM {table}").fetchall()

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

    def polars(expression: pl.Expr, table: str = "t") -> Callable[[], object]:
        return lambda: frames[table].select(expression)

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
    dirty_rows = [
        ("loop: canonicalize(u).url", lambda: [canonicalize(u, policy).url for u in dirty]),
        ("DuckDB urlsan_canonicalize", duck("urlsan_canonicalize", "dirty")),
        ("Polars .urlsan.canonicalize()", polars(pl.col("url").urlsan.canonicalize(), "dirty")),
        ("loop: many.columns(urls)", lambda: columns(dirty, policy)),
        ("DuckDB urlsan_rules", duck("urlsan_rules", "dirty")),
        ("Polars .urlsan.result()", polars(pl.col("url").urlsan.result(), "dirty")),
    ]
    tables = (
        ("canonical URLs", canon_rows, len(urls)),
        ("url, changed and rules", result_rows, len(urls)),
        ("SURT keys", surt_rows, len(urls)),
        ("dirty URLs, crawler profile (ratios: the loop above each)", dirty_rows, len(dirty)),
    )
    left_to_python(pa.array(urls), policy, "real URLs")
    left_to_python(pa.array(dirty), policy, "dirty spellings")
    for title, rows, n in tables:
        print(f"\n{title}: {n:,} URLs, CPU seconds of one core, best of {args.rounds}")
        print(f"{'path':34} {'URLs/s':>12} {'vs first':>9}")
        seconds = best([run for _, run in rows], args.rounds)
        base = seconds[0]
        for (name, _), took in zip(rows, seconds, strict=True):
            base = took if name.startswith("loop") and rows is dirty_rows else base
            print(f"{name:34} {n / took:12,.0f} {base / took:8.2f}x")
    return 0


def left_to_python(column: Any, policy: Any, what: str) -> None:
    """How many rows of the column leave the compiled path over Arrow's buffers, in one untimed
    pass with its two ways out counted: the call of `canonicalize` for a row the compiled twin
    does not serve, and the query rules in Python of a row it does (none when the compiled loop
    runs them: `urlsan._columns.query_spec`)."""
    from urlsan import _columns

    calls = {"canonicalize": 0, "query rules": 0}
    saved = _columns.canonicalize, _columns.column_twin
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
    _columns.column_twin = lambda _: (*twin[:2], query, *twin[3:])  # type: ignore[assignment]
    try:
        _columns.arrow_urls(column, policy)
    finally:
        _columns.canonicalize, _columns.column_twin = saved  # type: ignore[assignment]
    n = len(column)
    print(f"\nrows of the url column that leave the compiled path ({what}: {n:,} rows, crawler")
    print("profile)")
    for name, count in calls.items():
        print(f"  {name:14} {count:8,}  {count / n:7.2%}")


if __name__ == "__main__":
    raise SystemExit(main())
