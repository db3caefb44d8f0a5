"""Every Python snippet in docs/crawling.md runs, and prints what the page says it prints.

A snippet is a ```python block; an expression statement followed by comment lines ``# …`` must
have that repr.  A block that starts with ``# settings.py`` is a Scrapy settings module: it must
configure urlsan's fingerprinter and middleware without error.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path
from typing import Any

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "crawling.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def snippets() -> list[Any]:
    text = DOC.read_text()
    found = []
    for m in _BLOCK.finditer(text):
        line = text.count("\n", 0, m.start()) + 2
        found.append(pytest.param(m.group(1), id=f"crawling.md:{line}"))
    return found


def run(code: str) -> int:
    """Run a snippet statement by statement, checking each ``# repr`` comment; how many."""
    lines = code.splitlines()
    namespace: dict[str, Any] = {"__name__": "snippet"}
    checked = 0
    for stmt in ast.parse(code).body:
        expected = []
        for line in lines[stmt.end_lineno or 0 :]:
            if not line.startswith("# "):
                break
            expected.append(line[2:])
        if isinstance(stmt, ast.Expr) and expected:
            value = eval(compile(ast.Expression(stmt.value), "<snippet>", "eval"), namespace)
            assert repr(value) == "\n".join(expected), ast.unparse(stmt)
            checked += 1
        else:
            exec(compile(ast.Module([stmt], []), "<snippet>", "exec"), namespace)
    return checked


def check_settings(code: str) -> None:
    from scrapy.utils.misc import load_object
    from scrapy.utils.test import get_crawler

    namespace: dict[str, Any] = {}
    exec(code, namespace)
    settings = {k: v for k, v in namespace.items() if k.isupper()}
    crawler = get_crawler(settings_dict=settings)
    fingerprinter = load_object(settings["REQUEST_FINGERPRINTER_CLASS"]).from_crawler(crawler)
    (middleware,) = settings["DOWNLOADER_MIDDLEWARES"]
    load_object(middleware).from_crawler(crawler)
    assert fingerprinter.policy.enabled("merge-slashes")


@pytest.mark.parametrize("code", snippets())
def test_snippet(code: str, request: pytest.FixtureRequest) -> None:
    if code.startswith("# settings.py"):
        pytest.importorskip("scrapy")
        check_settings(code)
        return
    if "pyspark" in code:
        if os.environ.get("URLSAN_REQUIRE_SPARK") != "1":
            pytest.importorskip("pyspark", reason="the Spark snippet needs the spark extra")
        request.getfixturevalue("spark")  # the snippet's getOrCreate() gets this session
    for module in ("duckdb", "polars"):
        if f"import {module}" in code:
            pytest.importorskip(module, reason=f"the snippet needs the {module} extra")
    if "dask" in code:
        pytest.importorskip("distributed", reason="the Dask snippet needs the dask extra")
    assert run(code) > 0, "a snippet shows no output to check"


def test_every_snippet_is_found() -> None:
    assert len(snippets()) >= 6
