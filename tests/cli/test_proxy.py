"""``urlsan proxy``: the mitmdump command line it builds, and a missing mitmproxy."""

from __future__ import annotations

import builtins
from typing import Any

import pytest
from urlsan.cli import proxy as cli


@pytest.mark.parametrize(
    "argv, expected",
    [
        ([], ["--listen-host", "127.0.0.1"]),
        (["-p", "9000"], ["--listen-host", "127.0.0.1", "-p", "9000"]),
        (
            ["--mode", "reverse:http://127.0.0.1:3000"],
            ["--listen-host", "127.0.0.1", "--mode", "reverse:http://127.0.0.1:3000"],
        ),
        (["--listen-host", "0.0.0.0"], ["--listen-host", "0.0.0.0"]),
        (["--listen-host=::"], ["--listen-host=::"]),
        (["--set", "listen_host=0.0.0.0"], ["--set", "listen_host=0.0.0.0"]),
        (["--set=listen_host=::1"], ["--set=listen_host=::1"]),
    ],
)
def test_mitmdump_args(argv: list[str], expected: list[str]) -> None:
    assert cli.mitmdump_args(argv) == expected


def test_missing_mitmproxy(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real_import = builtins.__import__

    def fake_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "mitmproxy" or name.startswith("mitmproxy."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    assert cli.proxy_main([]) == 2
    assert capsys.readouterr().err == "urlsan proxy needs mitmproxy: pip install 'urlsan[proxy]'\n"


def test_bad_option_is_one_line_and_exit_1(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.proxy_main(["-p", "0", "--set", f"confdir={tmp_path}", "--set", "urlsan_mode=block"])
    assert code == 1
    err = capsys.readouterr().err
    assert "urlsan_mode must be one of rewrite, audit, reject, redirect" in err
    assert "Traceback" not in err


def test_package_imports_without_mitmproxy_until_needed() -> None:
    import urlsan.addon

    assert "UrlSanitizer" in urlsan.addon.__all__
    with pytest.raises(AttributeError):
        urlsan.addon.nothing_here  # noqa: B018
