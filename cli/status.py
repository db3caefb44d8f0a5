"""Exit statuses and the usage error, shared by every `urlsan` command (docs/cli.md)."""

from __future__ import annotations

EXIT_OK = 0
EXIT_OFFENDERS = 1  # canon --check: some input is not canonical (or a duplicate, with --dedupe)
EXIT_USAGE = 2  # unknown option, profile or rule; an input or output that cannot be opened
EXIT_BAD_LINES = 3  # bad lines, reported on stderr; the run went on to the end
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # the reader of standard output went away (`| head`)


class UsageError(Exception):
    """A mistake on the command line found after parsing: exit status 2."""
