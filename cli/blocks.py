"""The units of batch work: a `Block` of input lines, and what processing it gives back (`Done`,
with an `Entry` per line under ``--dedupe``).  Plain values, which cross the border of a worker
process."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Protocol


@dataclass(frozen=True, slots=True)
class Block:
    """Whole input lines: ``data`` (each line ends with the separator), or the command-line
    arguments as ``texts``, or the lines of a file that start in a ``span`` of it (``fd,
    start, end``), which the worker reads itself; ``first`` is the number of the first line,
    0 when it is not known yet (the lines are numbered when the result comes back).
    ``pause``: the input had nothing more to give at once, so everything up to here is to be
    written out now."""

    data: bytes
    first: int
    pause: bool = False
    texts: tuple[str, ...] | None = None
    span: tuple[int, int, int] | None = None


class Entry(NamedTuple):
    """One line under ``--dedupe``: its canonical form's digest (None for a bad line), its
    output, what a duplicate report shows of it (its text, its JSON offender with
    ``--check --json``, the reason for a bad line), and whether canonicalization changed it."""

    number: int
    key: bytes | None
    out: bytes
    shown: str
    changed: bool


class Done(NamedTuple):
    """A processed block.  Without ``--dedupe``: the output cut before each bad line
    (``len(bad) + 1`` pieces), so that a report on stderr lands between the lines around it.
    With ``--dedupe``: ``entries``, one per line, and no pieces."""

    lines: int  # lines handled: all of the block's, or those before the bad one (--on-error fail)
    valid: int
    changed: int
    pieces: list[bytes]
    bad: list[tuple[int, str]]
    entries: list[Entry]


class Work(Protocol):
    """What turns a `Block` into its `Done`, here or in a ``--jobs`` worker: ``urlsan canon``'s
    `processor.Processor`, ``urlsan audit``'s `audit_lines.LogLines`."""

    @property
    def numbers_lines(self) -> bool:
        """Whether its output shows line numbers, which the lines of a file span read by a
        worker (`spans.file_spans`) do not know."""
        ...

    def __call__(self, block: Block) -> Done: ...
