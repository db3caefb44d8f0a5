"""Audit recorded traffic with Dask: access logs and WARC (or HAR) files in, the audit records
``urlsan audit`` writes out, as JSON Lines for ``urlsan report``; on a laptop, or on a cluster
unchanged.

    python examples/dask_audit.py --logs 'logs/*.gz' --files 'crawl/*.warc.gz' audit/
    urlsan report audit/part-*.jsonl
    python examples/dask_audit.py --scheduler tcp://scheduler:8786 \\
        --logs 's3://logs/2026/11/*' --files 's3://crawl/*.warc.gz' s3://audit/records/

Access logs are read a line at a time (``db.read_text``: plain files in 64 MiB blocks, compressed
ones whole); WARC and HAR files whole, one element each, opened by path on the worker (anything
fsspec reads).  The work is `urlsan.dask.audit`: each line or file is read by ``urlsan audit``'s
own readers and decided as ``urlsan audit`` decides it; this file is the job around it.  The
workers need urlsan installed (``pip install 'urlsan[dask,warc]'`` in the worker image).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from typing import Any

import dask
import dask.bag as db
import fsspec
from dask.delayed import delayed
from dask.distributed import Client, LocalCluster
from fsspec.utils import infer_compression

from urlsan.dask import audit


def _write(lines: Any, path: str) -> int:
    """One part of the records: their lines, as ``urlsan audit -o`` writes them."""
    with fsspec.open(path, "w", encoding="ascii", newline="\n") as f:
        f.writelines(line + "\n" for line in lines)
    return len(lines)


def run(logs: list[str], files: list[str], output: str, options: dict[str, Any]) -> int:
    """Write the audit records of ``logs`` and ``files`` to ``output``; returns their number."""
    parts = []
    # A log's bytes are its own: a line that is not UTF-8 is read as urlsan audit reads it.
    text = {"encoding": "utf-8", "errors": "surrogateescape"}
    for path in [f.full_name for f in fsspec.open_files(logs, mode="rb")] if logs else []:
        block = None if infer_compression(path) else "64MiB"  # compressed: read whole
        parts.append(audit(db.read_text(path, blocksize=block, **text), **options))
    if files:
        paths = [f.full_name for f in fsspec.open_files(files, mode="rb")]
        parts.append(audit(db.from_sequence(paths, npartitions=len(paths)), files=True, **options))
    if not parts:
        raise SystemExit("nothing to audit: give --logs, --files or both")
    chunks = [chunk for records in parts for chunk in records["line"].to_delayed()]
    base = output.rstrip("/")
    fs, root = fsspec.core.url_to_fs(base)
    fs.makedirs(root, exist_ok=True)
    writes = [delayed(_write)(c, f"{base}/part-{i:05d}.jsonl") for i, c in enumerate(chunks)]
    return sum(dask.compute(*writes))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("output", help="directory for the audit records (JSON Lines parts)")
    parser.add_argument("--logs", action="append", default=[], help="access logs: paths, globs")
    parser.add_argument("--files", action="append", default=[], help="WARC, HAR files: globs")
    parser.add_argument("--scheduler", help="address of a running scheduler (default: local)")
    parser.add_argument("--workers", type=int, default=2, help="local cluster: worker processes")
    # urlsan audit's options, as it takes them (urlsan audit --help); a flag not given is left
    # to urlsan.dask.audit, whose defaults are urlsan audit's.
    parser.add_argument("--mode", help="urlsan_mode to record (default: audit)")
    parser.add_argument("--profile", help="rule profile (default: rfc3986)")
    parser.add_argument("--rules", help="rules on/off: '+merge-slashes'")
    parser.add_argument("--backends", help="servers to protect: 'nginx,tomcat'")
    parser.add_argument("--signed", help="skip (default) or rewrite")
    parser.add_argument("--redact", help="query parameters to mask (default: urlsan's list)")
    args = parser.parse_args(argv)
    names = ("mode", "profile", "rules", "backends", "signed", "redact")
    options = {k: getattr(args, k) for k in names if getattr(args, k) is not None}

    logging.getLogger("distributed").setLevel(logging.ERROR)
    cluster: Any = None
    started = time.monotonic()
    try:
        if args.scheduler:
            client = Client(args.scheduler)
        else:
            cluster = LocalCluster(
                n_workers=args.workers, threads_per_worker=1, dashboard_address=None
            )
            client = Client(cluster)
        try:
            n = run(args.logs, args.files, args.output, options)
        finally:
            client.close()
    except ValueError as e:  # a bad option, found before any task runs
        print(f"dask_audit.py: {e}", file=sys.stderr)
        return 2
    finally:
        if cluster is not None:
            cluster.close()
    print(f"{n:,} audit records in {time.monotonic() - started:.1f} s -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
