"""``urlsan proxy``: the mitmdump command line it builds, and a missing mitmproxy."""

from __future__ import annotations

import builtins
import os
import signal
import socket
import subprocess
import sys
from typing import Any

import pytest

from tests.harness import free_port, urlsan_command, wait_for_port
from urlsan.cli import proxy as cli

LOG = ["--set", "urlsan_log=urlsan-audit.jsonl"]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # where urlsan proxy writes its audit log by default


@pytest.mark.parametrize(
    "argv, expected",
    [
        ([], ["--listen-host", "127.0.0.1", *LOG]),
        (["-p", "9000"], ["--listen-host", "127.0.0.1", *LOG, "-p", "9000"]),
        (
            ["--mode", "reverse:http://127.0.0.1:3000"],
            ["--listen-host", "127.0.0.1", *LOG, "--mode", "reverse:http://127.0.0.1:3000"],
        ),
        (["--listen-host", "0.0.0.0"], [*LOG, "--listen-host", "0.0.0.0"]),
        (["--listen-host=::"], [*LOG, "--listen-host=::"]),
        (["--set", "listen_host=0.0.0.0"], [*LOG, "--set", "listen_host=0.0.0.0"]),
        (["--set=listen_host=::1"], [*LOG, "--set=listen_host=::1"]),
        # The audit log is the user's to name, or to turn off.
        (
            ["--set", "urlsan_log=a.jsonl"],
            ["--listen-host", "127.0.0.1", "--set", "urlsan_log=a.jsonl"],
        ),
        (["--set=urlsan_log="], ["--listen-host", "127.0.0.1", "--set=urlsan_log="]),
    ],
)
def test_mitmdump_args(argv: list[str], expected: list[str]) -> None:
    assert cli.mitmdump_args(argv) == expected


@pytest.mark.parametrize(
    "option, hint",
    [
        ("urlsan_mod=audit", "unknown option urlsan_mod: did you mean urlsan_mode?"),
        ("urlsan_prfile=crawler", "unknown option urlsan_prfile: did you mean urlsan_profile?"),
        ("urlsn_rules=+merge-slashes", "unknown option urlsn_rules: did you mean urlsan_rules?"),
        ("urlsan_whatever=1", "unknown option urlsan_whatever: see `urlsan proxy --help`"),
    ],
)
def test_a_misspelt_option_is_refused_before_listening(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], option: str, hint: str
) -> None:
    code = cli.proxy_main(["-p", "0", "--set", f"confdir={tmp_path}", "--set", option])
    assert code == 1
    err = capsys.readouterr().err
    assert err == f"urlsan proxy: {hint}\n"


def test_unknown_options_leave_other_addons_alone() -> None:
    from urlsan.addon.sanitizer import unknown_options

    known = ["urlsan_mode", "urlsan_log"]
    assert unknown_options(["block_global", "my_script_option"], known) == []
    assert unknown_options(["urlsan_lgo"], known) == [
        "unknown option urlsan_lgo: did you mean urlsan_log?"
    ]


