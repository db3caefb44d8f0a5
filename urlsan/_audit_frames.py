"""What `urlsan.spark.audit` and `urlsan.dask.audit` share: the auditor their options build, the
loops that turn a batch of access-log lines or one recorded file into audit-log lines, and the
record's fields.

The work is ``urlsan audit``'s own: the settings come from `urlsan.addon.decision.settings` (the
function ``urlsan audit`` builds them with), each request is read by ``urlsan audit``'s readers
(`urlsan.audit.sources.read`: a batch of lines is read as the access log it is a part of, a
file's bytes as the file), decided and recorded by its `Auditor` (`decision.examine`,
`decision.record`), and written by `urlsan.audit.record.serialize`.  What comes out of a batch is
the audit-log lines ``urlsan audit`` writes for it, in input order; the frames parse their
columns from those lines.

Pure Python: neither Spark, Dask nor pandas is needed here.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import IO, Any

from urlsan.addon import decision
from urlsan.audit import record, sources
from urlsan.audit.redact import DEFAULT_REDACT, Redactor
from urlsan.cli.audit import Auditor
from urlsan.cli.audit_lines import LogLines
from urlsan.cli.blocks import Block
from urlsan.core import Edit, Finding
from urlsan.core.backends import Divergence
from urlsan.core.options import OptionNames

__all__ = [
    "FIELDS",
    "LINE",
    "LINE_FORMATS",
    "auditor",
    "auditor_of",
    "block_records",
    "exemplar",
    "fields_of",
    "file_records",
    "format_of",
    "line_records",
    "options_of",
]

# The column holding each record as ``urlsan audit`` writes it (one ASCII JSON line without its
# newline): a byte that is not UTF-8 is a "\udcXX" escape there, which a column of text (Spark's,
# Arrow's: UTF-8) cannot hold as it is.
LINE = "line"
# The formats read a line at a time, each line on its own: a frame of lines can be cut anywhere.
# (CDX is not: its header line names the fields of the lines after it.)
LINE_FORMATS = ("access-log", "cdxj")

# What the Python functions call the options, in their messages: their keyword arguments.
KEYWORDS = OptionNames("profile", "rules", "drop_params", "keep_params")


def auditor(
    *, mode: str = "audit", redact: str | Sequence[str] | None = None, **options: Any
) -> Auditor:
    """The `Auditor` of ``urlsan audit`` for these options: ``mode`` (``urlsan audit``'s default,
    audit), ``redact`` (names, a list or comma-separated; None: the default list), and every
    other keyword passed to `urlsan.addon.decision.settings` as it is (``profile``, ``rules``,
    ``signed``, ``backends``, ``drop_params``, ``keep_params``, ``max_target``).  Raises
    `ValueError` naming a bad option, `TypeError` for an option ``urlsan audit`` does not take."""
    settings = decision.settings(mode=mode, names=KEYWORDS, backends_option="backends", **options)
    if redact is None:
        names: Sequence[str] = DEFAULT_REDACT
    else:
        names = redact.split(",") if isinstance(redact, str) else list(redact)
    return Auditor(settings, Redactor.of(names))


Options = tuple[tuple[str, Any], ...]  # keyword options, as a value that pickles and hashes


def options_of(options: dict[str, Any]) -> Options:
    """``options`` (`auditor`'s keywords) as what travels to the workers: each worker builds its
    auditor from them once (`auditor_of`); the auditor itself holds functions that do not pickle.
    """
    return tuple(
        (k, tuple(v) if isinstance(v, list | tuple | set | frozenset) else v)
        for k, v in sorted(options.items())
    )


@lru_cache(maxsize=8)
def auditor_of(options: Options) -> Auditor:
    """`auditor` of ``options`` (`options_of`), built once per process."""
    return auditor(**dict(options))


def format_of(fmt: str, lines: bool) -> str:
    """The format a frame's rows are read in: ``fmt`` checked; for lines, ``"auto"`` is
    ``"access-log"``.  Raises `ValueError` for a format they cannot be read in."""
    if lines:
        fmt = "access-log" if fmt == "auto" else fmt
        if fmt not in LINE_FORMATS:
            raise ValueError(f"lines are read as {' or '.join(LINE_FORMATS)}, not {fmt!r}")
    elif fmt != "auto" and fmt not in sources.FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(sources.FORMATS)}")
    return fmt


def _records(stream: IO[bytes], fmt: str, name: str, checker: Auditor) -> list[str]:
    """The audit-log lines of ``stream`` read as ``fmt``, as ``urlsan audit`` writes them (each
    without its newline); an entry the reader cannot read is left out, as there."""
    out = []
    try:
        for item in sources.read(stream, fmt, name):
            if isinstance(item, sources.Unreadable):
                continue
            rec = checker.check(item)
            if rec is not None:
                out.append(record.serialize(rec, checker.redactor)[:-1].decode("ascii"))
    except (EOFError, gzip.BadGzipFile, UnicodeDecodeError):
        pass  # a torn or corrupt .gz: what was read counts, as in ``urlsan audit``
    return out


def line_records(
    lines: Iterable[str | bytes | None], checker: Auditor, fmt: str = "access-log"
) -> list[str]:
    """The audit-log lines of a batch of lines of an access log (or a CDXJ index: ``fmt``), in
    order: the batch is read as the part of the file it is.  A line may keep its line end (Dask's
    ``read_text``) or not (Spark's ``read.text``); None is no line."""
    block = b"".join(
        (line.encode("utf-8", "surrogateescape") if isinstance(line, str) else line) + b"\n"
        for line in lines
        if line is not None
    )
    return block_records(block, checker, fmt)


def block_records(block: bytes, checker: Auditor, fmt: str = "access-log") -> list[str]:
    """`line_records` of a batch of lines given joined, each ending in a line end."""
    fmt = format_of(fmt, lines=True)
    if fmt == "access-log":  # as ``urlsan audit`` reads a block of a log (`LogLines`)
        done = LogLines(checker)(Block(block, 0))
        return b"".join(done.pieces).decode("ascii").splitlines()
    return _records(io.BufferedReader(io.BytesIO(block)), fmt, "<lines>", checker)


def file_records(
    content: bytes | IO[bytes], checker: Auditor, fmt: str = "auto", name: str = "<file>"
) -> list[str]:
    """The audit-log lines of one recorded file, given as its bytes or an open binary file:
    a WARC file, a HAR file, an access log, ... (gzip or not), its format found from its first
    bytes as ``urlsan audit`` finds it unless ``fmt`` names it.  Raises `ValueError` for a file
    in no format ``urlsan audit`` reads, as ``urlsan audit`` refuses it."""
    raw = io.BytesIO(content) if isinstance(content, bytes) else content
    stream = sources.open_stream(raw)
    try:
        found = sources.detect(stream) if fmt == "auto" else fmt
        if found is None:
            raise ValueError(
                f"{name}: not a mitmproxy flow file, a HAR file, a WARC file, an access log or "
                "an index ``urlsan audit`` reads (say which with format=)"
            )
        return _records(stream, found, name, checker)
    finally:
        stream.close()


def fields_of(line: str) -> dict[str, Any]:
    """The record of an audit-log ``line`` as a frame's columns hold it: text that is UTF-8,
    so a byte that is not (the line's "\\udcXX" escape) reads "?", as it does in Spark's."""
    rec: dict[str, Any] = json.loads(line)
    return _utf8(rec) if "\\udc" in line else rec


def _utf8(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, list):
        return [_utf8(v) for v in value]
    if isinstance(value, dict):
        return {k: _utf8(v) for k, v in value.items()}
    return value


def exemplar() -> dict[str, Any]:
    """A record with every field the record builder (`urlsan.audit.record.build` and `facts`,
    capped by `serialize`'s `limit_text`) writes, each with a value of its type and in its
    order: what the frames' schemas are derived from.  Its values mean nothing."""
    long = "x" * (record.MAX_TEXT + 1)
    edits = [Edit("rule", "path", 0, 1, long, "y")] * (record.MAX_EDITS + 1)
    findings = [Finding("rule", "path", 0, long, 2, (0, 1))]
    facts = record.facts(
        before=long,
        after=long,
        action="audited",
        edits=edits,
        findings=findings,
        reason="reason",
        rejected_by="rule",
        backends=[Divergence("nginx", "/", "/", True)._asdict()],
    )
    built = record.build(
        ts="", client="", method="", scheme="", host="", http_version="", profile="",
        facts_=facts, status=200,
    )  # fmt: skip
    return record.limit_text(built)


FIELDS: tuple[str, ...] = tuple(exemplar())  # the record's fields, in the order it writes them
