"""Every Python snippet in docs/crawling.md runs, and prints what the page says it prints.

A snippet is a ```python block; an expression statement followed by comment lines ``# …`` must
have that repr, and a ``print(x)`` so followed must print that.  The body of an
``if __name__ == "__main__":`` guard is checked the same way.  Each snippet also runs as a user
runs it: saved to a script file, ``python snippet.py``.  A block that starts with
``# settings.py`` is a Scrapy settings module: it must configure urlsan's fingerprinter and
middleware without error.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
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


def _statements(tree: ast.Module) -> list[ast.stmt]:
    """The snippet's statements, those under an ``if __name__ == "__main__":`` guard included."""
    found: list[ast.stmt] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.If) and ast.unparse(stmt.test) == "__name__ == '__main__'":
            found += stmt.body
        else:
            found.append(stmt)
    return found


def _printed(stmt: ast.stmt) -> ast.expr | None:
    """``x`` of a ``print(x)`` statement."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        if isinstance(call.func, ast.Name) and call.func.id == "print" and len(call.args) == 1:
            return call.args[0]
    return None


def run(code: str) -> int:
    """Run a snippet statement by statement, checking each ``# repr`` comment; how many."""
    lines = code.splitlines()
    namespace: dict[str, Any] = {"__name__": "snippet"}
    checked = 0
    for stmt in _statements(ast.parse(code)):
        expected = []
        for line in lines[stmt.end_lineno or 0 :]:
            if not line.strip().startswith("# "):
                break
            expected.append(line.strip()[2:])
        printed = _printed(stmt)
        if isinstance(stmt, ast.Expr) and expected:
            shown = repr if printed is None else str
            expr = stmt.value if printed is None else printed
            value = eval(compile(ast.Expression(expr), "<snippet>", "eval"), namespace)
            assert shown(value) == "\n".join(expected), ast.unparse(stmt)
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


def _needs(code: str, request: pytest.FixtureRequest) -> None:
    """Skip, saying why, a snippet whose extra is not installed (never in CI, which has them)."""
    if "pyspark" in code:
        if os.environ.get("URLSAN_REQUIRE_SPARK") != "1":
            pytest.importorskip("pyspark", reason="the Spark snippet needs the spark extra")
        request.getfixturevalue("spark")  # the snippet's getOrCreate() gets this session
    for module in ("duckdb", "polars"):
        if f"import {module}" in code:
            pytest.importorskip(module, reason=f"the snippet needs the {module} extra")
    if "dask" in code:
        pytest.importorskip("distributed", reason="the Dask snippet needs the dask extra")


@pytest.mark.parametrize("code", snippets())
def test_snippet_as_a_script(code: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """What a user does with a snippet: save it to a file and run it.  Whatever it prints is
    what the page says, in order."""
    if code.startswith("# settings.py"):
        pytest.importorskip("scrapy")
    else:
        _needs(code, request)  # for Spark: a Java runtime, as the spark fixture finds it
    script = tmp_path / "snippet.py"
    script.write_text(code)
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = code.splitlines()
    expected = []
    for stmt in _statements(ast.parse(code)):
        if _printed(stmt) is not None:
            for line in lines[stmt.end_lineno or 0 :]:
                if not line.strip().startswith("# "):
                    break
                expected.append(line.strip()[2:])
    assert done.stdout.splitlines() == expected


@pytest.mark.parametrize("code", snippets())
def test_snippet(code: str, request: pytest.FixtureRequest) -> None:
    if code.startswith("# settings.py"):
        pytest.importorskip("scrapy")
        check_settings(code)
        return
    _needs(code, request)
    assert run(code) > 0, "a snippet shows no output to check"


def test_every_snippet_is_found() -> None:
    assert len(snippets()) >= 6
