"""urlsan.spark.audit on a real local Spark (local[2]): the audit records of an access log read
as lines, and of WARC and HAR files read whole, equal to what ``urlsan audit`` writes for the same
files; written as JSON Lines, read by ``urlsan report``.

CI sets URLSAN_REQUIRE_SPARK=1 (fail, not skip, without pyspark or Java), as for
test_spark_udf.py.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("URLSAN_REQUIRE_SPARK") != "1":
    pytest.importorskip("pyspark", reason="urlsan.spark needs the spark extra")
    pytest.importorskip("pyarrow", reason="pandas UDFs need pyarrow")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("PySpark needs a Java runtime: .ci/install-jdk", allow_module_level=True)
pytest.importorskip("warcio", reason="WARC files need the warc extra (warcio)")

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, StructType

from tests.integrations.audit_corpus import (
    ACCESS_LINES,
    FLAGS,
    OPTIONS,
    reported,
    urlsan_audit,
    without_nulls,
    write_files,
)
from urlsan import _audit_frames
from urlsan.cli.main import main
from urlsan.spark import AUDIT_TYPE, RECORD_TYPE, audit, spark_type

pytestmark = pytest.mark.e2e


def lines_of(frame: Any) -> list[bytes]:
    return [row.line.encode("ascii") for row in frame.select("line").collect()]


@pytest.mark.parametrize("options", [{}, OPTIONS], ids=["defaults", "options"])
def test_lines_and_files_as_urlsan_audit(
    spark: SparkSession, tmp_path: Path, options: dict[str, str]
) -> None:
    flags = FLAGS if options else []
    paths = write_files(tmp_path)
    log = spark.read.text(str(paths["access-log"]))  # gzip by the name, one row per line
    assert log.count() == len(ACCESS_LINES)
    expected = urlsan_audit(tmp_path, [paths["access-log"]], *flags)
    assert len(expected) >= 8
    assert lines_of(audit(log, **options)) == expected
    # One row a file, as binaryFile reads them: each read as urlsan audit reads the file.
    files = spark.read.format("binaryFile").load([str(paths["warc"]), str(paths["har"])])
    ordered = files.orderBy("path")  # browse.har, then crawl.warc.gz
    expected = urlsan_audit(tmp_path, [paths["har"], paths["warc"]], *flags)
    assert len(expected) == 6
    assert lines_of(audit(ordered.repartition(1), **options)) == expected


def test_columns_are_the_record(spark: SparkSession, tmp_path: Path) -> None:
    paths = write_files(tmp_path)
    records = audit(spark.read.text(str(paths["access-log"])), profile="crawler")
    assert records.schema == AUDIT_TYPE
    assert records.columns == [*_audit_frames.FIELDS, "line"]
    rows = records.collect()
    non_utf8 = [row.before for row in rows if "\\udc" in row.line]
    assert non_utf8 == ["/café/?/x/../y", "/r?w/./x"]  # "\\udcff" in the line: "?" here
    for row in rows:
        written = json.loads(row.line)
        columns = row.asDict(recursive=True)
        # Every field the line has is a column with its value (bar a byte that is not UTF-8,
        # which a column of text cannot hold: the line keeps its "\udcXX" escape).
        for key, value in written.items():
            if "\\udc" not in json.dumps(value):
                assert without_nulls(columns[key]) == value, key
        assert all(columns[k] is None for k in columns.keys() - written.keys() - {"line"})


def test_schema_holds_every_record_urlsan_audit_writes(tmp_path: Path) -> None:
    """RECORD_TYPE is derived from the record builder; every record `urlsan audit` writes, in
    every mode, fits it: no field, nested or not, that it lacks, none of another type."""
    paths = write_files(tmp_path)
    long = tmp_path / "long.log"
    long.write_bytes(  # after a short line: the format is found in the first 4 KiB
        ACCESS_LINES[0]
        + b'\n192.0.2.9 - - [22/Nov/2026:04:57:58 +0000] "GET /'
        + b"%7e/./" * 3000
        + b'x HTTP/1.1"'
        b' 200 3 "-" "-"\n'
    )
    fields = set()
    for mode in ("audit", "rewrite", "reject", "redirect"):
        flags = ["--mode", mode, "--backends", "nginx,tomcat"]
        for line in urlsan_audit(tmp_path, [*paths.values(), long], *flags):
            record = json.loads(line)
            assert fits(record, RECORD_TYPE), record
            fields |= record.keys()
    assert {"truncated", "backends", "rejected_by", "severity"} <= fields
    assert not fits({"action": 1}, RECORD_TYPE)  # what fits() does not let through
    assert not fits({"edits": [{"rule": "x", "new": 1}]}, RECORD_TYPE)


def fits(value: Any, dtype: DataType) -> bool:
    """Whether ``value`` (a record read back from JSON) has ``dtype``, fields left out aside."""
    if value is None:
        return True
    if isinstance(dtype, StructType):
        return isinstance(value, dict) and all(
            k in dtype.fieldNames() and fits(v, dtype[k].dataType) for k, v in value.items()
        )
    if isinstance(dtype, ArrayType):
        return isinstance(value, list) and all(fits(v, dtype.elementType) for v in value)
    return bool(spark_type(value) == dtype)


def test_written_json_lines_are_read_by_urlsan_report(spark: SparkSession, tmp_path: Path) -> None:
    paths = write_files(tmp_path)
    log = spark.read.text(str(paths["access-log"]))
    files = spark.read.format("binaryFile").load([str(paths["warc"]), str(paths["har"])])
    records = audit(log).unionByName(audit(files.orderBy("path").repartition(1)))
    lines, fields = tmp_path / "lines", tmp_path / "fields"
    records.select("line").write.text(str(lines))  # the lines urlsan audit writes
    # The fields, through Spark's JSON writer (nulls left out), of the records whose text is
    # UTF-8 (a column of text holds no "\udcXX" escape of a byte that is none).
    utf8 = ~F.col("line").contains("\\udc")
    records.where(utf8).drop("line").write.json(str(fields))
    expected = tmp_path / "expected.jsonl"
    order = [paths["access-log"], paths["har"], paths["warc"]]
    assert main(["audit", "-q", "-o", str(expected), *map(str, order)]) == 3  # a bad line
    expected_utf8 = tmp_path / "expected-utf8.jsonl"
    kept = [line for line in expected.read_bytes().splitlines(True) if b"\\udc" not in line]
    expected_utf8.write_bytes(b"".join(kept))

    want = reported(expected)
    assert want["requests"] == len(expected.read_bytes().splitlines()) > 10
    assert reported(*sorted(lines.glob("part-*"))) == want
    assert len(kept) < want["requests"]
    assert reported(*sorted(fields.glob("part-*"))) == reported(expected_utf8)


def test_bad_options_fail_on_the_driver(spark: SparkSession) -> None:
    lines = spark.createDataFrame([("x",)], "value string")
    with pytest.raises(ValueError, match="profile"):
        audit(lines, profile="nope")
    with pytest.raises(ValueError, match="backends"):
        audit(lines, backends="nope")
    with pytest.raises(ValueError, match="lines are read as"):
        audit(lines, format="warc")
    with pytest.raises(TypeError):
        audit(lines, output="x")  # urlsan audit's own, not the decision's
