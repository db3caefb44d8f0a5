"""The optional compiled twin of canonical.py (core/compiled.py); all else is in pyproject.toml.

Left out when there is no C compiler or ``URLSAN_NO_EXTENSIONS`` is set: the pure-Python driver
then does all the work.  ``optional=True`` covers a compiler that fails, for regular installs
(setuptools' strict editable mode cannot skip a failed extension, hence the check up front).
"""

import os
import shlex
import shutil
import sysconfig

from setuptools import Extension, setup


def have_compiler() -> bool:
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return shutil.which(shlex.split(cc)[0]) is not None


twin = Extension("urlsan.core._speedups", ["core/_speedups.c"], optional=True)
setup(ext_modules=[] if os.environ.get("URLSAN_NO_EXTENSIONS") or not have_compiler() else [twin])
