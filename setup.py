"""The optional compiled twin of core/driver.py (core/compiled.py), the Arrow column loop
(core/_columns.c) and the audit log scanner (audit/_bulk.c), and README.md as the package index
shows it; all else is in pyproject.toml.

The twin is left out when there is no C compiler or ``URLSAN_NO_EXTENSIONS`` is set: the
pure-Python driver then does all the work (and ``urlsan --version`` says so).  ``optional=True``
covers a compiler that fails, for regular installs (setuptools' strict editable mode cannot skip
a failed extension, hence the check up front).

The twin is built against the full C API, one wheel per CPython version, not the limited API
(abi3): measured on the same 59k URLs, an abi3 build was 4-7% slower on clean and 4-9% slower on
dirty URLs (it must copy each target to UCS-4 instead of reading the str's own buffer).
"""

import os
import re
import shlex
import shutil
import sysconfig
from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).resolve().parent


def have_compiler() -> bool:
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return shutil.which(shlex.split(cc)[0]) is not None


def index_readme() -> str:
    """README.md with its links into the repository made plain text: a package index page has
    no docs/ beside it, and it drops the anchors of headings.  The files are in the sdist."""
    text = (HERE / "README.md").read_text(encoding="utf-8")
    text = re.sub(r"\[([^\[\]\n]+)\]\(#[^)]*\)", r"\1", text)  # [section](#anchor) -> section
    # [docs/x.md](docs/x.md) -> `docs/x.md`; [text](docs/x.md) -> text (`docs/x.md`)
    return re.sub(
        r"\[([^\[\]\n]+)\]\((?!https?:|mailto:)([^)#\s]+)[^)]*\)",
        lambda m: f"`{m[2]}`" if m[1].strip("`") == m[2] else f"{m[1]} (`{m[2]}`)",
        text,
    )


# Release builds (make dist, cibuildwheel) set URLSAN_REQUIRE_EXTENSIONS: a wheel without the
# twin must be an error there, not a silently slower wheel.
required = bool(os.environ.get("URLSAN_REQUIRE_EXTENSIONS"))
# core/_twin.h: the twin's way in for the column loop (a capsule of the first, read by the second).
# core/_entry.h: what both modules' compiled functions are besides their call.
headers = ["core/_entry.h", "core/_twin.h"]
twin = Extension(
    "urlsan.core._speedups", ["core/_speedups.c"], depends=headers, optional=not required
)
# The data-frame integrations' loop over Arrow string buffers (urlsan/_columns.py), optional
# like the twin: without it they build Python lists.
arrow_loop = Extension(
    "urlsan.core._columns", ["core/_columns.c"], depends=headers, optional=not required
)
# The plain records of an audit log matched and counted in C (audit/bulk.py), optional like
# the twin: without it, `urlsan report` matches them with a regular expression.
report_scanner = Extension("urlsan.audit._bulk", ["audit/_bulk.c"], optional=not required)
skip = not required and (os.environ.get("URLSAN_NO_EXTENSIONS") or not have_compiler())
setup(
    ext_modules=[] if skip else [twin, arrow_loop, report_scanner],
    long_description=index_readme(),
    long_description_content_type="text/markdown",
)
