"""``python -m urlsan.cli``: the `urlsan` command."""

import sys

from .main import main

sys.exit(main())
