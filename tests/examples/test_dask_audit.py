"""examples/dask_audit.py on a local cluster of two worker processes: an access log, a WARC file
and a HAR file audited into JSON Lines, then ``urlsan report`` on what it wrote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.harness import EXAMPLES, example_env
from tests.integrations.audit_corpus import urlsan_audit, write_files

pytest.importorskip("dask.dataframe", reason="the Dask example needs urlsan[dask]")
pytest.importorskip("distributed", reason="the Dask example needs urlsan[dask]")
pytest.importorskip("warcio", reason="WARC files need the warc extra (warcio)")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        env=example_env(),
        capture_output=True,
        text=True,
        errors="surrogateescape",  # urlsan report writes a byte that is not UTF-8 as it came
        timeout=180,
    )


def _report(*logs: Path) -> dict[str, Any]:
    done = _run("-m", "urlsan", "report", "--json", *map(str, logs))
    assert done.returncode == 0, done.stderr
    summary: dict[str, Any] = json.loads(done.stdout)
    summary.pop("sources")
    return summary


def test_dask_audit_job_and_its_report(tmp_path: Path) -> None:
    paths = write_files(tmp_path)
    order = [paths["access-log"], paths["warc"], paths["har"]]
    out = tmp_path / "records"
    job = _run(
        str(EXAMPLES / "dask_audit.py"),
        "--logs",
        str(order[0]),
        "--files",
        str(order[1]),
        "--files",
        str(order[2]),
        "--profile",
        "crawler",
        str(out),
    )
    assert job.returncode == 0, job.stderr[-3000:]
    expected = urlsan_audit(tmp_path, order, "--profile", "crawler")
    assert job.stdout.startswith(f"{len(expected)} audit records in ")
    parts = sorted(out.glob("part-*.jsonl"))
    assert b"".join(p.read_bytes() for p in parts).splitlines() == expected
    assert _report(*parts) == _report(tmp_path / "urlsan-audit.jsonl")


def test_a_bad_option_is_exit_2(tmp_path: Path) -> None:
    paths = write_files(tmp_path)
    job = _run(
        str(EXAMPLES / "dask_audit.py"),
        "--logs",
        str(paths["access-log"]),
        "--backends",
        "nope",
        str(tmp_path / "out"),
    )
    assert job.returncode == 2, job.stderr[-3000:]
    assert "backends" in job.stderr
    assert not (tmp_path / "out").exists()
