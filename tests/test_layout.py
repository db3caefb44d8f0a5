"""The layout's dependency rules (README, Layout): each folder is one use of the product, and the
canonicalizer stays usable without the command line, the audit log or mitmproxy."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIRS: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"][
    "setuptools"
]["package-dir"]

# What each package must not import: sibling packages of urlsan, and top-level modules.
FORBIDDEN: dict[str, set[str]] = {
    "urlsan.core": {
        "urlsan.addon",
        "urlsan.audit",
        "urlsan.cli",
        "argparse",
        "mitmproxy",
        "urlsan.scrapy",
        "urlsan.spark",
        "urlsan.dask",
    },
    "urlsan.audit": {"urlsan.addon", "urlsan.cli", "mitmproxy"},
    "urlsan.addon": {"urlsan.cli"},
}


def _module_level(tree: ast.AST) -> list[ast.AST]:
    """The nodes that run on import: a function's body runs only when it is called (the flow
    file reader imports mitmproxy there, and only for a flow file)."""
    out: list[ast.AST] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        out.append(node)
        out += _module_level(node)
    return out


def imports(package: str) -> set[tuple[str, str]]:
    """(file, absolute module name) for every import that runs when ``package`` is imported."""
    found = set()
    for path in sorted((ROOT / PACKAGE_DIRS[package]).glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in _module_level(tree):
            if isinstance(node, ast.Import):
                found |= {(path.name, alias.name) for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")
                if node.level:
                    base = base[: len(base) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                found.add((path.name, module))
                found |= {(path.name, f"{module}.{alias.name}") for alias in node.names}
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_dependency_rules(package: str) -> None:
    def forbidden(module: str) -> bool:
        return any(module == f or module.startswith(f + ".") for f in FORBIDDEN[package])

    wrong = sorted((f, m) for f, m in imports(package) if forbidden(m))
    assert not wrong, f"{package} imports what it must not: {wrong}"


def test_imports_inside_the_product_are_relative() -> None:
    """So that an editor or a structure tool maps each import to its file in the checkout."""
    absolute = []
    for package, folder in PACKAGE_DIRS.items():
        if package == "urlsan":
            continue  # the root package: the integrations import the public API as a user does
        for path in sorted((ROOT / folder).glob("*.py")):
            if path.name == "script.py":
                continue  # `mitmdump -s addon/script.py` runs it as a file, outside the package
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.ImportFrom)
                    and node.level == 0
                    and (node.module or "").split(".")[0] == "urlsan"
                ):
                    absolute.append(f"{folder}/{path.name}: from {node.module}")
    assert not absolute


def test_importing_the_core_loads_no_command_line_and_no_proxy() -> None:
    code = (
        "import sys, urlsan.core; urlsan.core.canonicalize('/a');"
        "bad = [m for m in ('argparse', 'mitmproxy', 'urlsan.cli', 'urlsan.audit', "
        "'urlsan.addon') if m in sys.modules]; print(bad); sys.exit(bool(bad))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr


def test_reading_audit_logs_loads_no_mitmproxy() -> None:
    code = (
        "import sys, pkgutil, importlib, urlsan.audit as a;"
        "[importlib.import_module('urlsan.audit.' + m.name)"
        " for m in pkgutil.iter_modules(a.__path__)];"
        "sys.exit('mitmproxy' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr


def test_every_module_says_what_it_holds() -> None:
    missing = []
    for folder in PACKAGE_DIRS.values():
        for path in sorted((ROOT / folder).glob("*.py")):
            if not ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))):
                missing.append(f"{folder}/{path.name}")
    assert not missing


def test_the_proxy_decision_loads_no_mitmproxy() -> None:
    """What a request becomes is decided without mitmproxy: ``urlsan audit`` of an access log
    or a HAR needs none, and a worker process imports only this."""
    code = (
        "import sys, urlsan.addon.decision as d;"
        "s = d.settings('reject', 'strict');"
        "print(d.examine(d.Request(None, '', 'GET', 'http', 'h', b'/a b', '', ''), s).action);"
        "sys.exit('mitmproxy' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "rejected"


def _calls(path: Path, module: str) -> set[str]:
    """The attributes of ``module`` that the file at ``path`` calls (``module.name(...)``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == module
    }


