"""Instructions a Python command executes, counted by callgrind: what the machine's load does
not move, as it moves the clock.

The benches that count instructions (guard.py, dirty.py, proxy.py) run their measured process
twice, with one pass over its items and with two: the difference is one pass, with start-up,
imports and warm-up taken out.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys


def collected(argv: list[str]) -> int:
    """The instructions ``sys.executable`` run with ``argv`` executes under callgrind (hash
    randomization off, so that two runs hash alike).  Exits with callgrind's message when the
    run fails."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env.pop("PYTHONSTARTUP", None)
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable]
    done = subprocess.run([*command, *argv], env=env, capture_output=True, text=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        sys.exit(f"callgrind failed on {' '.join(argv[:3])} …:\n{done.stderr[-2000:]}")
    return int(found[1])


def per_item(argv: list[str], items: int) -> float:
    """Instructions per item of one pass: ``argv`` with a pass count after it runs that many
    passes over ``items`` items, after whatever start-up and warm-up it makes alike in both
    runs."""
    return (collected([*argv, "2"]) - collected([*argv, "1"])) / items
