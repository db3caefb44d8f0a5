"""The installed `urlsan` command as a process: exit statuses, pipes, and `urlsan proxy`."""

from __future__ import annotations

import gzip
import importlib.abc
import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_harness import RunUrlsan

from urlsan.cli.main import PROXY_NEEDS

URLSAN = [sys.executable, "-m", "urlsan"]


def test_console_script_reads_stdin_and_tells_by_exit_status() -> None:
    p = subprocess.run(
        [*URLSAN, "canon"], input=b"HTTP://A/%7e\n\nhttp://b/\n", capture_output=True, timeout=60
    )
    assert p.returncode == 3
    assert p.stdout == b"http://a/~\n\nhttp://b/\n"
    assert p.stderr.decode().startswith("urlsan canon: <stdin>:2: empty\n")


def test_a_closed_pipe_is_not_an_error_worth_a_traceback(tmp_path: Path) -> None:
    urls = tmp_path / "urls.txt.gz"
    urls.write_bytes(gzip.compress(b"".join(b"http://h/%d\n" % i for i in range(200_000))))
    canon = subprocess.Popen(
        [*URLSAN, "canon", "-i", str(urls)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert canon.stdout is not None and canon.stderr is not None
    assert canon.stdout.readline() == b"http://h/0\n"
    canon.stdout.close()  # what `| head -1` does
    assert canon.wait(timeout=60) == 141
    assert b"Traceback" not in canon.stderr.read()


def test_rules_lists_every_rule(urlsan: RunUrlsan) -> None:
    from urlsan.core import RULES

    table = urlsan("rules")
    assert table.status == 0
    assert len(table.lines) == len(RULES) + 1
    assert table.lines[0].endswith("  what it does")
    lowercase = next(line for line in table.lines if line.startswith("lowercase-scheme "))
    assert lowercase.endswith("  HTTP → http")  # what the rule does, in its own column
    rows = json.loads(urlsan("rules", "--json").out)
    assert [r["name"] for r in rows] == [r.name for r in RULES]
    remove = next(r for r in rows if r["name"] == "remove-dot-segments")
    assert remove["lossy"] is False and "rfc3986" in remove["profiles"]


def test_core_does_not_import_mitmproxy() -> None:
    code = (
        "import sys, urlsan.cli.main, urlsan.audit.report, urlsan.cli.batch; "
        "sys.exit(any(m.split('.')[0] == 'mitmproxy' for m in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0


class _NoMitmproxy(importlib.abc.MetaPathFinder):
    """Makes `urlsan.cli.proxy` fail to import the way it would without mitmproxy installed."""

    def find_spec(self, name: str, path: object, target: object = None) -> None:
        if name == "urlsan.cli.proxy" or name.split(".")[0] == "mitmproxy":
            raise ModuleNotFoundError("No module named 'mitmproxy'", name="mitmproxy")
        return None


def test_proxy_without_mitmproxy_says_how_to_get_it(
    urlsan: RunUrlsan, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(sys.modules):
        if name == "urlsan.cli.proxy" or name.split(".")[0] == "mitmproxy":
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_NoMitmproxy(), *sys.meta_path])
    r = urlsan("proxy", "-p", "8081")
    assert (r.status, r.err) == (2, PROXY_NEEDS + "\n")


def test_proxy_passes_every_argument_on(urlsan: RunUrlsan, monkeypatch: pytest.MonkeyPatch) -> None:
    addon_cli = pytest.importorskip("urlsan.cli.proxy")
    seen: list[list[str]] = []

    def fake_proxy_main(argv: list[str]) -> int:
        seen.append(argv)
        return 0

    monkeypatch.setattr(addon_cli, "proxy_main", fake_proxy_main)
    argv = ["-p", "8081", "--set", "urlsan_mode=audit", "--help", "canon"]
    assert urlsan("proxy", *argv).status == 0
    assert seen == [argv]
