"""examples/dask_canon.py (the job around urlsan.dask) on a local cluster of two worker
processes, as it runs on a real one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.examples.shared import URLS, read_url_parts, write_url_parts
from tests.harness import EXAMPLES, example_env
from urlsan.core import Policy, canonicalize

pytest.importorskip("dask.dataframe", reason="the Dask example needs urlsan[dask]")
pytest.importorskip("distributed", reason="the Dask example needs urlsan[dask]")


def test_dask_job_canonicalizes_and_deduplicates(tmp_path: Path) -> None:
    inputs = write_url_parts(tmp_path)
    out = tmp_path / "canonical"
    job = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / "dask_canon.py"),
            str(inputs),
            str(out),
            "--workers",
            "2",
        ],
        env=example_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert job.returncode == 0, job.stderr
    assert job.stdout.startswith("6 lines, 5 URLs, 3 distinct (2 collapsed, 1 refused or blank)")
    written = read_url_parts(out)
    crawler = Policy.profile("crawler")
    assert written == sorted({canonicalize(u, crawler).url for u in URLS if u})
    assert written == [
        "http://example.com/a%2Fb?a=1&b=2",
        "http://example.com/~guide/intro",
        "http://other.test/y",
    ]