def test_mitmproxys_own_messages_name_urlsan_proxy(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not the executable's path, nor "urlsan" alone: the command the user typed."""
    argv0 = sys.argv[0]
    assert cli.proxy_main(["-p", "0", "--no-such-flag"]) == 1
    err = capsys.readouterr().err
    assert "usage: urlsan proxy [options] [filter]" in err
    assert "urlsan proxy: error: unrecognized arguments: --no-such-flag" in err
    assert sys.argv[0] == argv0


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
    assert capsys.readouterr().err == (
        f"urlsan proxy needs mitmproxy 11 or 12: {sys.executable} -m pip install "
        "'mitmproxy>=11.0.2,<13'\n"
    )


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


def test_help_shows_the_urlsan_options(capsys: pytest.CaptureFixture[str]) -> None:
    from urlsan.addon.sanitizer import UrlSanitizer

    names = [name for name, *_ in _loaded_options(UrlSanitizer())]
    assert cli.proxy_main(["-p", "9000", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: urlsan proxy")
    for name in names:
        assert f"\n  {name}\n" in out
    assert "urlsan_max_inline" in names and "Default: 8192." in out
    assert "One of: rewrite, audit, reject, redirect." in out
    assert "Default: ." not in out  # an empty list is "(none)"
    assert "  urlsan_log\n    Default: urlsan-audit.jsonl." in out
    assert out.rstrip().endswith("`mitmdump --options`.")
    assert max(len(line) for line in out.splitlines()) <= 79


def test_help_is_exit_0_in_a_real_process() -> None:
    for flag in ("--help", "-h"):
        done = subprocess.run(
            [sys.executable, "-m", "urlsan", "proxy", flag], capture_output=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert b"urlsan_mode" in done.stdout and b"urlsan_max_target" in done.stdout
        assert b"mitmdump --help" in done.stdout


def _loaded_options(addon: Any) -> list[tuple[str, Any, str, Any]]:
    loader = cli._Loader()
    addon.load(loader)
    return loader.options


def test_mmap_threshold_above_asyncio_reads() -> None:
    # Each socket read allocates the transport's max_size first (selector_events): a threshold
    # at or below it would make every read an mmap and a munmap, with page faults.
    from asyncio.selector_events import _SelectorSocketTransport

    assert _SelectorSocketTransport.max_size + 4096 < cli.MMAP_THRESHOLD


# Socket reads as asyncio makes them (a 256 KiB buffer, shrunk to the 100 bytes that came),
# with a few small allocations in between: glibc's minor page faults per read.
_READS = """
import resource, socket, sys
from urlsan.cli.proxy import return_large_blocks
if sys.argv[1] == "set":
    return_large_blocks()
a, b = socket.socketpair()
keep = [bytes(200) for _ in range(2000)]
for n in (100, 2000):
    start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(n):
        a.send(b"x" * 100)
        data = b.recv(262144)
        keep.append(bytes(50))
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start) / n)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_socket_reads_cost_no_page_faults() -> None:
    # The thresholds return_large_blocks sets keep asyncio's read buffers in the heap, and the
    # heap's top where it is; glibc's defaults take one or two faults per read here.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}

    def faults(setting: str) -> float:
        run = [sys.executable, "-c", _READS, setting]
        return float(subprocess.run(run, env=env, capture_output=True, check=True).stdout)

    assert faults("set") < 0.5
    assert faults("default") > 0.5  # the test sees the faults it is about


def test_return_large_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, int]] = []

    class Libc:
        def mallopt(self, param: int, value: int) -> int:
            calls.append((param, value))
            return 1

    monkeypatch.setattr(cli.ctypes, "CDLL", lambda name: Libc())
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    cli.return_large_blocks()
    assert calls == [(-3, cli.MMAP_THRESHOLD), (-1, cli.TRIM_THRESHOLD)]
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")  # the user's choice wins
    cli.return_large_blocks()
    assert calls[2:] == [(-1, cli.TRIM_THRESHOLD)]
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    cli.return_large_blocks()
    assert len(calls) == 3

    def no_mallopt(name: Any) -> Any:
        raise OSError("no libc")

    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_")
    monkeypatch.setattr(cli.ctypes, "CDLL", no_mallopt)
    cli.return_large_blocks()  # nothing to do, no error


def test_a_default_log_that_cannot_be_opened_says_how_to_log_elsewhere(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default audit log goes to the current directory: where it cannot be opened (here a
    directory holds its name, which stops root too), the error says how to put it elsewhere,
    or keep none."""
    (tmp_path / "urlsan-audit.jsonl").mkdir()  # the fixture made tmp_path the current directory
    assert cli.proxy_main(["-p", "0", "--set", f"confdir={tmp_path / 'c'}"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("urlsan proxy: Cannot open urlsan_log 'urlsan-audit.jsonl': ")
    assert "--set urlsan_log=FILE names another file, --set urlsan_log= keeps none" in err


TYPO = ["--set", "urlsan_typo=1"]
LOG_X = ["--set", "urlsan_log=x.jsonl"]


@pytest.mark.parametrize(
    "given, message",
    [
        (TYPO, "unknown option urlsan_typo"),  # the default log, urlsan-audit.jsonl
        ([*LOG_X, *TYPO], "unknown option urlsan_typo"),
        ([*LOG_X, "--set", "urlsan_mode=bogus"], "urlsan_mode must be"),
        ([*LOG_X, "--set", "urlsan_max_target=10"], "urlsan_max_target (10) must not"),
        # mitmproxy's own option: "Not an integer" in mitmproxy 11, "not an integer" in 12
        ([*LOG_X, "--set", "listen_port=abc"], "ot an integer"),
        (["--set", "urlsan_log=sub/x.jsonl", "--set", "urlsan_mod=audit"], "urlsan_mode?"),
    ],
)
def test_a_refused_start_leaves_no_audit_log_behind(
    tmp_path: Any, given: list[str], message: str
) -> None:
    """The real command, in a scratch directory: a misspelt option or a bad value stops it
    before it listens, and the log it would have written is not left there empty."""
    (tmp_path / "sub").mkdir()
    argv = ["proxy", "-p", str(free_port()), "--set", f"confdir={tmp_path / 'conf'}", *given]
    run = subprocess.run(
        [*urlsan_command(), *argv], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert run.returncode != 0 and message in run.stderr, run.stderr
    assert sorted(p.name for p in tmp_path.rglob("*.jsonl")) == []


def test_a_refused_start_keeps_a_log_that_was_there(tmp_path: Any) -> None:
    """Only a file the refused run created goes: an existing log, even empty, stays."""
    (tmp_path / "x.jsonl").write_bytes(b"")
    argv = ["proxy", "-p", str(free_port()), "--set", f"confdir={tmp_path / 'conf'}", *LOG_X]
    run = subprocess.run(
        [*urlsan_command(), *argv, *TYPO], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert run.returncode != 0 and (tmp_path / "x.jsonl").exists()


def test_a_proxy_that_ran_keeps_its_log(tmp_path: Any) -> None:
    """A proxy that started and was stopped with no request keeps its (empty) log."""
    port = free_port()
    argv = ["proxy", "-p", str(port), "--set", f"confdir={tmp_path / 'conf'}", *LOG_X]
    process = subprocess.Popen([*urlsan_command(), *argv], cwd=tmp_path, stderr=subprocess.PIPE)
    try:
        wait_for_port(port, timeout=30)
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
    assert (tmp_path / "x.jsonl").exists()


def test_a_port_in_use_leaves_no_audit_log_behind(tmp_path: Any) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = ["proxy", "-p", str(port), "--set", f"confdir={tmp_path / 'conf'}", *LOG_X]
        run = subprocess.run(
            [*urlsan_command(), *argv], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
    assert run.returncode != 0
    assert not (tmp_path / "x.jsonl").exists()
