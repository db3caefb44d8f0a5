"""What urlsan's findings catch, what they flag on real URLs, and what they cost.

    .venv/bin/python bench/findings.py [--corpus-dir ../shared/data] [--rounds 5]
                                       [--baseline PYTHON] [--only evasions|real|cost ...]

Three tables:

- evasions: per evasion family of the project's own attack corpus (tests/core/evasions.json),
  how many targets the finding that names the family reports, how many reach the finding
  severity the corpus expects, and how many have a target severity (urlsan.core.severity) of
  medium or above, of those tried.  Goal: every evasion family (the corpus expects medium or
  above of it) at medium or above in every target.
- real: per finding kind, the share of the real URLs (ada-kasztp.txt and ada-userbait.txt from
  ada-url/url-various-datasets, ~59k URLs, read from ../shared/data) it fires on, and the share
  whose target severity is medium or above.  Goal: under 0.05% at medium or above.
- cost: `canonicalize` on those real URLs ("clean", and "dirty": made non-canonical by
  bench/core.py's generator), microseconds per URL, best of the rounds, and the share the
  compiled twin hands to the Python reference.  With ``--baseline PYTHON``
  (an interpreter with another urlsan installed, for instance the release before), the same
  timing there, in its own process, and the ratio.  Goal: findings cost at most 5%.  Then
  what the target's severity (urlsan.core.severity) adds where it is computed (an audit
  record, Scrapy's middleware; never `canonicalize`): only URLs with findings pay for it.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import random
import subprocess
import time
from pathlib import Path

from corpus import load  # bench/corpus.py: this folder is on sys.path when run

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "tests" / "core" / "evasions.json"


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def fmt(row: tuple[str, ...]) -> str:
        cells = [
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    return "\n".join([fmt(header), fmt(tuple("-" * w for w in widths)), *map(fmt, rows)])


def _checked(target: str) -> tuple[list[str], int, str]:
    """The finding kinds of ``target`` (origin-form when it starts with "/", as a proxy reads
    it), the highest of their severities' ranks, and the target's severity."""
    from urlsan.core import canonicalize
    from urlsan.core.severity import assess
    from urlsan.core.taxonomy import rank

    result = canonicalize(target, form="origin" if target.startswith("/") else "auto")
    found = assess(result.input, result.findings)
    top = max((rank(f.severity) for f in result.findings), default=-1)
    return [f.rule for f in result.findings], top, found.level if found else ""


def evasions() -> str:
    from urlsan.core.taxonomy import rank

    cases = json.loads(CORPUS.read_text(encoding="utf-8"))
    tried: collections.Counter[str] = collections.Counter()
    named: collections.Counter[str] = collections.Counter()
    severe: collections.Counter[str] = collections.Counter()
    medium: collections.Counter[str] = collections.Counter()
    evasion: set[str] = set()  # families the corpus expects at medium or above
    for case in cases:
        family = case["family"]
        rules, top, target = _checked(case["target"])
        tried[family] += 1
        named[family] += case["finding"] in rules
        severe[family] += top >= rank(case["severity"])
        medium[family] += rank(target) >= rank("medium")
        if rank(case["target_severity"]) >= rank("medium"):
            evasion.add(family)
    rows = [
        (
            f,
            str(named[f]),
            str(severe[f]),
            str(medium[f]),
            str(tried[f]),
            "yes" if f in evasion else "no",
        )
        for f in sorted(tried)
    ]
    total = ("all", *(str(sum(c.values())) for c in (named, severe, medium, tried)), "")
    families = sum(named[f] == tried[f] for f in tried)
    reached = sum(medium[f] == tried[f] for f in evasion)
    return (
        "Evasion families (tests/core/evasions.json): detected by the finding that names the "
        "family / at the finding's severity / target severity medium or above / tried\n"
        + table(
            ("family", "detected", "at severity", "medium+", "tried", "evasion"), [*rows, total]
        )
        + f"\n{families} of {len(tried)} families detected in every target; {reached} of "
        f"{len(evasion)} evasion families at medium or above in every target (goal: all)"
    )


def real(urls: list[str]) -> str:
    from urlsan.core.taxonomy import rank, severity

    kinds: collections.Counter[str] = collections.Counter()
    medium: collections.Counter[str] = collections.Counter()
    levels: collections.Counter[str] = collections.Counter()
    flagged = any_finding = 0
    for url in urls:
        rules, top, target = _checked(url)
        if not rules:
            continue
        any_finding += 1
        levels[target] += 1
        for rule in rules:
            kinds[rule] += 1
            medium[rule] += rank(target) >= rank("medium")
        flagged += top >= rank("medium")
    n = len(urls)

    def pct(k: int) -> str:
        return f"{100 * k / n:.3f}%"

    rows = [
        (kind, str(count), pct(count), severity(kind), pct(medium[kind]))
        for kind, count in kinds.most_common()
    ]
    above = sum(levels[s] for s in ("medium", "high", "critical"))
    by_level = ", ".join(
        f"{s} {levels[s]:,}" for s in ("info", "low", "medium", "high", "critical")
    )
    return (
        f"Real URLs ({n:,}): the share each finding kind fires on, and the share of URLs it is "
        "on whose target severity is medium or above\n"
        + table(("finding", "URLs", "share", "kind's severity", "target medium+"), rows)
        + f"\nany finding: {any_finding:,} ({pct(any_finding)}); a finding of medium or above: "
        f"{flagged:,} ({pct(flagged)})\ntarget severity: {by_level}; medium or above: "
        f"{above:,} ({pct(above)}), goal under 0.05%"
    )


def cost_seconds(urls: list[str], rounds: int) -> float:
    """Best of ``rounds`` of canonicalize over ``urls``, in seconds per URL."""
    from urlsan.core import canonicalize

    best = float("inf")
    for _ in range(rounds):
        gc.collect()
        t = time.perf_counter()
        for url in urls:
            canonicalize(url)
        best = min(best, time.perf_counter() - t)
    return best / len(urls)


def declines(urls: list[str]) -> collections.Counter[str]:
    from urlsan.core import compiled
    from urlsan.core.canonical import twin_flags
    from urlsan.core.policy import DEFAULT_POLICY

    reasons: collections.Counter[str] = collections.Counter()
    if compiled.twin is None:
        return reasons
    flags = twin_flags(DEFAULT_POLICY)
    for url in urls:
        if compiled.twin(url, flags, "auto") is None:
            reasons[compiled.declined() or "?"] += 1
    return reasons


def corpora(urls: list[str]) -> dict[str, list[str]]:
    """The real URLs as they are ("clean"), and made non-canonical by bench/core.py's seeded
    generator ("dirty")."""
    from core import dirty  # bench/core.py, beside this file

    rng = random.Random(0)
    return {"clean": urls, "dirty": [dirty(u, rng) for u in urls]}


def severity_seconds(urls: list[str], rounds: int) -> tuple[float, int]:
    """Best of ``rounds`` of `urlsan.core.severity.assess` over the Results of ``urls`` that
    carry findings (the others cost nothing: no finding, no severity), in seconds per URL of
    ``urls``; and how many carry findings."""
    from urlsan.core import canonicalize
    from urlsan.core.severity import assess

    found = [(r.input, r.findings) for r in map(canonicalize, urls) if r.findings]
    best = float("inf")
    for _ in range(rounds):
        gc.collect()
        t = time.perf_counter()
        for target, findings in found:
            assess(target, findings)
        best = min(best, time.perf_counter() - t)
    return best / len(urls), len(found)


def timings(urls: list[str], rounds: int) -> dict[str, float]:
    return {name: cost_seconds(corpus, rounds) for name, corpus in corpora(urls).items()}


def cost(urls: list[str], rounds: int, baseline: str | None, corpus_dir: Path) -> str:
    from urlsan.core.canonical import engine

    here = timings(urls, rounds)
    there: dict[str, float] = {}
    if baseline:
        command = [baseline, __file__, "--timing", "--rounds", str(rounds)]
        out = subprocess.run(
            [*command, "--corpus-dir", str(corpus_dir.resolve())],
            capture_output=True,
            text=True,
            check=True,
            cwd="/",  # not this tree: the baseline's own urlsan
        ).stdout
        there = json.loads(out.strip().splitlines()[-1])
    rows = []
    for name, seconds in here.items():
        base = there.get(name)
        rows.append(
            (
                name,
                f"{seconds * 1e6:.3f}",
                f"{base * 1e6:.3f}" if base else "-",
                f"{seconds / base:.3f}" if base else "-",
            )
        )
    lines = []
    rows_severity = []
    for name, corpus in corpora(urls).items():
        seconds, with_findings = severity_seconds(corpus, rounds)
        rows_severity.append(
            (
                name,
                f"{with_findings:,}",
                f"{seconds * 1e6:.3f}",
                f"{seconds * len(corpus) / max(with_findings, 1) * 1e6:.2f}",
                f"{seconds / here[name]:.3f}",
            )
        )
        reasons = declines(corpus)
        lines += [
            f"  {name}: {n:,} ({100 * n / len(corpus):.2f}%)  {why}"
            for why, n in reasons.most_common(6)
        ]
    return (
        f"Cost ({len(urls):,} URLs; {engine()}): canonicalize, microseconds per URL, best of "
        f"{rounds}; goal on clean: this tree / baseline at most 1.05\n"
        + table(("corpus", "this tree", "baseline", "ratio"), rows)
        + "\nhanded by the twin to the Python reference, by reason:\n"
        + ("\n".join(lines) or "  none")
        + "\n\nThe target's severity (urlsan.core.severity.assess on the Results with findings), "
        f"best of {rounds}: microseconds per URL of the corpus, per URL with findings, and "
        "its share of canonicalize's time\n"
        + table(
            ("corpus", "with findings", "per URL", "per URL with findings", "of canonicalize"),
            rows_severity,
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus-dir", type=Path, default=HERE.parent.parent / "shared" / "data")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline", metavar="PYTHON", help="an interpreter with another urlsan")
    parser.add_argument("--only", nargs="+", choices=("evasions", "real", "cost"))
    parser.add_argument("--timing", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.timing:  # the baseline's side of --baseline: one number
        print(json.dumps(timings(load(args.corpus_dir), args.rounds)))
        return
    only = set(args.only or ("evasions", "real", "cost"))
    if "evasions" in only:
        print(evasions(), end="\n\n")
    if only & {"real", "cost"}:
        urls = load(args.corpus_dir)
        if "real" in only:
            print(real(urls), end="\n\n")
        if "cost" in only:
            print(cost(urls, args.rounds, args.baseline, args.corpus_dir))


if __name__ == "__main__":
    main()