def test_the_proxy_and_urlsan_audit_decide_in_one_place() -> None:
    addon = _calls(ROOT / "addon" / "sanitizer.py", "decision")
    audit = _calls(ROOT / "cli" / "audit.py", "decision")
    # Both ask `examine` (which checks, answers oversize or decides) and apply what it says:
    # the addon repeats none of its steps.
    assert {"settings", "examine", "record"} <= audit
    assert {"settings", "examine", "record"} <= addon
    assert not addon & {"check", "decide", "oversize", "untouched"}
    # The defaults the decision holds are written nowhere else.
    for folder in ("addon", "cli", "audit"):
        for path in sorted((ROOT / folder).glob("*.py")):
            if path.name != "decision.py":
                assert "+strip-fragment" not in path.read_text(encoding="utf-8"), path


def test_no_function_is_over_complexity_20() -> None:
    """Radon's count (boolean operators included), which ruff's mccabe check does not make."""
    from radon.complexity import cc_visit

    over = []
    for folder in PACKAGE_DIRS.values():
        for path in sorted((ROOT / folder).glob("*.py")):
            for block in cc_visit(path.read_text(encoding="utf-8")):
                if block.complexity > 20:
                    over.append(f"{folder}/{path.name}: {block.fullname} {block.complexity}")
    assert not over


def test_the_tables_derived_from_the_rule_declarations_equal_them() -> None:
    """Each rule is declared once (core/pipeline.py); every table made from it says the same."""
    from urlsan.core import driver, pipeline, policy

    rules = pipeline.RULES
    steps = {(s.component, s.name, s.when) for s in pipeline.PIPELINE}
    assert set(driver._HANDLERS) == steps  # a handler per step, none idle
    assert set(driver._NEEDS) | driver._ALWAYS <= steps
    assert tuple(r.name for r in rules) == policy.RULE_NAMES
    assert {r.name for r in rules if r.required} == policy.REQUIRED_RULES
    assert {r.name for r in rules if r.twin == pipeline.TWIN_AFTER} == policy.QUERY_RULES
    for name, on in policy.PROFILES.items():
        expected = {r.name for r in rules if not r.lossy or (name == "crawler" and r.crawler)}
        assert on == expected, name
    assert all(r.twin in pipeline.TWIN_KINDS for r in rules)
    # docs/rules.md's rules table: written by tools/doc_tables.py, which
    # tests/cli/test_doc_tables.py holds to what it writes; here, that it writes every rule.
    from urlsan.cli.rules import markdown_table

    rows = [line for line in markdown_table().splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == [r.name for r in rules]


def test_urlsan_rules_prints_the_declarations() -> None:
    import json

    from urlsan.core.pipeline import RULES

    out = subprocess.run(
        [sys.executable, "-m", "urlsan", "rules", "--json"],
        capture_output=True,
        check=True,
        text=True,
    ).stdout
    rows = json.loads(out)
    said = [(r["name"], r["section"], r["lossy"], r["summary"]) for r in rows]
    assert said == [(r.name, r.section, r.lossy, r.plain) for r in RULES]


def _module_names() -> dict[str, Path]:
    """Every module of the product by its dotted name (a package by its ``__init__``, a compiled
    module by its stub)."""
    names = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in sorted((ROOT / folder).glob("*.py*")):
            if path.suffix in (".py", ".pyi"):
                name = package if path.stem == "__init__" else f"{package}.{path.stem}"
                names.setdefault(name, path)
    return names


def _imported(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The product's modules that ``module`` imports anywhere in its file: at module level, in a
    function, under ``TYPE_CHECKING`` (each is a dependency, whether it runs on import or later)."""
    package = module if path.stem == "__init__" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            # `from . import archive` imports the module archive; `from .x import y`, module x.
            found |= {
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            }
    return {name for name in found if name in known and name != module}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def test_no_modules_import_each_other_in_a_circle() -> None:
    """A circle works only by the order of its imports (or by an import hidden in a function):
    each module stands on those it imports, never on one that imports it back."""
    known = _module_names()
    graph = {module: _imported(module, path, known) for module, path in known.items()}
    assert _circles(graph) == []


def test_the_circle_finder_finds_circles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(graph) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []
