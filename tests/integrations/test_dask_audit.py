"""urlsan.dask.audit on a real dask.distributed LocalCluster (two worker processes): the audit
records of an access log read as lines, and of WARC and HAR files read whole (by path and by
their bytes), equal to what ``urlsan audit`` writes for the same files; written as JSON Lines,
read by ``urlsan report``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dask.dataframe", reason="urlsan.dask is tested with the dask extra")
pytest.importorskip("distributed", reason="urlsan.dask is tested with the dask extra")
pytest.importorskip("warcio", reason="WARC files need the warc extra (warcio)")

import dask.bag as db
from distributed import Client, LocalCluster

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
from urlsan.dask import AUDIT_META, audit

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with cluster, Client(cluster) as c:
        yield c


def lines_of(frame: Any) -> list[bytes]:
    return [line.encode("ascii") for line in frame["line"].compute().tolist()]


@pytest.mark.parametrize("options", [{}, OPTIONS], ids=["defaults", "options"])
def test_lines_and_files_as_urlsan_audit(
    client: Client, tmp_path: Path, options: dict[str, str]
) -> None:
    flags = FLAGS if options else []
    paths = write_files(tmp_path)
    # Lines as read_text gives them (with their line ends), cut into several partitions.
    log = db.read_text(str(paths["access-log"]), errors="surrogateescape").repartition(3)
    assert log.count().compute() == len(ACCESS_LINES)
    expected = urlsan_audit(tmp_path, [paths["access-log"]], *flags)
    assert len(expected) >= 8
    assert lines_of(audit(log, **options)) == expected
    order = [paths["har"], paths["warc"]]
    expected = urlsan_audit(tmp_path, order, *flags)
    assert len(expected) == 6
    by_path = db.from_sequence([str(p) for p in order], npartitions=2)
    assert lines_of(audit(by_path, files=True, **options)) == expected
    by_bytes = db.from_sequence([p.read_bytes() for p in order], npartitions=1)
    assert lines_of(audit(by_bytes, files=True, **options)) == expected


def test_columns_are_the_record(client: Client, tmp_path: Path) -> None:
    paths = write_files(tmp_path)
    records = audit(
        db.read_text(str(paths["access-log"]), errors="surrogateescape"), profile="crawler"
    ).compute()
    assert list(records.columns) == [*_audit_frames.FIELDS, "line"]
    assert records.dtypes.to_dict() == AUDIT_META.dtypes.to_dict()
    non_utf8 = 0
    lossy: set[str] = set()
    for row in records.to_dict("records"):
        written = json.loads(row["line"])
        if "\\udc" in row["line"]:  # a byte that is not UTF-8: "?" in the columns, as in Spark
            non_utf8 += 1
            assert row["before"] in ("/café/?/x/../y", "/r?w/./x")
            lossy = {k for k, v in written.items() if "\\udc" in json.dumps(v)}
            written = {k: v for k, v in written.items() if k not in lossy}
        # Every field the line has is a column with its value; the others are null.
        assert {k: without_nulls(row[k]) for k in written} == written
        assert all(row[k] is None for k in row.keys() - written.keys() - lossy - {"line"})
    assert non_utf8 == 2


def test_written_json_lines_are_read_by_urlsan_report(client: Client, tmp_path: Path) -> None:
    paths = write_files(tmp_path)
    records = audit(db.read_text(str(paths["access-log"]), errors="surrogateescape").repartition(2))
    # The fields, through pandas' JSON writer, of the records whose text is UTF-8 (a column of
    # text holds no "\\udcXX" escape of a byte that is none: the line does).
    utf8 = records[~records["line"].str.contains("\\udc", regex=False)]
    out = tmp_path / "records"
    utf8.drop(columns="line").to_json(str(out / "*.jsonl"), orient="records", lines=True)

    expected = tmp_path / "expected-utf8.jsonl"
    lines = urlsan_audit(tmp_path, [paths["access-log"]])
    expected.write_bytes(b"".join(line + b"\n" for line in lines if b"\\udc" not in line))
    want = reported(expected)
    assert len(lines) > want["requests"] >= 7
    assert reported(*sorted(out.glob("*.jsonl"), key=lambda p: int(p.stem))) == want


def test_bad_options_fail_before_any_task() -> None:
    lines = db.from_sequence(["x"])
    with pytest.raises(ValueError, match="profile"):
        audit(lines, profile="nope")
    with pytest.raises(ValueError, match="lines are read as"):
        audit(lines, format="warc")
    with pytest.raises(ValueError, match="unknown format"):
        audit(lines, files=True, format="pcap")
    with pytest.raises(TypeError):
        audit(lines, quiet=True)  # urlsan audit's own, not the decision's
