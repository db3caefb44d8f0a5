"""The CPU cost of auditing an access log on Spark (`urlsan.spark.audit`), against what the same
job costs with a Python UDF that does nothing, plus what ``urlsan audit`` spends on the same
lines in one process.

    .venv/bin/python bench/cluster_audit.py [--repeat 2] [--rounds 3] [--profile rfc3986]

The access log: one combined-format line per URL of ada-kasztp.txt and ada-userbait.txt
(ada-url/url-various-datasets, ~59k real URLs, see ../shared/data/SOURCES.md; the target is the
URL's path and query, its host the virtual host), ``--repeat`` times over, written plain to a
temporary file.  Three jobs on it, each the best of ``--rounds`` after an untimed warm-up:

* ``urlsan audit`` in this process (``urlsan.cli.main.main``, records written to /dev/null):
  CPU time of this process (``time.process_time``).
* Spark ``local[2]``: ``spark.read.text`` → the job → every column evaluated (the ``noop``
  writer), once with ``urlsan.spark.audit``, once with the same plan around a Python function
  that reads each Arrow batch of lines and writes no record (``mapInArrow`` with the same output
  type, then the same ``from_json``).  CPU time of this process and every process under it (the
  JVM, its Python workers: bench/integrations.py's ``cpu_seconds``), so that other load on a
  shared machine does not count.

Goal: the Spark job at most 1.3x the do-nothing job plus ``urlsan audit``'s CPU time.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from corpus import load  # bench/corpus.py: this folder is on sys.path when run
from integrations import cpu_seconds  # the CPU time of this process and all under it

HERE = Path(__file__).resolve().parent
GOAL = 1.3


def access_log(urls: list[str], path: Path) -> int:
    """One vhost-combined line per URL (its path and query the target); returns the lines."""
    with path.open("wb") as out:
        for n, url in enumerate(urls):
            parts = urllib.parse.urlsplit(url)
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            target = target.replace("\\", "\\\\").replace('"', '\\"')
            host = parts.netloc or "-"
            out.write(
                f"{host} 192.0.2.{n % 250} - - [22/Nov/2026:04:{n // 60 % 60:02d}:{n % 60:02d} "
                f'+0000] "GET {target} HTTP/1.1" 200 512 "-" "bench/1"\n'.encode(
                    "utf-8", "surrogateescape"
                )
            )
    return len(urls)


def timed(run: Callable[[], object], clock: Callable[[], float], rounds: int) -> float:
    """The least CPU time of ``rounds`` runs of ``run``, after one untimed run."""
    run()
    best = float("inf")
    for _ in range(rounds):
        started = clock()
        run()
        best = min(best, clock() - started)
    return best


def one_process(log: Path, rounds: int, profile: str) -> float:
    from urlsan.cli.main import main

    def run() -> None:
        with open(os.devnull, "w") as sink, contextlib.redirect_stderr(sink):
            main(["audit", "-q", "--no-progress", "--profile", profile, "-o", os.devnull, str(log)])

    return timed(run, time.process_time, rounds)


def _nothing(batches: Iterable[Any]) -> Iterable[Any]:
    """Each Arrow batch of lines read into Python, as `urlsan.spark.audit` reads it, and no
    record written."""
    import pyarrow as pa

    for batch in batches:
        batch.column(0).to_pylist()
        yield pa.RecordBatch.from_arrays([pa.array([], pa.string())], ["line"])


def on_spark(log: Path, rounds: int, partitions: int, profile: str) -> tuple[float, float, int]:
    """(the do-nothing job's CPU seconds, urlsan.spark.audit's, its records)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from urlsan.spark import RECORD_TYPE, audit

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("urlsan-bench-audit")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        lines = spark.read.text(str(log)).repartition(partitions).cache()
        lines.count()  # read once, before any clock starts
        line = F.col("line")

        def nothing() -> None:
            empty = lines.mapInArrow(_nothing, "line string")
            out = empty.select(F.from_json(line, RECORD_TYPE).alias("r"), line)
            out.select("r.*", "line").write.format("noop").mode("overwrite").save()

        def audited() -> None:
            audit(lines, profile=profile).write.format("noop").mode("overwrite").save()

        floor = timed(nothing, cpu_seconds, rounds)
        job = timed(audited, cpu_seconds, rounds)
        records = audit(lines, profile=profile).count()
    finally:
        spark.stop()
    return floor, job, records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("--corpus-dir", type=Path, default=HERE.parent.parent / "shared" / "data")
    parser.add_argument("--repeat", type=int, default=2, help="repeat the corpus (default: 2)")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds; the best counts")
    parser.add_argument("--partitions", type=int, default=4, help="Spark partitions (default: 4)")
    parser.add_argument("--profile", default="rfc3986", help="urlsan profile (default: rfc3986)")
    args = parser.parse_args(argv)
    urls = load(args.corpus_dir, args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "access.log"
        n = access_log(urls, log)
        alone = one_process(log, args.rounds, args.profile)
        floor, job, records = on_spark(log, args.rounds, args.partitions, args.profile)
    budget = GOAL * floor + alone
    print(
        f"{n:,} access-log lines, {records:,} audit records (profile {args.profile}); "
        f"CPU seconds, best of {args.rounds}"
    )
    print()
    print("| job | CPU s | µs / line |")
    print("|---|---:|---:|")
    for name, cpu in (
        ("urlsan audit, one process", alone),
        ("Spark local[2], a Python function that does nothing", floor),
        ("Spark local[2], urlsan.spark.audit", job),
        (f"budget: {GOAL}x the do-nothing job + urlsan audit", budget),
    ):
        print(f"| {name} | {cpu:.2f} | {cpu / n * 1e6:.1f} |")
    print()
    print(
        f"urlsan.spark.audit: {job / budget:.2f}x the budget; "
        f"{job / floor:.2f}x the do-nothing job; its own work over the do-nothing job's "
        f"{(job - floor):.2f} s, {(job - floor) / alone:.2f}x urlsan audit's"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
