"""URLs per second per core through urlsan's Spark UDF and Dask functions, against the plain
in-process loop over `urlsan.core.canonicalize` on the same URLs.

    .venv/bin/python bench/integrations.py [--repeat 4] [--rounds 5] [--only dask,spark]
                                           [--scale 3]

Corpora: ada-kasztp.txt and ada-userbait.txt from ada-url/url-various-datasets (~59k real URLs,
see ../shared/data/SOURCES.md), repeated ``--repeat`` times.  Each cluster path runs on two
cores (Spark ``local[2]``; a Dask LocalCluster of two single-threaded worker processes); the
loop on one.  The input is loaded into the cluster (cached, persisted) before the clock starts,
and the cluster is warmed up with untimed runs, so the figures are the steady cost per URL:
Arrow or pickle transfer, the pandas glue, the scheduler, and canonicalization itself, not the
JVM's start.  Spark's floor, an Arrow UDF that does nothing, is timed before urlsan's UDF, in
Python workers that have not run urlsan yet (its UDF freezes a worker's heap: urlsan.spark).

"Per core" is URLs per CPU-second: the CPU time of this process and every process under it (the
JVM and its Python workers; the Dask nanny and worker processes), so that other load on a shared
machine does not count, and neither do idle cores.  Wall-clock seconds are shown too.  The best
of ``--rounds`` counts.  Every round builds a new task graph or DataFrame, so that neither Dask
(results still in worker memory) nor Spark (a plan it collected before) skips the work.  Goal
(issue #12): at least 0.5x the loop per core.

Two figures per path.  "Whole job" is the job on ``--repeat`` copies of the corpus, all its
costs included.  A job also has costs that do not grow with its URLs: Spark plans the query,
generates and compiles its code (the JVM's JIT threads keep compiling for dozens of jobs), and
runs a task per partition, each with a fixed cost in the Python worker; Dask builds and
schedules a graph.  So every path also runs on ``--scale`` times as many URLs, in as many
partitions (bigger ones), and "marginal" is the extra URLs over the extra CPU-seconds between
the two (the median over the rounds of what the bigger run cost more in the same round): the
steady cost of one more URL in a job already running.  Neither hides the other: the whole-job
figure is the one a job of this size sees, the marginal one what a large job tends to.  The JVM
keeps compiling for dozens of jobs after it starts, so the Spark paths get three untimed
warm-up runs of each size, not one.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import logging
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import psutil

try:  # the Spark path's floor is an Arrow UDF, whose type hints Spark reads
    import pyarrow as pa  # type: ignore[import-untyped]
except ImportError:  # pragma: no cover - without the spark extra
    pa = None
from corpus import load  # bench/corpus.py: this folder is on sys.path when run

from urlsan.core import Policy, canonicalize

HERE = Path(__file__).resolve().parent
CRAWLER = Policy.profile("crawler")
# CPU times come in clock ticks (10 ms): a smaller difference between two runs says nothing.
RESOLUTION = 0.03


class Row(NamedTuple):
    path: str
    cores: int
    seconds: float  # wall clock
    cpu: float  # CPU seconds of this process and all under it
    extra_cpu: float  # what --scale times the URLs cost more, in CPU seconds


class Runs(NamedTuple):
    """A path's job on the corpus and on ``--scale`` times it: ``run(big, round)``."""

    path: str
    cores: int
    run: Callable[[bool, int], object]


