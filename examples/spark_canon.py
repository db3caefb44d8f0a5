"""The Dask job of `dask_canon.py`, in PySpark: canonicalize URL lists with a pandas UDF,
deduplicate, write.

    python examples/spark_canon.py --master 'local[*]' 'urls/*.txt.gz' canonical/
    spark-submit --master yarn examples/spark_canon.py \\
        's3a://crawl/urls/*.txt.gz' s3a://crawl/canonical/                     # a cluster

A pandas UDF hands the UDF a whole Arrow batch (10,000 rows by default) at a time, so Python is
entered once per batch, not once per URL.  The policy reaches the executors pickled inside the
UDF's closure; the executors need urlsan installed (``--py-files`` or the cluster image).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.functions import pandas_udf
from urlsan.core import InvalidTarget, Policy, canonicalize

MAX_LINE = 64 * 1024  # the CLI's limit: longer lines are not URLs


def canonical_urls(policy: Policy) -> Callable[[pd.Series], pd.Series]:
    """A Series of lines → the Series of their canonical URLs (None: blank, absurd, refused)."""

    def canonical(line: str) -> str | None:
        line = line.strip()
        if not line or len(line) > MAX_LINE:
            return None
        try:
            return canonicalize(line, policy).url
        except InvalidTarget:
            return None

    def batch(lines: pd.Series) -> pd.Series:
        return lines.map(canonical, na_action="ignore")

    return batch


def run(spark: SparkSession, paths: list[str], output: str, policy: Policy) -> tuple[int, int]:
    """Write the distinct canonical URLs of ``paths`` to ``output``; (input lines, distinct)."""
    canonical = pandas_udf(canonical_urls(policy), "string")
    lines = spark.read.text(paths)  # gzip and friends by the file name; one row per line
    urls = lines.select(canonical(F.col("value")).alias("url")).where(F.col("url").isNotNull())
    urls.dropDuplicates(["url"]).write.mode("overwrite").option("compression", "gzip").text(output)
    return lines.count(), spark.read.text(output).count()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("inputs", nargs="+", help="URL lists: paths or globs")
    parser.add_argument("output", help="directory for the distinct canonical URLs")
    parser.add_argument("--master", help="Spark master (default: spark-submit's, or local[*])")
    parser.add_argument("--profile", default="crawler", help="urlsan profile (default: crawler)")
    parser.add_argument("--rules", default="", help="rules on/off: '+merge-slashes'")
    parser.add_argument("--partitions", type=int, help="shuffle partitions (default: Spark's)")
    args = parser.parse_args(argv)
    policy = Policy.profile(args.profile)
    if args.rules:
        policy = policy.with_rules(args.rules)

    builder = SparkSession.builder.appName("urlsan-canon")
    if args.master:
        builder = builder.master(args.master)
        if args.master.startswith("local"):
            # Local workers run this Python (the one with urlsan), not the first python3 on PATH.
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if args.partitions:
        builder = builder.config("spark.sql.shuffle.partitions", str(args.partitions))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    try:
        started = time.monotonic()
        n_lines, n_distinct = run(spark, args.inputs, args.output, policy)
    finally:
        spark.stop()
    print(
        f"{n_lines:,} lines, {n_distinct:,} distinct in {time.monotonic() - started:.1f} s "
        f"-> {args.output}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
