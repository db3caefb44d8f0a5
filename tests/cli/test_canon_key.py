"""`urlsan canon --key surt` (cli/canon.py): SURT keys, one line each, in input order."""

from __future__ import annotations

from pathlib import Path

import pytest

from urlsan.cli.main import main
from urlsan.core import surt


def test_keys_of_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "urls.txt"
    source.write_text("http://www.Archive.org/Index.html?b=1&a=2\nhttp://a:x/\n\nhttp://b.org/\n")
    out = tmp_path / "keys.txt"
    status = main(["canon", "--key", "surt", "-i", str(source), "-o", str(out)])
    assert status == 3  # the line whose port is not a number is a bad line, passed unchanged
    assert out.read_text().splitlines() == [
        "org,archive)/index.html?a=2&b=1",
        "http://a:x/",
        "-",
        "org,b)/",
    ]
    assert "line 2" in capsys.readouterr().err


def test_urlsan_profile_and_skip(capsys: pytest.CaptureFixture[str]) -> None:
    url = "HTTP://www.Example.com:80/A/./b?z=1&a=2"
    status = main(["canon", "--key", "surt", "--key-profile", "urlsan", url, "http://a:x/"])
    assert status == 0
    assert capsys.readouterr().out.splitlines() == [
        surt(url, profile="urlsan"),
        "http://(a%3Ax,)/",
    ]
    assert main(["canon", "--key", "surt", "--on-error", "skip", "http://a:x/", "b.org"]) == 3
    assert capsys.readouterr().out == "org,b)/\n"


def test_not_with_other_modes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["canon", "--key", "surt", "--json", "http://a/"]) == 2
    assert "--key surt" in capsys.readouterr().err
