"""The HTML report in a real headless browser: Debian's Chromium (``.ci/install-chromium``).

Two ways in, both with nothing but the standard library:

* ``chromium --headless --screenshot``, with ``--enable-logging=stderr --v=0``: the page renders
  to a PNG, and any console message (the page has no script, so there must be none) shows up as
  a ``CONSOLE`` line on stderr.
* the DevTools protocol over ``--remote-debugging-pipe`` (file descriptors 3 and 4, messages
  ended by NUL): console calls, exceptions, log entries and network requests are events, and the
  DOM is asked about what it drew, at a desktop and at a phone width.

Screenshots are kept in ``test-artifacts/report-browser/`` (ignored by git) and in pytest's
temporary directory.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "report-browser"
SAMPLE = REPO / "examples" / "audit-sample.jsonl"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome-stable", "google-chrome")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",  # root in a container: the sandbox needs user namespaces
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
]
TIMEOUT = 60.0


def chromium() -> str:
    forced = os.environ.get("URLSAN_CHROMIUM")
    found = forced or next(filter(None, map(shutil.which, CHROMIUM_NAMES)), None)
    if not found:
        pytest.skip("Chromium is not installed (run .ci/install-chromium): browser test skipped")
    return found


def keep(png: bytes, name: str, tmp_path: Path) -> Path:
    """Write a screenshot where the test run keeps it; check it is a PNG of a drawn page."""
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5000, len(png)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / name).write_bytes(png)
    path = tmp_path / name
    path.write_bytes(png)
    return path


def audit_log(path: Path) -> Path:
    """A 34-second log with hostile strings: seconds buckets, and nothing from the log may run."""
    start = datetime(2026, 11, 22, 4, 0, 0, 197000, tzinfo=UTC)
    actions = ("rewritten", "unchanged", "rejected", "audited")
    lines = []
    for i in range(60):
        ts = (start + timedelta(seconds=i * 34 / 59)).isoformat(timespec="milliseconds")
        lines.append(
            {
                "ts": ts.replace("+00:00", "Z"),
                "client": f"10.0.0.{i % 4}:5{i:04d}",
                "method": "GET",
                "scheme": "http",
                "host": "<script>console.error('host')</script>" if i == 7 else "shop.example",
                "before": f"/a/./b/<img src=x onerror=console.error({i})>",
                "after": "/a/b/%3Cimg%20src=x%20onerror=console.error(1)%3E",
                "action": actions[i % 4],
                "edits": [{"rule": "remove-dot-segments"}, {"rule": "encode-unsafe"}],
                "findings": [{"rule": "dot-segment", "component": "path", "detail": "."}],
            }
        )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def render(log: Path, tmp_path: Path) -> Path:
    page = tmp_path / f"{log.stem}.html"
    run = subprocess.run(
        [sys.executable, "-m", "urlsan.cli", "report", "--html", "-o", str(page), str(log)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return page


@pytest.fixture
def pages(tmp_path: Path) -> list[Path]:
    return [render(audit_log(tmp_path / "short.jsonl"), tmp_path), render(SAMPLE, tmp_path)]


def test_screenshot_and_console(pages: list[Path], tmp_path: Path) -> None:
    binary = chromium()
    for page in pages:
        shot = tmp_path / f"{page.stem}-cli.png"
        with tempfile.TemporaryDirectory(prefix="urlsan-chromium-") as profile:
            run = subprocess.run(
                [
                    binary,
                    *CHROMIUM_FLAGS,
                    f"--user-data-dir={profile}",
                    "--window-size=1280,1800",
                    f"--screenshot={shot}",
                    "--enable-logging=stderr",
                    "--v=0",
                    page.as_uri(),
                ],
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
            )
        assert run.returncode == 0, run.stderr[-3000:]
        assert shot.exists(), run.stderr[-3000:]
        keep(shot.read_bytes(), shot.name, tmp_path)
        # Chromium logs every console message of the page as ":INFO:CONSOLE…] "text", source:".
        console = [line for line in run.stderr.splitlines() if ":CONSOLE" in line]
        assert console == [], console


def test_console_calibration(tmp_path: Path) -> None:
    """The console check above would see an error: a page that logs one shows it."""
    binary = chromium()
    page = tmp_path / "bad.html"
    page.write_text("<!doctype html><p>x<script>console.error('calibration')</script>")
    with tempfile.TemporaryDirectory(prefix="urlsan-chromium-") as profile:
        run = subprocess.run(
            [
                binary,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                "--enable-logging=stderr",
                "--v=0",
                f"--screenshot={tmp_path / 'bad.png'}",
                page.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    assert any(":CONSOLE" in line and "calibration" in line for line in run.stderr.splitlines())


# --- the DevTools protocol over a pipe


class DevTools:
    """A headless Chromium driven through ``--remote-debugging-pipe``."""

    def __init__(self, binary: str) -> None:
        self.profile = tempfile.mkdtemp(prefix="urlsan-chromium-")
        to_chrome, self._chrome_in = os.pipe()
        self._chrome_out, from_chrome = os.pipe()

        def pipes_as_3_and_4() -> None:
            # Through fresh copies: dup2 onto the same number would keep close-on-exec.
            a, b = os.dup(to_chrome), os.dup(from_chrome)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [
                binary,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={self.profile}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=False,
            preexec_fn=pipes_as_3_and_4,  # runs before exec: only dup and dup2
        )
        os.close(to_chrome)
        os.close(from_chrome)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session = ""

    def close(self) -> None:
        os.close(self._chrome_in)
        os.close(self._chrome_out)
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        shutil.rmtree(self.profile, ignore_errors=True)

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if self.session and not method.startswith("Target."):
            message["sessionId"] = self.session
        os.write(self._chrome_in, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next_id:
                assert "error" not in reply, reply
                return dict(reply.get("result", {}))
            self.events.append(reply)

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._chrome_out], [], [], max(left, 0))
            if not ready:
                raise TimeoutError("Chromium did not answer")
            chunk = os.read(self._chrome_out, 1 << 16)
            if not chunk:
                raise EOFError(f"Chromium went away (status {self.proc.poll()})")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return dict(json.loads(raw))

    def open(self, url: str, width: int, height: int) -> None:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Runtime", "Log", "Page", "Network"):
            self.call(f"{domain}.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
        )
        self.call("Page.navigate", {"url": url})
        deadline = time.monotonic() + TIMEOUT
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self._receive(deadline))

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return result["result"].get("value")

    def screenshot(self) -> bytes:
        shot = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        return base64.b64decode(shot["data"])

    def problems(self) -> list[dict[str, Any]]:
        """Console calls, uncaught exceptions and browser log entries: all unexpected here."""
        kinds = ("Runtime.consoleAPICalled", "Runtime.exceptionThrown", "Log.entryAdded")
        return [e for e in self.events if e.get("method") in kinds]

    def requests(self) -> list[str]:
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e.get("method") == "Network.requestWillBeSent"
        ]


@pytest.fixture
def devtools() -> Iterator[DevTools]:
    browser = DevTools(chromium())
    try:
        yield browser
    finally:
        browser.close()


_FACTS = """JSON.stringify({
  title: document.title,
  h1: document.querySelector("h1") && document.querySelector("h1").textContent,
  svgs: document.querySelectorAll("svg").length,
  rects: document.querySelectorAll("svg rect").length,
  scripts: document.querySelectorAll("script, img, iframe, object, embed").length,
  drawn: [...document.querySelectorAll("svg")].every(s => s.getBoundingClientRect().height > 20),
  timeline: [...document.querySelectorAll("h2")].map(h => h.textContent)
    .find(t => t.startsWith("Requests over time")),
  scrollWidth: document.documentElement.scrollWidth,
  viewport: window.innerWidth,
  text: document.body.textContent,
})"""


@pytest.mark.parametrize(("width", "height"), [(1280, 900), (390, 844)])
def test_report_in_the_browser(
    pages: list[Path], devtools: DevTools, tmp_path: Path, width: int, height: int
) -> None:
    page = pages[0]
    devtools.open(page.as_uri(), width, height)
    facts = json.loads(devtools.evaluate(_FACTS))
    assert facts["h1"] == "urlsan audit report"
    assert facts["svgs"] == 5 and facts["rects"] > 40 and facts["drawn"], facts
    assert facts["scripts"] == 0  # the log's <script> and <img> are text, not elements
    assert "<script>console.error('host')</script>" in facts["text"]
    assert facts["timeline"] == "Requests over time (per 1s)"
    assert "2026-11-22T04:00:00Z to 2026-11-22T04:00:34Z (34s)" in facts["text"]
    assert facts["scrollWidth"] <= facts["viewport"], facts  # nothing wider than the screen
    assert devtools.problems() == []
    assert devtools.requests() == [page.as_uri()]  # self-contained: nothing else fetched
    keep(devtools.screenshot(), f"short-{width}.png", tmp_path)


def test_sample_report_in_the_browser(
    pages: list[Path], devtools: DevTools, tmp_path: Path
) -> None:
    devtools.open(pages[1].as_uri(), 1280, 900)
    facts = json.loads(devtools.evaluate(_FACTS))
    assert facts["svgs"] == 5 and facts["drawn"] and facts["timeline"].endswith("(per 1m)")
    assert devtools.problems() == [] and devtools.requests() == [pages[1].as_uri()]
    keep(devtools.screenshot(), "sample-1280.png", tmp_path)


_AXIS = """JSON.stringify((() => {
  const svg = document.querySelector("svg");  // the first chart: requests over time
  const bottom = svg.getBoundingClientRect().bottom;
  const labels = [...svg.querySelectorAll("text")]
    .map(t => t.getBoundingClientRect())
    .filter(r => r.bottom > bottom - 20)  // the time axis, under the columns
    .sort((a, b) => a.left - b.left);
  const details = document.querySelectorAll("details");
  details.forEach(d => { d.open = true; });
  return {
    labels: labels.length,
    overlaps: labels.slice(1).filter((r, i) => r.left < labels[i].right).length,
    right: Math.max(...labels.map(r => r.right)) <= svg.getBoundingClientRect().right,
    details: details.length,
    opened: [...details].every(d => d.querySelector("table").getBoundingClientRect().height > 0),
    text: document.body.textContent,
  };
})())"""


def test_time_axis_and_findings_drill_down(devtools: DevTools, tmp_path: Path) -> None:
    """A log of a few seconds (one axis label a column, the first with its date: it was drawn
    over the second), with findings of several severities and the responses' status."""
    start = datetime(2026, 11, 27, 1, 31, 17, tzinfo=UTC)
    lines = []
    for i in range(12):
        ts = (start + timedelta(seconds=i)).isoformat(timespec="milliseconds")
        attack = i % 3 == 0
        lines.append(
            {
                "ts": ts.replace("+00:00", "Z"),
                "client": f"10.0.0.{i % 2}:4{i:04d}",
                "method": "GET",
                "scheme": "http",
                "host": "shop.example",
                "before": "/static/%252e%252e/%252e%252e/etc/passwd" if attack else "/a/./b",
                "after": "/x",
                "action": "rewritten",
                "edits": [],
                "findings": [
                    {"rule": "decoded-dot-segment-above-root", "component": "path",
                     "offset": 0, "detail": "/static/../../etc/passwd", "severity": "critical"}
                    if attack
                    else {"rule": "dot-segment", "component": "path", "offset": 3, "detail": "."}
                ],
                "status": 200 if i % 2 == 0 else 404,
            }
        )  # fmt: skip
    log = tmp_path / "few-seconds.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    page = render(log, tmp_path)
    devtools.open(page.as_uri(), 1280, 900)
    facts = json.loads(devtools.evaluate(_AXIS))
    assert facts["labels"] >= 4 and facts["overlaps"] == 0 and facts["right"], facts
    assert facts["details"] == 2 and facts["opened"], facts
    assert "Suspicious requests answered 2xx" in facts["text"]
    assert "Targets by severity" in facts["text"]
    assert "CWE-22" in facts["text"] and "critical" in facts["text"]
    assert devtools.problems() == [] and devtools.requests() == [page.as_uri()]
    keep(devtools.screenshot(), "findings-1280.png", tmp_path)
