"""URLs per second per core through urlsan's Spark UDF and Dask functions, against the plain
in-process loop over `urlsan.core.canonicalize` on the same URLs.

    .venv/bin/python bench/integrations.py [--repeat 4] [--rounds 5] [--only dask,spark]

Corpora: ada-kasztp.txt and ada-userbait.txt from ada-url/url-various-datasets (~59k real URLs,
see ../shared/data/SOURCES.md), repeated ``--repeat`` times.  Each cluster path runs on two
cores (Spark ``local[2]``; a Dask LocalCluster of two single-threaded worker processes); the
loop on one.  The input is loaded into the cluster (cached, persisted) before the clock starts,
and the cluster is warmed up with one untimed run, so the figures are the steady cost per URL:
Arrow or pickle transfer, the pandas glue, the scheduler, and canonicalization itself, not the
JVM's start.

"Per core" is URLs per CPU-second: the CPU time of this process and every process under it (the
JVM and its Python workers; the Dask nanny and worker processes), so that other load on a shared
machine does not count, and neither do idle cores.  Wall-clock seconds are shown too.  The best
of ``--rounds`` counts.  Every round builds a new task graph or DataFrame, so that neither Dask
(results still in worker memory) nor Spark (a plan it collected before) skips the work.  Goal
(issue #12): at least 0.5x the loop per core.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
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
from urlsan.core import Policy, canonicalize

HERE = Path(__file__).resolve().parent
CORPORA = ("ada-kasztp.txt", "ada-userbait.txt")
CRAWLER = Policy.profile("crawler")


def load(corpus_dir: Path, repeat: int) -> list[str]:
    urls: list[str] = []
    for name in CORPORA:
        path = corpus_dir / name
        if not path.exists():
            sys.exit(f"corpus {path} is missing: pass --corpus-dir (see shared/data/SOURCES.md)")
        with path.open(encoding="utf-8", errors="surrogateescape") as f:
            urls += [line.rstrip("\r\n").lstrip("\ufeff") for line in f]
    return [u for u in urls if u] * repeat


class Row(NamedTuple):
    path: str
    cores: int
    seconds: float  # wall clock
    cpu: float  # CPU seconds of this process and all under it


def cpu_seconds() -> float:
    """CPU time of this process and its descendants (exited ones through their parents)."""
    me = psutil.Process()
    total = 0.0
    for process in [me, *me.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            t = process.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
    return total


def best(path: str, cores: int, rounds: int, run: Callable[[int], object]) -> Row:
    walls, cpus = [], []
    for i in range(rounds):
        cpu, started = cpu_seconds(), time.perf_counter()
        run(i)
        walls.append(time.perf_counter() - started)
        cpus.append(cpu_seconds() - cpu)
    return Row(path, cores, min(walls), min(cpus))


def loop(urls: list[str], rounds: int) -> list[Row]:
    def canonical_urls(_: int) -> object:
        return [canonicalize(u, CRAWLER).url for u in urls]

    canonical_urls(-1)  # warm: tables built, caches filled
    return [best("in-process loop, canonicalize()", 1, rounds, canonical_urls)]


def spark(urls: list[str], rounds: int) -> list[Row]:
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
        frame = session.createDataFrame([(u,) for u in urls], "url string").repartition(4)
        frame = frame.cache()
        frame.count()  # loaded into the executors' memory before the clock starts

        def run(_: int) -> object:
            # A new DataFrame each round: collecting the same one twice can skip the work.
            canonical = canonicalize_udf("url").url
            return frame.select(F.sum(F.length(canonical))).collect()

        run(-1)  # warm: Python workers started, urlsan imported in them
        kind = "Arrow" if getattr(spark_functions, "arrow_udf", None) else "pandas"
        rows = [best(f"Spark {kind} UDF, local[2]", 2, rounds, run)]
        if kind == "Arrow":
            floor = spark_functions.arrow_udf(_spark_identity, RESULT_TYPE)

            def run_floor(_: int) -> object:
                return frame.select(F.sum(F.length(floor("url").url))).collect()

            run_floor(-1)
            rows.append(
                best("Spark Arrow UDF doing nothing (Spark's own cost)", 2, rounds, run_floor)
            )
        return rows
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


def dask(urls: list[str], rounds: int) -> list[Row]:
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
        frame = client.persist(dd.from_pandas(pd.Series(urls, name="url"), npartitions=8))
        bag = client.persist(db.from_sequence(urls, npartitions=8))
        wait([frame, bag])
        jobs: dict[str, Callable[[int], Any]] = {
            "Dask DataFrame map_partitions, 2 workers": lambda i: frame.map_partitions(
                canonicalize_frame, meta=META, token=f"urlsan-{i}"
            ).url.count(),
            "Dask Bag map_partitions, 2 workers": lambda i: bag.map_partitions(
                canonicalize_partition, token=f"urlsan-{i}"
            ).count(),
            "Dask DataFrame map_partitions counting rows (Dask's own cost)": lambda i: (
                frame.map_partitions(_rows, meta=("rows", "int64"), token=f"rows-{i}").sum()
            ),
        }
        for name, job in jobs.items():
            job(-1).compute()  # warm
            rows.append(best(name, 2, rounds, lambda i, job=job: job(i).compute()))
    return rows


def _rows(partition: Any) -> Any:
    """A Dask partition's number of rows, as a one-row Series: a task that does nothing, so
    that what is left is Dask's own cost (the graph, the scheduler, the workers' upkeep)."""
    import pandas as pd

    return pd.Series([len(partition)], dtype="int64")


def table(n: int, rows: list[Row]) -> str:
    base = n / rows[0].cpu  # URLs per CPU-second in the loop
    lines = [
        f"{n:,} URLs (crawler profile)",
        "",
        "| path | cores | wall s | URLs/s (wall) | CPU s | URLs per CPU-second | vs loop |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        per_core = n / row.cpu
        lines.append(
            f"| {row.path} | {row.cores} | {row.seconds:.2f} | {n / row.seconds:,.0f} | "
            f"{row.cpu:.2f} | {per_core:,.0f} | {per_core / base:.2f}x |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus-dir", type=Path, default=HERE.parent.parent / "shared" / "data")
    parser.add_argument("--repeat", type=int, default=4, help="repeat the corpus (default: 4)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds; the best counts")
    # Dask first: Spark's JVM outlives its session, and its threads' CPU would count against Dask.
    parser.add_argument("--only", default="dask,spark", help="cluster paths: dask,spark")
    args = parser.parse_args(argv)
    urls = load(args.corpus_dir, args.repeat)
    rows = loop(urls, args.rounds)
    paths = {"spark": spark, "dask": dask}
    for name in filter(None, args.only.split(",")):
        rows += paths[name](urls, args.rounds)
    print(table(len(urls), rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
