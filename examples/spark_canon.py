"""The Dask job of `dask_canon.py`, in PySpark: canonicalize URL lists with urlsan's pandas UDF,
deduplicate, write.

    python examples/spark_canon.py --master 'local[*]' 'urls/*.txt.gz' canonical/
    spark-submit --master yarn examples/spark_canon.py \\
        's3a://crawl/urls/*.txt.gz' s3a://crawl/canonical/                     # a cluster

The URL work is `urlsan.spark.canonicalize_udf`, a pandas UDF over Arrow batches (Python is
entered once per 10,000 rows, not once per URL); this file is the job around it.  The policy
reaches the executors pickled inside the UDF's closure; the executors need urlsan installed
(``pip install 'urlsan[spark]'`` in the cluster image, or ``--py-files``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from urlsan.spark import canonicalize_udf


def run(spark: SparkSession, paths: list[str], output: str, canonical: Any) -> tuple[int, int]:
    """Write the distinct canonical URLs of ``paths`` to ``output``; (input lines, distinct)."""
    lines = spark.read.text(paths)  # gzip and friends by the file name; one row per line
    # Blank lines and refused URLs have no canonical url.
    urls = lines.select(canonical("value").url.alias("url")).where(F.col("url").isNotNull())
    urls.dropDuplicates(["url"]).write.mode("overwrite").option("compression", "gzip").text(output)
    return lines.count(), spark.read.text(output).count()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("inputs", nargs="+", help="URL lists: paths or globs")
    parser.add_argument("output", help="directory for the distinct canonical URLs")
    parser.add_argument("--master", help="Spark master (default: spark-submit's, or local[*])")
    parser.add_argument("--profile", default="crawler", help="urlsan profile (default: crawler)")
    parser.add_argument("--rules", default="", help="rules on/off: '+merge-slashes'")
    parser.add_argument("--drop-params", action="append", default=[], help="'utm_*' 'h.com:ref'")
    parser.add_argument("--keep-params", action="append", default=[], help="'shop.test:id,page'")
    parser.add_argument("--partitions", type=int, help="shuffle partitions (default: Spark's)")
    args = parser.parse_args(argv)
    # Built on the driver: a bad option fails here, before any executor starts.
    canonical = canonicalize_udf(
        profile=args.profile,
        rules=args.rules,
        drop_params=args.drop_params,
        keep_params=args.keep_params,
    )

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
        n_lines, n_distinct = run(spark, args.inputs, args.output, canonical)
    finally:
        spark.stop()
    print(
        f"{n_lines:,} lines, {n_distinct:,} distinct in {time.monotonic() - started:.1f} s "
        f"-> {args.output}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
