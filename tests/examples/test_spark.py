"""examples/spark_canon.py on a local Spark: runs where pyspark (and Java) are installed, and
always in CI (URLSAN_REQUIRE_SPARK=1: fail, not skip, when they are missing)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.examples.shared import read_url_parts, write_url_parts
from tests.harness import EXAMPLES, example_env

if os.environ.get("URLSAN_REQUIRE_SPARK") != "1":
    pytest.importorskip("pyspark", reason="the PySpark example needs pyspark, pandas and pyarrow")
    pytest.importorskip("pyarrow", reason="pandas UDFs need pyarrow")
    if shutil.which("java") is None:
        pytest.skip("PySpark needs a Java runtime: .ci/install-jdk", allow_module_level=True)


@pytest.mark.slow
def test_spark_job_canonicalizes_and_deduplicates(tmp_path: Path) -> None:
    inputs = write_url_parts(tmp_path)
    out = tmp_path / "canonical"
    job = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / "spark_canon.py"),
            str(inputs),
            str(out),
            "--master",
            "local[2]",
            "--partitions",
            "2",
        ],
        env=example_env(PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert job.returncode == 0, job.stderr[-3000:]
    assert job.stdout.startswith("6 lines, 3 distinct")
    written = read_url_parts(out)
    assert written == [
        "http://example.com/a%2Fb?a=1&b=2",
        "http://example.com/~guide/intro",
        "http://other.test/y",
    ]
