"""Audit recorded traffic on Spark: access logs and WARC (or HAR) files in, the audit records
``urlsan audit`` writes out, as JSON Lines for ``urlsan report``.

    python examples/spark_audit.py --master 'local[*]' --logs 'logs/*.gz' \\
        --files 'crawl/*.warc.gz' audit/
    urlsan report audit/part-*                                    # the summary, as usual
    spark-submit --master yarn examples/spark_audit.py --logs 's3a://logs/2026/11/*' \\
        --files 's3a://crawl/*.warc.gz' --parquet s3a://audit/fields/ s3a://audit/records/

Access logs are read a line at a time (``spark.read.text``: any number of executors share one
file); WARC and HAR files whole, one row each (``binaryFile``).  The work is
`urlsan.spark.audit`: each line or file is read by ``urlsan audit``'s own readers and decided
as ``urlsan audit`` decides it, and the records are ``urlsan audit``'s, line for line.  This
file is the job around it.  The executors need urlsan installed (``pip install
'urlsan[spark,warc]'`` in the cluster image).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from urlsan.spark import audit


def run(
    spark: SparkSession,
    logs: list[str],
    files: list[str],
    output: str,
    parquet: str | None,
    options: dict[str, Any],
) -> int:
    """Write the audit records of ``logs`` and ``files`` to ``output`` (JSON Lines, as
    ``urlsan audit -o`` writes them), and their fields to ``parquet``; returns their number."""
    parts: list[DataFrame] = []
    if logs:
        parts.append(audit(spark.read.text(logs), **options))
    if files:
        parts.append(audit(spark.read.format("binaryFile").load(files), **options))
    if not parts:
        raise SystemExit("nothing to audit: give --logs, --files or both")
    records = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
    records = records.cache()  # written twice, decided once
    records.select("line").write.mode("overwrite").text(output)
    if parquet:
        records.drop("line").write.mode("overwrite").parquet(parquet)
    return records.count()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("output", help="directory for the audit records (JSON Lines parts)")
    parser.add_argument("--logs", action="append", default=[], help="access logs: paths, globs")
    parser.add_argument("--files", action="append", default=[], help="WARC, HAR files: globs")
    parser.add_argument("--parquet", help="also write the records' fields here, as Parquet")
    parser.add_argument("--master", help="Spark master (default: spark-submit's, or local[*])")
    # urlsan audit's options, as it takes them (urlsan audit --help); a flag not given is left
    # to urlsan.spark.audit, whose defaults are urlsan audit's.
    parser.add_argument("--mode", help="urlsan_mode to record (default: audit)")
    parser.add_argument("--profile", help="rule profile (default: rfc3986)")
    parser.add_argument("--rules", help="rules on/off: '+merge-slashes'")
    parser.add_argument("--backends", help="servers to protect: 'nginx,tomcat'")
    parser.add_argument("--signed", help="skip (default) or rewrite")
    parser.add_argument("--redact", help="query parameters to mask (default: urlsan's list)")
    args = parser.parse_args(argv)
    names = ("mode", "profile", "rules", "backends", "signed", "redact")
    options = {k: getattr(args, k) for k in names if getattr(args, k) is not None}

    builder = SparkSession.builder.appName("urlsan-audit")
    if args.master:
        builder = builder.master(args.master)
        if args.master.startswith("local"):
            # Local workers run this Python (the one with urlsan), not the first python3 on PATH.
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    try:
        started = time.monotonic()
        try:
            n = run(spark, args.logs, args.files, args.output, args.parquet, options)
        except ValueError as e:  # a bad option, found on the driver before any task runs
            print(f"spark_audit.py: {e}", file=sys.stderr)
            return 2
    finally:
        spark.stop()
    print(f"{n:,} audit records in {time.monotonic() - started:.1f} s -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
