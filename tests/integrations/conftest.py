from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local[2] Spark session for every test that needs one (the JVM takes ~15 s to start);
    a snippet's own ``SparkSession.builder.getOrCreate()`` gets this session too."""
    if os.environ.get("URLSAN_REQUIRE_SPARK") != "1":  # CI: fail, never skip
        pytest.importorskip("pyspark", reason="urlsan.spark needs the spark extra")
        pytest.importorskip("pyarrow", reason="pandas UDFs need pyarrow")
        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            pytest.skip("PySpark needs a Java runtime: .ci/install-jdk")
    from pyspark.sql import SparkSession

    # Local executors run this interpreter, the one urlsan is installed in.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("urlsan-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
