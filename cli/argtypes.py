"""The types of the commands' numeric options (argparse ``type=``): a whole number within
bounds, or the usage error that says why not."""

from __future__ import annotations

import argparse
import os


def _number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def positive(text: str) -> int:
    """A count of 1 or more (``--max-length``, ``--top``)."""
    value = _number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value


def jobs(text: str) -> int:
    """``--jobs``: 0 is one per CPU."""
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 (one per CPU) or more: {value}")
    return value or os.cpu_count() or 1
