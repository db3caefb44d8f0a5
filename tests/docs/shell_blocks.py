"""The shell blocks (```sh) of README.md and docs/, as a reader pastes them, and a runner that runs
one document's blocks in order in a sandbox.

A block a reader cannot paste on this machine says so with an HTML comment on the line before it
(invisible on the rendered page): ``<!-- not run: the reason -->``.  Every other block runs.  A
``text`` block after ``<!-- output of the last command above -->`` is what the last command of
the shell block before it prints (standard output and error), and must be.

The runner (``python -m tests.docs.shell_blocks DOC HOME``) is started by the test inside a
network namespace of its own (``unshare -rn``): every port is free there, as on a reader's
machine, and nothing reaches the internet.  Each command runs in bash, in the current
directory (a scratch directory with the checkout's files linked into it), with HOME a fresh
directory and the test's virtual environment first on PATH.  A command passes when it exits 0,
or when it keeps running and listens on a port (a server).  Servers run as a reader's do:

- starting a proxy (``urlsan proxy``, ``make run``, mitmdump, mitmweb) stops the proxies started
  in the foreground before it (the reader's Ctrl-C before the next command in that terminal);
- everything else that listens (a server started with ``&``, or the last proxy of a block,
  which keeps its terminal) runs until the section (a ``##`` heading) ends;
- a reverse proxy (``--mode reverse:http://127.0.0.1:PORT``) gets the server the docs put behind
  it: when nothing listens on PORT yet, a stand-in (Python's http.server, serving docs/) is
  started there first, and one request through the proxy must reach it.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SHELLS = ("sh", "bash", "shell")
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_NOT_RUN = re.compile(r"<!--\s*not run:\s*(.*?)\s*-->\s*\Z", re.DOTALL)
_OUTPUT = re.compile(r"<!--\s*output of the last command above\s*-->\s*\Z")
_SECTION = re.compile(r"^## ", re.MULTILINE)
_BACKGROUND = re.compile(r"\s&\s*(?:#.*)?$")
_REVERSE = re.compile(r"--mode reverse:http://127\.0\.0\.1:(\d+)")
_LISTEN_PORT = re.compile(r"(?:-p|--listen-port)[ =](\d+)")
_PROXY = re.compile(r"^(?:urlsan proxy|make run|mitmdump|mitmweb)\b(?!.*--help)")
# A command that has neither exited nor listened by then has hung.
TIMEOUT = 120.0


@dataclasses.dataclass(frozen=True, slots=True)
class Block:
    """One shell block: where it is, its section, and its commands (continuations joined)."""

    doc: Path
    line: int
    section: int
    commands: tuple[str, ...]
    not_run: str | None  # the reason, when the block is marked not runnable here
    prints: str | None = None  # what its last command prints, when the docs say

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def commands(body: str) -> tuple[str, ...]:
    """The block's command lines, a line ending in a backslash joined with the next."""
    out: list[str] = []
    pending = ""
    for line in body.splitlines():
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        if line.strip() and not line.lstrip().startswith("#"):
            out.append(line.strip())
    return tuple(out)


def blocks(doc: Path) -> list[Block]:
    text = doc.read_text(encoding="utf-8")
    found: list[Block] = []
    for m in _FENCE.finditer(text):
        before = text[: m.start()]
        if m.group(1) == "text" and _OUTPUT.search(before) and found:
            found[-1] = dataclasses.replace(found[-1], prints=m.group(2))
        if m.group(1) not in SHELLS:
            continue
        marker = _NOT_RUN.search(before)
        found.append(
            Block(
                doc=doc,
                line=before.count("\n") + 1,
                section=len(_SECTION.findall(before)),
                commands=commands(m.group(2)),
                not_run=marker.group(1) if marker else None,
            )
        )
    return found


def listening() -> set[str]:
    """The inodes of the listening TCP sockets of this network namespace (proc(5))."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table, encoding="ascii") as f:
            for row in f.readlines()[1:]:
                fields = row.split()
                if fields[3] == "0A":  # TCP_LISTEN
                    inodes.add(fields[9])
    return inodes


def _listens_on(port: int) -> bool:
    """Whether a socket of this namespace listens on the port (proc(5): local address:port)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table, encoding="ascii") as f:
            for row in f.readlines()[1:]:
                fields = row.split()
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    return True
    return False


