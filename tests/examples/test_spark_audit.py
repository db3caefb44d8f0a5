"""examples/spark_audit.py on a local Spark: an access log and a WARC file audited into JSON Lines
and Parquet, then ``urlsan report`` on what it wrote.  Runs where pyspark (and Java) are
installed, and always in CI (URLSAN_REQUIRE_SPARK=1: fail, not skip, when they are missing)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.harness import EXAMPLES, example_env
from tests.integrations.audit_corpus import urlsan_audit, write_files

if os.environ.get("URLSAN_REQUIRE_SPARK") != "1":
    pytest.importorskip("pyspark", reason="the PySpark example needs pyspark, pandas and pyarrow")
    pytest.importorskip("pyarrow", reason="pandas UDFs need pyarrow")
    if shutil.which("java") is None:
        pytest.skip("PySpark needs a Java runtime: .ci/install-jdk", allow_module_level=True)
pytest.importorskip("warcio", reason="WARC files need the warc extra (warcio)")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        env=example_env(PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1"),
        capture_output=True,
        text=True,
        errors="surrogateescape",  # urlsan report writes a byte that is not UTF-8 as it came
        timeout=300,
    )


def _report(*logs: Path) -> dict[str, Any]:
    done = _run("-m", "urlsan", "report", "--json", *map(str, logs))
    assert done.returncode == 0, done.stderr
    summary: dict[str, Any] = json.loads(done.stdout)
    summary.pop("sources")
    return summary


@pytest.mark.slow
def test_spark_audit_job_and_its_report(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    paths = write_files(tmp_path)
    out, fields = tmp_path / "records", tmp_path / "fields"
    job = _run(
        str(EXAMPLES / "spark_audit.py"),
        "--master",
        "local[2]",
        "--logs",
        str(paths["access-log"]),
        "--files",
        str(paths["warc"]),
        "--parquet",
        str(fields),
        "--profile",
        "crawler",
        str(out),
    )
    assert job.returncode == 0, job.stderr[-3000:]
    expected = urlsan_audit(tmp_path, [paths["access-log"], paths["warc"]], "--profile", "crawler")
    assert job.stdout.startswith(f"{len(expected)} audit records in ")
    parts = sorted(out.glob("part-*"))
    assert b"".join(p.read_bytes() for p in parts).splitlines() == expected
    table = pq.read_table(fields)
    assert table.num_rows == len(expected)
    assert sorted(table.column("before").to_pylist()) == sorted(
        json.loads(line)["before"].replace("\udcff", "?") for line in expected
    )
    # urlsan report reads the job's parts as it reads urlsan audit's own output.
    written = tmp_path / "urlsan-audit.jsonl"
    assert _report(*parts) == _report(written)


def test_a_bad_option_fails_before_spark_runs_anything(tmp_path: Path) -> None:
    paths = write_files(tmp_path)
    job = _run(
        str(EXAMPLES / "spark_audit.py"),
        "--master",
        "local[1]",
        "--logs",
        str(paths["access-log"]),
        "--profile",
        "nope",
        str(tmp_path / "out"),
    )
    assert job.returncode == 2
    assert "profile" in job.stderr
    assert not (tmp_path / "out").exists()
