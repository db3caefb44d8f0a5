"""urlsan.duckdb against a real DuckDB: the SQL functions, NULLs, the policy options, SURT keys."""

from __future__ import annotations

from typing import Any

import pytest

from urlsan.core import canonicalize, surt
from urlsan.core.options import policy_from_options

duckdb = pytest.importorskip("duckdb", reason="urlsan.duckdb needs the duckdb extra")
pytest.importorskip("pyarrow", reason="urlsan.duckdb needs the duckdb extra")
import urlsan.duckdb  # noqa: E402

URLS = [
    "HTTP://www.Example.com/a/../b?utm_source=x&z=1",
    None,
    "  ",
    "http://example.com/ok",
    "http://a:x/",
    "https://Bücher.example/ü?b=2&a=1#f",
]


@pytest.fixture
def con() -> Any:
    con = duckdb.connect()
    con.execute("CREATE TABLE t (i INTEGER, u VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?)", list(enumerate(URLS)))
    yield con
    con.close()


def _column(con: Any, expression: str) -> list[Any]:
    return [row[0] for row in con.sql(f"SELECT {expression} FROM t ORDER BY i").fetchall()]


def test_functions_agree_with_the_library(con: Any) -> None:
    urlsan.duckdb.register(con)
    policy = policy_from_options("crawler", "", (), ())
    expected = [
        None if u is None or not u.strip() else canonicalize(u.strip(), policy) for u in URLS
    ]
    assert _column(con, "urlsan_canonicalize(u)") == [r and r.url for r in expected]
    assert _column(con, "urlsan_changed(u)") == [r and r.changed for r in expected]
    rules = _column(con, "urlsan_rules(u)")
    assert rules[0] == ["lowercase-scheme", "lowercase-host", "remove-dot-segments", "drop-params"]
    assert rules[1] is None and rules[3] == []


def test_surt_keys(con: Any) -> None:
    urlsan.duckdb.register(con)
    keys = _column(con, "urlsan_surt(u)")
    assert keys[0] == surt(URLS[0]) == "com,example)/b?utm_source=x&z=1"
    assert keys[1] is None and keys[2] is None
    assert keys[4] is None  # a port that is not a number: no ia key
    assert _column(con, "urlsan_surt_urlsan(u)")[5] == surt(URLS[5], profile="urlsan")


def test_options_choose_the_policy_and_profile(con: Any) -> None:
    urlsan.duckdb.register(con, profile="rfc3986", surt_profile="urlsan", prefix="x_")
    assert _column(con, "x_canonicalize(u)")[0] == "http://www.example.com/b?utm_source=x&z=1"
    assert _column(con, "x_surt(u)")[3] == "http://(com,example,)/ok"
    with pytest.raises(ValueError, match="profile"):
        urlsan.duckdb.register(con, profile="nope")
    with pytest.raises(ValueError, match="SURT profile"):
        urlsan.duckdb.register(con, surt_profile="nope")


def test_register_twice_and_in_where(con: Any) -> None:
    urlsan.duckdb.register(con)
    urlsan.duckdb.register(con, drop_params=["z"])
    assert _column(con, "urlsan_canonicalize(u)")[0] == "http://www.example.com/b"
    count = con.execute("SELECT count(*) FROM t WHERE urlsan_changed(u)").fetchone()[0]
    assert count == 3


def test_many_vectors() -> None:
    # More rows than one DuckDB vector (2,048): every vector goes through the function.
    con = duckdb.connect()
    urlsan.duckdb.register(con)
    rows = con.execute(
        "SELECT count(DISTINCT urlsan_surt('http://WWW.example.com/p/' || i || '/')) "
        "FROM range(5000) r(i)"
    ).fetchone()
    assert rows == (5000,)
