"""A running mitmdump on 127.0.0.1: plain, with addon/script.py, or ``urlsan proxy`` (mitmdump
with the urlsan addon), its output captured and its audit log read back.

Two ways to know it listens: ``-p 0`` and its "listening at" line (the kernel picks the port,
nothing races for it), or a port picked beforehand and polled (where ``termlog_verbosity=warn``
keeps that line from being printed).
"""

from __future__ import annotations

import json
import re
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

from .ports import LOOPBACK, free_port
from .process import Process, clean_env

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent  # this venv's bin/: mitmdump, urlsan
LISTENING = re.compile(r"listening at (?:\*|[\d.]+|\[[^\]]*\]):(\d+)")


def addon_missing() -> str | None:
    """Why tests through the proxy cannot run here, or None."""
    try:
        import mitmproxy  # noqa: F401
    except ImportError:
        return "mitmproxy is not installed (pip install -e '.[proxy]'): through-proxy tests skipped"
    try:
        from urlsan.addon import sanitizer  # noqa: F401
        from urlsan.cli import proxy  # noqa: F401
    except ImportError as e:
        return f"urlsan.addon is not importable ({e}): through-proxy tests skipped"
    return None


def urlsan_proxy_command(*args: str) -> list[str]:
    """``urlsan proxy ARGS``, through the same entry point the console script calls."""
    code = "import sys; from urlsan.cli.proxy import proxy_main; sys.exit(proxy_main(sys.argv[1:]))"
    return [sys.executable, "-c", code, *args]


def urlsan_command() -> list[str]:
    """The ``urlsan`` console script of this venv (or its entry point, where there is none)."""
    script = BIN / "urlsan"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from urlsan.cli.main import main; sys.exit(main())"]


def mitmdump_command(*args: str) -> list[str]:
    """This venv's ``mitmdump ARGS``."""
    return [str(BIN / "mitmdump"), *args]


def mitmdump_script_command(*args: str) -> list[str]:
    """``mitmdump -s addon/script.py ARGS``, the mitmproxy way from a checkout."""
    return mitmdump_command("-s", str(REPO / "addon" / "script.py"), *args)


class Mitmdump:
    """``argv`` (a mitmdump) until the block ends; ``port`` from its "listening at" line, or the
    one given (polled).  ``log``: its audit log.  ``fsize``: an RLIMIT_FSIZE for the process
    (bytes), so that its file writes fail with EFBIG as on a full disk, without mounting
    anything.  Stopped with ``stop_signal`` (SIGINT: a user's ^C), SIGKILL after
    ``stop_timeout``."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        log: Path | None = None,
        port: int | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        fsize: int | None = None,
        startup_timeout: float = 30.0,
        stop_signal: int = signal.SIGINT,
        stop_timeout: float = 15.0,
    ) -> None:
        self.argv = list(argv)
        self.log = log
        self.port = port or 0  # known once it listens
        self._known_port = port is not None
        self.cwd, self.env, self.fsize = cwd, env, fsize
        self.startup_timeout = startup_timeout
        self.stop_signal, self.stop_timeout = stop_signal, stop_timeout
        self.process: Process | None = None

    @property
    def lines(self) -> list[str]:
        """Its output so far, a line each."""
        return self.process.lines if self.process is not None else []

    def _limits(self) -> None:
        import resource

        assert self.fsize is not None
        resource.setrlimit(resource.RLIMIT_FSIZE, (self.fsize, self.fsize))

    def start(self) -> None:
        self.process = Process(
            self.argv,
            cwd=self.cwd,
            env=self.env,
            stop_signal=self.stop_signal,
            stop_timeout=self.stop_timeout,
            preexec_fn=self._limits if self.fsize is not None else None,
        )
        try:
            if self._known_port:
                self.process.wait_for_port(self.port, self.startup_timeout)
            else:
                found = self.process.wait_for_line(LISTENING, self.startup_timeout)
                self.port = int(found.group(1))
        except RuntimeError as e:
            self.process.stop()
            raise RuntimeError(f"mitmdump did not start: {e}\n{self.process.output()}") from e

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def records(self) -> list[dict[str, Any]]:
        """The audit log, every line parsed: ASCII, one JSON object a line (else it fails)."""
        if self.log is None or not self.log.exists():
            return []
        out = []
        for n, line in enumerate(self.log.read_bytes().splitlines(), 1):
            record = json.loads(line.decode("ascii"))
            assert isinstance(record, dict), f"audit log line {n} is not a JSON object"
            out.append(record)
        return out

    def rss_kib(self) -> int:
        """Resident memory of the process (KiB), from /proc."""
        assert self.process is not None
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        m = re.search(r"VmRSS:\s+(\d+) kB", status)
        return int(m.group(1)) if m else 0


class Proxy(Mitmdump):
    """A mitmdump of `running_proxy`: its confdir holds mitmproxy's CA; ``output``: its lines."""

    def __init__(self, argv: Sequence[str], tmp: Path, confdir: Path, log: Path) -> None:
        env = clean_env(PYTHONUNBUFFERED="1")
        super().__init__(argv, log=log, cwd=tmp, env=env)
        self.confdir = confdir

    @property
    def output(self) -> list[str]:
        return self.lines

    @property
    def ca(self) -> Path:
        return self.confdir / "mitmproxy-ca-cert.pem"

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"


@contextmanager
def running_proxy(
    tmp: Path, *args: str, command: Any = urlsan_proxy_command, log: bool = True
) -> Iterator[Proxy]:
    """``command`` (``urlsan proxy``) on a free port (``-p 0``) with its confdir in ``tmp`` and,
    with ``log``, its audit log there, until the block ends."""
    confdir = tmp / "confdir"
    audit = tmp / "audit.jsonl"
    extra = ["--set", f"urlsan_log={audit}"] if log else []
    argv = command(
        "--listen-host", LOOPBACK, "-p", "0", "--set", f"confdir={confdir}", *extra, *args
    )
    with Proxy(argv, tmp, confdir, audit) as proxy:
        yield proxy


class ReverseProxy(Mitmdump):
    """``urlsan proxy --mode reverse:UPSTREAM`` on 127.0.0.1:port with an audit log, quiet
    (``flow_detail=0``, warnings only); ``fsize`` as for `Mitmdump`.  Stopped with SIGTERM."""

    def __init__(
        self, upstream_port: int, log: Path | str | None, *extra: str, fsize: int | None = None
    ) -> None:
        path = Path(log) if log else None
        argv = [
            *urlsan_command(),
            "proxy",
            "--mode",
            f"reverse:http://{LOOPBACK}:{upstream_port}",
            "--listen-host",
            LOOPBACK,
            "-p",
            str(port := free_port()),
            "--set",
            "flow_detail=0",
            "--set",
            "termlog_verbosity=warn",
            "--set",
            f"urlsan_log={path or ''}",
            *extra,
        ]
        super().__init__(
            argv,
            log=path,
            port=port,
            fsize=fsize,
            startup_timeout=60,
            stop_signal=signal.SIGTERM,
            stop_timeout=20,
        )

    def output(self, settle: float = 0.3) -> str:
        """Everything the proxy printed so far (after ``settle`` seconds for the pipe)."""
        time.sleep(settle)
        return self.process.output() if self.process is not None else ""
