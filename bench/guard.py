"""Instructions per URL, counted by callgrind, against the baseline kept beside this script.

    .venv/bin/python bench/guard.py                 # measure, compare, exit 1 on a regression
    .venv/bin/python bench/guard.py --update --reason "why the figures moved"

Time is noise on a shared machine; instructions are not.  Each measure runs its work in a
process of its own under ``valgrind --tool=callgrind`` twice, once with one pass over its items
and once with two, and divides the difference by the number of items: start-up, imports and a
policy's first-call work cancel out, and what is left is the warm cost of one item
(deterministic with PYTHONHASHSEED=0, within about 0.5% of code layout).

The measures cover what users run: `canonicalize` on clean real URLs, on dirty spellings of
them and on the attack corpus (every finding family), hostile targets of 1 to 64 KB, the
crawler profile, both SURT profiles, ``urlsan canon`` and ``urlsan audit`` per input line, and
the proxy addon's hook per request.  Beside each figure it prints the share of the items the
compiled twin hands back to the Python driver.

A measure more than ``--tolerance`` (10%) above its baseline fails the run (exit 1): a change
that costs more must say so by updating ``bench/guard.json`` (``--update --reason``) in the same
commit.  The baseline is kept per Python minor version; one this interpreter has none for is
measured and printed, not compared.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BASELINE = HERE / "guard.json"
sys.path.insert(0, str(HERE))

ITEMS = 1500  # real URLs per corpus (--items): a stable mean, a few minutes of callgrind in all


# --- the corpora: fixed, seeded, made from the real URLs the other benches read -------------


def _real(corpus_dir: Path) -> list[str]:
    from corpus import load  # bench/corpus.py

    urls = load(corpus_dir)
    return random.Random(7).sample(urls, int(os.environ.get("URLSAN_GUARD_ITEMS", ITEMS)))


def _dirty(corpus_dir: Path) -> list[str]:
    from core import dirty  # bench/core.py

    rng = random.Random(1)
    return [dirty(u, rng) for u in _real(corpus_dir)]


def _evasions(_: Path) -> list[str]:
    entries = json.loads((ROOT / "tests" / "core" / "evasions.json").read_text())
    return [e["target"] for e in entries]


def _hostile(_: Path) -> list[str]:
    """Targets of 1 to 64 KB in the shapes that cost a canonicalizer most: stray and escaped
    percents, controls, dot segments, non-ASCII, runs of slashes."""
    shapes = ("%", "\x01%", "%00", "../", "é", "%41", "%2e/", "a/", "//", "\\")
    return [
        "/" + shape * (size // len(shape)) for shape in shapes for size in (1_000, 16_000, 64_000)
    ]


def _access_log(corpus_dir: Path) -> list[str]:
    """The dirty URLs as origin-form targets in combined-format access log lines (those a
    server could log: no white space, no quote)."""
    from core import request_target  # bench/core.py

    rng = random.Random(3)
    lines = []
    for url in _dirty(corpus_dir):
        target = request_target(url, rng)
        if re.search(r'[\s"]', target) or target == "*" or not target.startswith("/"):
            continue
        request = f"GET {target} HTTP/1.1"
        lines.append(f'127.0.0.1 - - [28/Nov/2026:10:00:00 +0000] "{request}" 200 512 "-" "curl/8"')
    return lines


# --- what each measure does with its items, in the measured process --------------------------


def _canonicalize(policy: str | None) -> Callable[[list[str]], Callable[[int], None]]:
    def prepare(items: list[str]) -> Callable[[int], None]:
        from urlsan.core import Policy, canonicalize

        chosen = Policy() if policy is None else Policy.profile(policy)

        def one_pass(_: int) -> None:
            for u in items:
                canonicalize(u, chosen)

        return one_pass

    return prepare


def _surt(profile: str) -> Callable[[list[str]], Callable[[int], None]]:
    def prepare(items: list[str]) -> Callable[[int], None]:
        from urlsan.core.surt import surt

        def one_pass(_: int) -> None:
            for u in items:
                surt(u, profile=profile)

        return one_pass

    return prepare


def _command(command: str) -> Callable[[list[str]], Callable[[int], None]]:
    """``urlsan canon`` or ``urlsan audit`` in this process, on the items as an input file."""

    def prepare(items: list[str]) -> Callable[[int], None]:
        import contextlib
        import io

        from urlsan.cli.main import main

        folder = Path(tempfile.mkdtemp(prefix="urlsan-guard-"))
        source = folder / ("in.txt" if command == "canon" else "access.log")
        source.write_text("\n".join(items) + "\n", encoding="utf-8", errors="surrogateescape")
        out = folder / "out"
        argv = {
            "canon": ["canon", "-i", str(source), "-o", str(out), "--jobs", "1"],
            "audit": ["audit", "--format", "access-log", "-o", str(out), str(source)],
        }[command]

        def one_pass(_: int) -> None:
            with contextlib.redirect_stderr(io.StringIO()):
                main(argv)

        return one_pass

    return prepare


def _hook(items: list[str]) -> Callable[[int], None]:
    """The proxy addon's hooks for each request, log on, as mitmproxy calls them (taddons):
    its request headers, then the response's (an upstream's 200, unless urlsan answered),
    where the audit record is written."""
    from mitmproxy.test import taddons, tflow, tutils

    from urlsan.addon.sanitizer import UrlSanitizer

    log = Path(tempfile.mkdtemp(prefix="urlsan-guard-")) / "audit.jsonl"
    addon = UrlSanitizer()
    context = taddons.context(addon)
    context.__enter__()
    context.configure(addon, urlsan_log=str(log))
    targets = [t for t in items if t.startswith("/") and not re.search(r"\s", t)]
    # Both passes' flows are made before either runs, so that making them cancels out.
    flows = [
        [tflow.tflow(req=tutils.treq(path=t.encode("utf-8", "surrogateescape"))) for t in targets]
        for _ in range(2)
    ]

    answer = tutils.tresp()

    def one_pass(n: int) -> None:
        for flow in flows[n]:
            addon.requestheaders(flow)
            if flow.response is None:
                flow.response = answer
            addon.responseheaders(flow)

    return one_pass


def _targets(corpus_dir: Path) -> list[str]:
    from core import request_target  # bench/core.py

    rng = random.Random(5)
    return [request_target(u, rng) for u in _dirty(corpus_dir)]


# name: (what it measures, its items, what one pass does); items are measured per item.
MEASURES: dict[str, tuple[str, Callable[[Path], list[str]], Callable[..., Any]]] = {
    "clean": ("canonicalize, real URLs", _real, _canonicalize(None)),
    "dirty": ("canonicalize, dirty spellings of them", _dirty, _canonicalize(None)),
    "evasions": ("canonicalize, the attack corpus", _evasions, _canonicalize(None)),
    "hostile": ("canonicalize, hostile 1-64 KB (per target)", _hostile, _canonicalize(None)),
    "crawler": ("canonicalize, crawler profile, dirty", _dirty, _canonicalize("crawler")),
    "surt-ia": ("surt(), ia profile, real URLs", _real, _surt("ia")),
    "surt-urlsan": ("surt(), urlsan profile, dirty", _dirty, _surt("urlsan")),
    "canon": ("urlsan canon, per line, dirty", _dirty, _command("canon")),
    "audit": ("urlsan audit, per access log line", _access_log, _command("audit")),
    "hook": ("the addon's hooks, per dirty request", _targets, _hook),
}
# The measures whose items go through canonicalize under a policy: their share leaving the
# compiled path is printed beside them.
POLICY_OF = {"clean": None, "dirty": None, "evasions": None, "hostile": None}
POLICY_OF |= {"crawler": "crawler", "canon": None, "hook": None}


# --- the measured process --------------------------------------------------------------------


def worker(name: str, items_file: Path, passes: int) -> None:
    items = json.loads(items_file.read_text(encoding="utf-8", errors="surrogateescape"))
    one_pass = MEASURES[name][2](items)
    for n in range(passes):
        one_pass(n)


def declined_share(name: str, items: list[str]) -> str:
    """The share of the items the compiled twin leaves to the Python driver."""
    if name not in POLICY_OF:
        return ""
    from urlsan.core import Policy, compiled
    from urlsan.core.canonical import twin_flags

    if compiled.twin is None:
        return "no twin"
    policy = POLICY_OF[name]
    flags = twin_flags(Policy() if policy is None else Policy.profile(policy))
    if flags < 0:
        return "100% (policy)"
    left = sum(compiled.twin(u, flags, "auto") is None for u in items)
    return f"{100 * left / max(len(items), 1):.2f}%"


def measure(names: list[str], corpus_dir: Path) -> Iterator[tuple[str, int, float, str]]:
    import callgrind  # bench/callgrind.py: a run of two passes less a run of one

    with tempfile.TemporaryDirectory(prefix="urlsan-guard-") as tmp:
        for name in names:
            items = MEASURES[name][1](corpus_dir)
            items_file = Path(tmp) / f"{name}.json"
            items_file.write_text(json.dumps(items), encoding="utf-8", errors="surrogateescape")
            script = [str(Path(__file__).resolve()), "--worker", name, str(items_file)]
            per_item = callgrind.per_item(script, len(items))
            yield name, len(items), per_item, declined_share(name, items)


def version_key() -> str:
    return f"{platform.python_implementation()} {sys.version_info[0]}.{sys.version_info[1]}"


def compare(
    results: list[tuple[str, int, float, str]], baseline: dict[str, float], tolerance: float
) -> list[str]:
    """Print the table; return the measures that grew past the tolerance."""
    print(f"\ninstructions per item (callgrind), {version_key()}, tolerance {tolerance:.0%}")
    print(f"{'measure':<14}{'what':<46}{'items':>7}{'now':>12}{'baseline':>12}{'ratio':>8}  left")
    grown = []
    for name, n, now, left in results:
        base = baseline.get(name)
        ratio = f"{now / base:.3f}" if base else "-"
        base_text = f"{base:,.0f}" if base else "-"
        what = MEASURES[name][0]
        print(f"{name:<14}{what:<46}{n:>7}{now:>12,.0f}{base_text:>12}{ratio:>8}  {left}")
        if base and now > base * (1 + tolerance):
            grown.append(name)
    return grown


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--only", nargs="*", choices=sorted(MEASURES), help="these measures")
    parser.add_argument("--items", type=int, default=ITEMS, help="real URLs per corpus")
    parser.add_argument("--tolerance", type=float, default=0.10)
    parser.add_argument("--baseline", type=Path, default=BASELINE)
    parser.add_argument("--update", action="store_true", help="write the figures as baseline")
    parser.add_argument("--reason", help="why the baseline moves (required with --update)")
    args = parser.parse_args()
    if args.update and not args.reason:
        parser.error("--update needs --reason: the baseline says why it moved")
    if shutil.which("valgrind") is None:
        sys.exit("guard: valgrind is not installed (Debian: apt-get install valgrind)")
    names = args.only or list(MEASURES)
    os.environ["URLSAN_GUARD_ITEMS"] = str(args.items)  # for the corpora, here and in workers
    stored = json.loads(args.baseline.read_text()) if args.baseline.exists() else {}
    entry = stored.get(version_key(), {})
    results = list(measure(names, args.corpus_dir))
    grown = compare(results, entry.get("figures", {}), args.tolerance)
    if args.update:
        figures = {**entry.get("figures", {}), **{n: round(v, 1) for n, _, v, _ in results}}
        stored[version_key()] = {"figures": figures, "reason": args.reason}
        args.baseline.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
        print(f"\nbaseline for {version_key()} written to {args.baseline}")
        return 0
    if grown:
        print(f"\nguard: {', '.join(grown)} grew more than {args.tolerance:.0%} over the baseline")
        print("guard: make it cheaper, or update the baseline with --update --reason '...'")
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        worker(sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(main())
