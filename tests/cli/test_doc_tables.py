"""What the documentation says about the code comes from the code: the options tables are
generated from the option table (tools/doc_tables.py), and the lists of formats and extras are
held equal to their sources here.  A help text names a documentation page, never a path of the
repository that an installed wheel lacks."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

import pytest
from cli_harness import RunUrlsan

from urlsan.audit import sources
from urlsan.cli import audit
from urlsan.cli.main import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
# The extras for working on urlsan, not for using it: docs/install.md lists them, the README not.
DEVELOPMENT = {"test", "peers", "fuzz", "docs"}


def _text(path: str) -> str:
    return (ROOT / path).read_text(encoding="utf-8")


def _doc_tables() -> object:
    spec = importlib.util.spec_from_file_location("doc_tables", ROOT / "tools" / "doc_tables.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_options_tables_are_generated_from_the_option_table() -> None:
    tables = _doc_tables()
    for path in sorted({file for file, _ in tables.BLOCKS}):  # type: ignore[attr-defined]
        text = _text(path)
        assert tables.rendered(path, text) == text, f"{path}: run python tools/doc_tables.py"  # type: ignore[attr-defined]


def test_a_block_without_its_markers_is_an_error() -> None:
    with pytest.raises(ValueError, match="no <!-- generated: proxy-options"):
        _doc_tables().rendered("docs/proxy.md", "no markers here")  # type: ignore[attr-defined]


def _first_column(text: str, header: str) -> list[str]:
    """The backticked names in the first column of the table whose header row is ``header``."""
    names = []
    for row in text.split(header + "\n", 1)[1].splitlines()[1:]:
        if not row.startswith("|"):
            break
        names += re.findall(r"`([^`]+)`", row.split("|")[1])
    return names


def test_the_formats_audit_reads_are_listed_everywhere(urlsan: RunUrlsan) -> None:
    assert tuple(audit.FORMAT_TITLES) == sources.FORMATS
    assert _first_column(_text("docs/cli.md"), "| format | written by | what is read |") == list(
        sources.FORMATS
    )
    assert f"--format {'|'.join(sources.FORMATS)}" in _text("docs/cli.md").replace("`", "")
    shown = " ".join(urlsan("audit", "--help").out.decode().split())
    for title in audit.FORMAT_TITLES.values():
        assert " ".join(title.split()) in shown
    readme = " ".join(_text("README.md").split())
    paragraph = readme[readme.index("`urlsan audit` checks traffic recorded elsewhere") :][:400]
    for word in ("flow files", "HAR", "access logs", "WARC", r"CDX\b", "CDXJ"):
        assert re.search(word, paragraph), word


def test_the_extras_are_listed_as_pyproject_declares_them() -> None:
    declared = tomllib.loads(_text("pyproject.toml"))["project"]["optional-dependencies"]
    table = _first_column(_text("docs/install.md"), "| extra | what it brings | for |")
    assert sorted(table) == sorted(declared)
    readme = " ".join(_text("README.md").split())
    sentence = re.search(r"The other extras are (.*?);", readme)
    assert sentence is not None
    assert set(re.findall(r"`(\w+)`", sentence.group(1))) == set(declared) - DEVELOPMENT - {"proxy"}


@pytest.mark.parametrize("command", [[], *([c] for c in COMMANDS), ["proxy"]])
def test_no_help_names_a_path_of_the_repository(urlsan: RunUrlsan, command: list[str]) -> None:
    """Every subcommand's --help: an installed wheel has no docs/ (nor addon/script.py)."""
    if command == ["proxy"]:
        pytest.importorskip("mitmproxy")
    run = urlsan(*command, "--help")
    text = run.out.decode()
    assert run.status == 0 and "usage" in text
    assert not re.search(r"\bdocs/|\w\.md\b|addon/script", text), text
