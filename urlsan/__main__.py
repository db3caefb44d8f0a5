"""``python -m urlsan``: the `urlsan` command."""

import sys

from urlsan.cli import main

sys.exit(main())
