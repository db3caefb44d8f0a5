"""The suite in two parts: `make test` runs the fast one (`-m "not slow"`), `make check` the
slow one (`-m slow`); CI runs both (docs/development.md).

The slow part is named here, once: the tests that start real servers, engines and browsers, or
spend their time on budgets rather than on cases.  Chosen with pytest's ``--durations`` on the
whole suite (1,497 s on two busy cores): together they took 952 s of it, 64%.  A file or folder
listed here is slow as a whole; a test id (``path::name``) alone.
"""

from __future__ import annotations

import pytest

SLOW = (
    "tests/backends/",  # each server model against the real server, on 11,590 targets
    "tests/e2e/",  # real mitmdump, clients and Chromium
    "tests/hardening/",  # fuzzing, load, faults, nginx
    "tests/docs/test_shell_blocks.py",  # every pasted command, proxies started and stopped
    "tests/examples/test_spark.py",  # the jobs of examples/ on a local Spark and Dask
    "tests/examples/test_dask.py",
    "tests/examples/test_spark_audit.py",  # examples/spark_audit.py on local[2]
    "tests/examples/test_dask_audit.py",  # examples/dask_audit.py on a LocalCluster
    "tests/examples/test_proxy_examples.py",  # the proxy scripts of examples/ in mitmdump
    "tests/integrations/test_spark_udf.py",  # a local Spark (a JVM)
    "tests/integrations/test_dask_functions.py",  # a local Dask cluster
    "tests/integrations/test_spark_audit.py",  # urlsan.spark.audit on a local Spark
    "tests/integrations/test_dask_audit.py",  # urlsan.dask.audit on a local Dask cluster
    "tests/integrations/test_docs_crawling.py",  # Crawling's snippets, Spark and Dask included
    "tests/cli/test_proxy_launcher.py::test_help_is_exit_0_in_a_real_process",  # mitmdump starts
    "tests/docs/test_site.py::test_wide_tables_fit_at_1280_pixels",  # Chromium
    "tests/test_guard.py",  # bench/guard.py under callgrind
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith(SLOW):
            item.add_marker(pytest.mark.slow)