def _through_reverse_proxy(port: int, where: str) -> None:
    """One request through the reverse proxy reaches the server behind it."""
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with direct.open(f"http://127.0.0.1:{port}/index.md", timeout=30) as response:
        if response.status != 200 or not response.read().startswith(b"# urlsan"):
            raise AssertionError(f"{where}: the reverse proxy did not reach its upstream")


class Sandbox:
    """The commands of one document, run in order; the servers they leave running."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.cwd = cwd
        self.env = env
        self.foreground: list[subprocess.Popen[bytes]] = []
        self.servers: list[subprocess.Popen[bytes]] = []

    def run(self, command: str, where: str) -> str:
        """Run the command as the docs say; what it printed (by the time it listened)."""
        background = _BACKGROUND.search(command)
        if background:
            command = command[: background.start()]
        if _PROXY.match(command):
            self._stop(self.foreground)
        reverse = _REVERSE.search(command)
        if reverse and not _listens_on(int(reverse.group(1))):
            upstream = f"python3 -m http.server {reverse.group(1)} --bind 127.0.0.1 -d docs &"
            self.run(upstream, f"{where} (the server behind the proxy)")
        log = self.cwd / ".command-output"
        before = listening()
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                ["bash", "-c", command],
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        outcome = self._wait(proc, before)
        output = log.read_text(errors="replace")
        if outcome != "listens":
            if outcome != 0:
                raise AssertionError(f"{where}: $ {command}\n-> {outcome}\n{output}")
            return output
        self.servers.append(proc)
        if not background:
            self.foreground.append(proc)
        if reverse:
            port = _LISTEN_PORT.search(command)
            _through_reverse_proxy(int(port.group(1)) if port else 8080, where)
        return output

    def _wait(self, proc: subprocess.Popen[bytes], before: set[str]) -> int | str:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            status = proc.poll()
            if status is not None:
                return status
            if listening() - before:
                time.sleep(0.3)  # the rest of its start-up (mitmdump says what it does)
                return "listens" if proc.poll() is None else (proc.returncode or "exited")
            time.sleep(0.05)
        self._stop([proc])
        return f"neither exited nor listened within {TIMEOUT:.0f} s"

    def end_section(self) -> None:
        self._stop(self.servers)

    def _stop(self, procs: list[subprocess.Popen[bytes]]) -> None:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, 2)  # SIGINT: Ctrl-C, as the reader stops it
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, 9)
                    proc.wait()
        for proc in procs:
            for held in (self.foreground, self.servers):
                if proc in held:
                    held.remove(proc)


def sandbox_dir(cwd: Path) -> None:
    """The checkout's files linked into cwd (as a reader's checkout), the test's venv as .venv."""
    for entry in ROOT.iterdir():
        if entry.name not in {".venv", ".git"} and not entry.name.startswith(".venv"):
            (cwd / entry.name).symlink_to(entry)
    (cwd / ".venv").symlink_to(Path(sys.prefix))


def run_block(box: Sandbox, block: Block) -> None:
    output = ""
    for command in block.commands:
        output = box.run(command, block.where)
        print(f"ok {block.where}: $ {command}", flush=True)
    if block.prints is not None and output != block.prints:
        raise AssertionError(f"{block.where}: the last command printed\n{output}")


def main(doc: Path, home: Path) -> int:
    cwd = home / "checkout"
    cwd.mkdir()
    sandbox_dir(cwd)
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(HOME=str(home), NO_COLOR="1", PATH=f"{Path(sys.executable).parent}:{env['PATH']}")
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    box = Sandbox(cwd, env)
    section = 0
    try:
        for block in blocks(doc):
            if block.section != section:
                box.end_section()
                section = block.section
            if block.not_run is None:
                run_block(box, block)
    finally:
        box.end_section()
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]).resolve(), Path(sys.argv[2])))