def cpu_seconds() -> float:
    """CPU time of this process and its descendants (exited ones through their parents)."""
    me = psutil.Process()
    total = 0.0
    for process in [me, *me.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            t = process.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
    return total


def best(runs: Runs, rounds: int) -> Row:
    """The best of ``rounds`` on the corpus, and the median of what the bigger run cost more in
    the same round (a median: one freak round, a process whose CPU went uncounted, must not
    make the difference).  The sizes alternate round by round, so that load coming and going on
    the machine, or a JVM still warming up, weighs on both alike."""
    walls: list[float] = []
    cpus: dict[bool, list[float]] = {False: [], True: []}
    for i in range(rounds):
        for big in (False, True):
            cpu, started = cpu_seconds(), time.perf_counter()
            runs.run(big, i)
            if not big:
                walls.append(time.perf_counter() - started)
            cpus[big].append(cpu_seconds() - cpu)
    extra = statistics.median(b - s for s, b in zip(cpus[False], cpus[True], strict=True))
    return Row(runs.path, runs.cores, min(walls), min(cpus[False]), extra)


def measure(rounds: int, runs: Runs, warm: int = 1) -> Row:
    """Warm both sizes with ``warm`` untimed runs each, then time them."""
    for i in range(warm):
        for big in (False, True):
            runs.run(big, -1 - i)
    return best(runs, rounds)


def loop(urls: list[str], scale: int, rounds: int) -> list[Row]:
    sizes = {False: urls, True: urls * scale}

    def canonical_urls(big: bool, _: int) -> object:
        return [canonicalize(u, CRAWLER).url for u in sizes[big]]

    return [measure(rounds, Runs("in-process loop, canonicalize()", 1, canonical_urls))]


def spark(urls: list[str], scale: int, rounds: int) -> list[Row]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.pandas import functions as spark_functions

    from urlsan.spark import RESULT_TYPE, canonicalize_udf

    session = (
        SparkSession.builder.master("local[2]")
        .appName("urlsan-bench")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        frames = {}
        for big in (False, True):
            data = [(u,) for u in (urls * scale if big else urls)]
            frames[big] = session.createDataFrame(data, "url string").repartition(4).cache()
            frames[big].count()  # loaded into the executors' memory before the clock starts

        def run(big: bool, _: int) -> object:
            # A new DataFrame each round: collecting the same one twice can skip the work.
            canonical = canonicalize_udf("url").url
            return frames[big].select(F.sum(F.length(canonical))).collect()

        # The warm-up runs start the Python workers and import urlsan in them.
        kind = "Arrow" if getattr(spark_functions, "arrow_udf", None) else "pandas"
        floor = []
        if kind == "Arrow":
            identity = spark_functions.arrow_udf(_spark_identity, RESULT_TYPE)

            def run_floor(big: bool, _: int) -> object:
                return frames[big].select(F.sum(F.length(identity("url").url))).collect()

            # Before urlsan's UDF: its first batch freezes the worker's heap (urlsan.spark), which
            # would take the Python workers' fixed cost per task out of Spark's own cost too.
            path = "Spark Arrow UDF doing nothing (Spark's own cost)"
            # Three warm-ups, not one: the JVM's JIT threads are still at work after the first.
            floor.append(measure(rounds, Runs(path, 2, run_floor), warm=3))
        udf = measure(rounds, Runs(f"Spark {kind} UDF, local[2]", 2, run), warm=3)
        return [udf, *floor]
    finally:
        session.stop()


def _spark_identity(values: pa.Array) -> pa.Array:
    """An Arrow UDF with urlsan's result type that canonicalizes nothing: each URL as it is,
    unchanged, no rules.  What is left is Spark's own cost per row (Arrow out of the JVM and
    back, the Python worker), the floor under any UDF."""
    from pyspark.sql.pandas.types import to_arrow_type

    from urlsan.spark import RESULT_TYPE

    fields = list(to_arrow_type(RESULT_TYPE))  # url, changed, rules
    n = len(values)
    arrays = [
        values.cast(pa.string()),
        pa.repeat(False, n),
        pa.array([[]] * n, fields[2].type),
    ]
    return pa.StructArray.from_arrays(arrays, fields=fields)


def dask(urls: list[str], scale: int, rounds: int) -> list[Row]:
    import dask.bag as db
    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client, LocalCluster, wait

    from urlsan.dask import META, canonicalize_frame, canonicalize_partition

    logging.getLogger("distributed").setLevel(logging.ERROR)
    rows = []
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        frames, bags = {}, {}
        for big in (False, True):
            sized = urls * scale if big else urls
            frames[big] = client.persist(
                dd.from_pandas(pd.Series(sized, name="url"), npartitions=8)
            )
            bags[big] = client.persist(db.from_sequence(sized, npartitions=8))
        wait([*frames.values(), *bags.values()])
        jobs: dict[str, Callable[[bool, int], Any]] = {
            "Dask DataFrame map_partitions, 2 workers": lambda big, i: (
                frames[big]
                .map_partitions(canonicalize_frame, meta=META, token=f"urlsan-{big}-{i}")
                .url.count()
            ),
            "Dask Bag map_partitions, 2 workers": lambda big, i: (
                bags[big].map_partitions(canonicalize_partition, token=f"urlsan-{big}-{i}").count()
            ),
            "Dask DataFrame map_partitions counting rows (Dask's own cost)": lambda big, i: (
                frames[big]
                .map_partitions(_rows, meta=("rows", "int64"), token=f"rows-{big}-{i}")
                .sum()
            ),
        }
        for name, job in jobs.items():
            computed = functools.partial(_compute, job)
            rows.append(measure(rounds, Runs(name, 2, computed)))
    return rows


def _compute(job: Callable[[bool, int], Any], big: bool, i: int) -> object:
    return job(big, i).compute()


def _rows(partition: Any) -> Any:
    """A Dask partition's number of rows, as a one-row Series: a task that does nothing, so
    that what is left is Dask's own cost (the graph, the scheduler, the workers' upkeep)."""
    import pandas as pd

    return pd.Series([len(partition)], dtype="int64")


def table(n: int, scale: int, rows: list[Row]) -> str:
    extra = n * (scale - 1)  # the URLs the big run adds
    base = n / rows[0].cpu  # URLs per CPU-second in the loop
    base_marginal = extra / rows[0].extra_cpu
    lines = [
        f"{n:,} URLs (crawler profile); marginal: between {n:,} and {n * scale:,}",
        "",
        "| path | cores | wall s | URLs/s (wall) | CPU s | URLs per CPU-second | vs loop "
        f"| CPU s more at x{scale} | marginal URLs per CPU-second | vs loop |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        per_core = n / row.cpu
        if row.extra_cpu < RESOLUTION:  # a difference of clock ticks: no figure at all
            marginal_cells = "- | - |"
        else:
            marginal = extra / row.extra_cpu
            marginal_cells = f"{marginal:,.0f} | {marginal / base_marginal:.2f}x |"
        lines.append(
            f"| {row.path} | {row.cores} | {row.seconds:.2f} | {n / row.seconds:,.0f} | "
            f"{row.cpu:.2f} | {per_core:,.0f} | {per_core / base:.2f}x | "
            f"{row.extra_cpu:.2f} | {marginal_cells}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("--corpus-dir", type=Path, default=HERE.parent.parent / "shared" / "data")
    parser.add_argument("--repeat", type=int, default=4, help="repeat the corpus (default: 4)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds; the best counts")
    parser.add_argument(
        "--scale", type=int, default=3, help="the second run's URLs, times --repeat's (default: 3)"
    )
    # Dask first: Spark's JVM outlives its session, and its threads' CPU would count against Dask.
    parser.add_argument("--only", default="dask,spark", help="cluster paths: dask,spark")
    args = parser.parse_args(argv)
    if args.scale < 2:
        parser.error("--scale must be 2 or more")
    urls = load(args.corpus_dir, args.repeat)
    rows = loop(urls, args.scale, args.rounds)
    paths = {"spark": spark, "dask": dask}
    for name in filter(None, args.only.split(",")):
        rows += paths[name](urls, args.scale, args.rounds)
    print(table(len(urls), args.scale, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
