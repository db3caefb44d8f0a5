"""The flags of ``urlsan audit`` and ``urlsan canon``, derived from the option table
(`urlsan.addon.options`): the proxy's ``urlsan_drop_params`` is ``--drop-params`` here, with the
same default and help.  The two flags only these batch commands have (``--jobs``,
``--no-progress``) are declared here once too (`add_batch_flags`)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from ..addon.options import (
    CHOICE,
    COUNT,
    NAMES,
    SPECS,
    Option,
    flag_argument,
    option_names,
    shown_default,
    taken_by,
)
from ..core.options import OptionNames
from .argtypes import jobs


def count(text: str) -> int:
    """A number of bytes, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more: {value}")
    return value


class _Names(argparse.Action):
    """A repeatable flag of comma-separated names: every use adds its names."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        names = tuple(n.strip() for n in str(values).split(",") if n.strip())
        setattr(namespace, self.dest, (*(getattr(namespace, self.dest) or ()), *names))


class _Specs(argparse.Action):
    """A repeatable flag of parameter specs, each kept whole (its commas are its own)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, (*(getattr(namespace, self.dest) or ()), str(values)))


def _help(option: Option, front: str) -> str:
    text = option.help_for(front).rstrip(".")
    extra = [f"default: {shown_default(option.default_for(front))}"]
    if option.kind == CHOICE and option.metavar:
        extra.insert(0, "one of " + ", ".join(option.choices))
    if option.kind == SPECS:
        extra.append("repeatable")
    elif option.kind == NAMES:
        extra.append("comma-separated, repeatable")
        if option.choices:
            extra.insert(0, "of " + ", ".join(option.choices))
    extra.append(f"the proxy's {option.option}")
    # argparse formats help with %: a literal % (as in "%-decoding") is written %%.
    return f"{text} ({'; '.join(extra)})".replace("%", "%%")


def add_flags(parser: argparse.ArgumentParser, front: str) -> None:
    """Add the flags of the options ``front`` takes (`urlsan.addon.options.taken_by`)."""
    for option in taken_by(front):
        kwargs: dict[str, Any] = {"help": _help(option, front), "dest": option.name}
        if option.kind in (SPECS, NAMES):
            kwargs["action"] = _Specs if option.kind == SPECS else _Names
            kwargs["default"] = None  # None: not given, the table's default (`values`)
        else:
            kwargs["default"] = option.default_for(front)
        if option.kind == CHOICE and not option.metavar:
            kwargs["choices"] = option.choices
        else:  # a choice with a metavar is checked where its value is read (--profile: Policy)
            kwargs["metavar"] = flag_argument(option)
        if option.kind == COUNT:
            kwargs["type"] = count
        parser.add_argument(option.flag, **kwargs)


def add_batch_flags(parser: argparse.ArgumentParser, *, inputs: str = "", order: str = "") -> None:
    """``-j/--jobs`` and ``--no-progress``, as `urlsan.cli.batch` runs them for either command:
    ``inputs`` names the inputs workers take (all when empty), ``order`` what they keep."""
    parser.add_argument(
        "-j",
        "--jobs",
        type=jobs,
        default=1,
        metavar="N",
        help=f"worker processes{inputs} (0: one per CPU; default: 1), started only when the "
        f"input turns out long enough to pay for them; {order}a dead worker ends the run "
        "(status 5)",
    )
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (shown on a terminal for inputs taking over 1 s)",
    )


def values(args: argparse.Namespace, front: str) -> dict[str, Any]:
    """Each option ``front`` takes by its name, as given or the table's default."""
    out = {}
    for option in taken_by(front):
        value = getattr(args, option.name)
        out[option.name] = option.default_for(front) if value is None else value
    return out


FLAGS: OptionNames = option_names("audit")  # the flags that name a policy, in its messages
