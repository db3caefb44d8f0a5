"""examples/dask_canon.py on a local cluster of two worker processes, as it runs on a real one."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest
from example_harness import EXAMPLES, example_env
from urlsan.core import Policy, canonicalize

pytest.importorskip("dask.dataframe", reason="the Dask example needs urlsan[dask]")
pytest.importorskip("distributed", reason="the Dask example needs urlsan[dask]")

URLS = [
    "HTTP://Example.COM:80/%7Eguide/./intro",
    "http://example.com/~guide/intro?utm_source=feed#top",
    "",
    "http://example.com/a%2fb?b=2&a=1",
    "http://example.com/a%2Fb?a=1&b=2",
    "http://other.test/x/../y",
]


def test_dask_job_canonicalizes_and_deduplicates(tmp_path: Path) -> None:
    inputs = tmp_path / "urls"
    inputs.mkdir()
    (inputs / "part-0.txt").write_text("\n".join(URLS[:3]) + "\n")
    (inputs / "part-1.txt.gz").write_bytes(gzip.compress("\n".join(URLS[3:]).encode()))
    out = tmp_path / "canonical"
    job = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / "dask_canon.py"),
            str(inputs / "part-*"),
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
    written = sorted(
        line
        for part in out.glob("part-*.txt.gz")
        for line in gzip.decompress(part.read_bytes()).decode().splitlines()
    )
    crawler = Policy.profile("crawler")
    assert written == sorted({canonicalize(u, crawler).url for u in URLS if u})
    assert written == [
        "http://example.com/a%2Fb?a=1&b=2",
        "http://example.com/~guide/intro",
        "http://other.test/y",
    ]
