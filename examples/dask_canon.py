"""Canonicalize and deduplicate URL lists with Dask: on a laptop, or on a cluster unchanged.

    python examples/dask_canon.py 'urls/*.txt.gz' canonical/             # a local cluster
    python examples/dask_canon.py --scheduler tcp://scheduler:8786 \\
        's3://crawl/urls/*.txt.gz' s3://crawl/canonical/                 # a real one

Reads URL lists (one per line; gzip by the file name; anything fsspec reads: local, s3://,
gs://, hdfs://), canonicalizes each URL, drops the duplicates with a shuffle (no single machine
ever holds the distinct set), and writes the distinct canonical URLs as gzipped text parts.

The URL work is urlsan's own Dask function, `urlsan.dask.canonicalize_partition` (with
`canonicalize_frame` for DataFrames); this file is the job around it.  The workers need urlsan
installed (``pip install 'urlsan[dask]'`` in the worker image); the policy travels to them
pickled inside the task graph.
"""

from __future__ import annotations

import argparse
import csv
import logging
import sys
import time
from typing import Any, NamedTuple

import dask
import dask.bag as db
import fsspec
from dask.distributed import Client, LocalCluster
from fsspec.utils import infer_compression

from urlsan.core import Policy
from urlsan.dask import META, build_policy, canonicalize_partition


class Stats(NamedTuple):
    lines: int
    urls: int
    distinct: int
    seconds: float


def run(paths: list[str], output: str, policy: Policy, partitions: int | None = None) -> Stats:
    """Build the job and run it on the current Dask client; every input is read once."""
    started = time.monotonic()
    # Compressed files are read whole, one partition each; plain ones in 64 MiB blocks.
    files = fsspec.open_files(paths, mode="rb")
    packed = [f.path for f in files if infer_compression(f.path)]
    plain = [f.path for f in files if not infer_compression(f.path)]
    if files and hasattr(files[0].fs, "unstrip_protocol"):  # keep s3:// and friends
        packed = [files[0].fs.unstrip_protocol(p) for p in packed]
        plain = [files[0].fs.unstrip_protocol(p) for p in plain]
    # A bad byte spoils its URL (refused, or kept apart), never the job.
    text = {"encoding": "utf-8", "errors": "replace"}
    parts = [db.read_text(packed, blocksize=None, **text)] if packed else []
    parts += [db.read_text(plain, blocksize="64MiB", **text)] if plain else []
    if not parts:
        raise FileNotFoundError(f"no input matches {' '.join(paths)}")
    lines = db.concat(parts)
    rows = lines.map_partitions(canonicalize_partition, policy=policy).to_dataframe(meta=META)
    urls = rows[["url"]].dropna()  # blank lines and refused URLs have none
    distinct = urls.drop_duplicates(split_out=partitions or True)  # a hash-partitioned shuffle
    # Canonical URLs hold no tab, quote or newline (they are percent-encoded), so plain text.
    write = distinct.to_csv(
        f"{output.rstrip('/')}/part-*.txt.gz",
        compute=False,
        header=False,
        index=False,
        sep="\t",
        quoting=csv.QUOTE_NONE,
        compression="gzip",
    )
    counts = [frame.map_partitions(len).sum().to_delayed() for frame in (rows, urls, distinct)]
    # One compute: every input line is read and canonicalized once for all four results.
    _, n_lines, n_urls, n_distinct = dask.compute(write, *counts)
    return Stats(int(n_lines), int(n_urls), int(n_distinct), time.monotonic() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("inputs", nargs="+", help="URL lists: paths or globs, any fsspec URL")
    parser.add_argument("output", help="directory for the distinct canonical URLs")
    parser.add_argument("--scheduler", help="address of a running scheduler (default: local)")
    parser.add_argument("--workers", type=int, default=2, help="local cluster: worker processes")
    parser.add_argument("--profile", default="crawler", help="urlsan profile (default: crawler)")
    parser.add_argument("--rules", default="", help="rules on/off: '+merge-slashes'")
    parser.add_argument("--drop-params", action="append", default=[], help="'utm_*' 'h.com:ref'")
    parser.add_argument("--keep-params", action="append", default=[], help="'shop.test:id,page'")
    parser.add_argument("--partitions", type=int, help="output parts (default: Dask decides)")
    args = parser.parse_args(argv)
    policy = build_policy(args.profile, args.rules, args.drop_params, args.keep_params)

    # The P2P shuffle logs its start and end at WARNING level; they are not warnings.
    logging.getLogger("distributed.shuffle._scheduler_plugin").setLevel(logging.ERROR)
    cluster: Any = None
    if args.scheduler:
        client = Client(args.scheduler)
    else:
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, dashboard_address=None)
        client = Client(cluster)
    try:
        stats = run(args.inputs, args.output, policy, args.partitions)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    print(
        f"{stats.lines:,} lines, {stats.urls:,} URLs, {stats.distinct:,} distinct "
        f"({stats.urls - stats.distinct:,} collapsed, {stats.lines - stats.urls:,} refused or "
        f"blank) in {stats.seconds:.1f} s -> {args.output}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
