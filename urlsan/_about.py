"""What this install of urlsan is: ``urlsan --version``, and the one warning a user without the
compiled twin (urlsan.core._speedups) gets from ``urlsan canon``, ``urlsan proxy`` and the addon.

Without the twin the pure-Python driver does all the work, about 16x slower on URLs that need
rewriting (README, Speed): a pip that found no wheel for the platform and no C compiler installs
urlsan that way without a word, so urlsan says it once per process.  Nothing is said when the
user asked for it with ``URLSAN_NO_EXTENSIONS``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

NO_TWIN_FIX = (
    "install a wheel (pip install --force-reinstall --only-binary urlsan urlsan), "
    "or install a C compiler and reinstall (pip install --force-reinstall --no-binary urlsan "
    "urlsan; from a checkout: pip install -e .)"
)
_warned = False


def _distribution_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    from . import __version__

    try:
        return version("urlsan")
    except PackageNotFoundError:  # run from a tree that was never installed
        return __version__


def twin_loaded() -> bool:
    """Whether canonicalize runs the compiled twin first: `urlsan.core.twin_loaded`'s to say."""
    from . import core  # here, not at the top: importing _about loads no canonicalizer

    return core.twin_loaded()


def engine() -> str:
    """The canonicalizer this process runs, in words: `urlsan.core.engine`'s to say."""
    from . import core

    return core.engine()


def _mitmproxy_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mitmproxy")
    except PackageNotFoundError:
        return f"not installed ({sys.executable} -m pip install 'mitmproxy>=11.0.2,<13')"


def version_report() -> str:
    """``urlsan --version``: one ``name: value`` line each, the first as tools print it."""
    import platform  # here only: a tenth of the other commands' start-up

    py = f"{platform.python_implementation()} {platform.python_version()} ({sys.executable})"
    return "\n".join(
        [
            f"urlsan {_distribution_version()}",
            f"python: {py}",
            f"mitmproxy: {_mitmproxy_version()}",
            f"canonicalizer: {engine()}",
        ]
    )


def no_twin_warning() -> str | None:
    """The warning for a process without the twin, or None when there is nothing to say."""
    if twin_loaded() or os.environ.get("URLSAN_NO_EXTENSIONS"):
        return None
    return (
        "urlsan: the compiled canonicalizer (urlsan.core._speedups) is not installed, so the "
        "pure-Python one runs, about 16x slower on URLs that need rewriting. To fix it: "
        + NO_TWIN_FIX
    )


def warn_if_no_twin(emit: Callable[[str], object] | None = None) -> None:
    """Say `no_twin_warning` once per process: to ``emit`` (e.g. ``logging.warning``), or to
    standard error."""
    global _warned
    message = no_twin_warning()
    if _warned or message is None:
        return
    _warned = True
    if emit is None:
        print(message, file=sys.stderr)
    else:
        emit(message)
