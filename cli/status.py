"""Exit statuses and the errors that carry them, shared by every `urlsan` command (docs/cli.md)."""

from __future__ import annotations

EXIT_OK = 0
EXIT_OFFENDERS = 1  # canon --check: some input is not canonical (or a duplicate, with --dedupe)
EXIT_USAGE = 2  # unknown option, profile or rule; an input or output that cannot be opened
EXIT_BAD_LINES = 3  # bad lines, reported on stderr (--on-error fail: the run stopped at the first)
EXIT_WRITE_ERROR = 4  # the output could not be written (disk full, I/O error): output incomplete
EXIT_WORKER_DIED = 5  # canon --jobs: a worker process died (killed, out of memory): incomplete
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # the reader of standard output went away (`| head`)


class UsageError(Exception):
    """A mistake on the command line found after parsing: exit status 2."""


class OutputError(Exception):
    """The output could not be written after it was opened: exit status 4."""


class WorkerDied(Exception):
    """A ``--jobs`` worker process died (killed, out of memory): exit status 5, the output is
    incomplete."""
