"""How much of a dirty corpus leaves the compiled path, and what that costs against url-py.

    .venv/bin/python bench/dirty.py [--rounds 5] [--seed 1] [--corpus-dir ../shared/data]
                                    [--count 3000]

The corpus is made of *equivalent dirty spellings of real URLs*: every URL of the ada corpora
(bench/corpus.py, ~59k URLs from real pages) spelled again by a seeded generator that knows
nothing of urlsan's code: a character escaped here and there (``%7E``, ``%41``, ``%2E`` inside
a name), hex in either case, encoded and double-encoded dot segments, backslashes, raw spaces,
overlong UTF-8, IP literals (IPv4, IPv6 with and without a zone) and, now and then, the example of
one finding kind spliced into the path or query.  Three tables:

1. the share of the corpus that leaves the compiled twin (core/_speedups.c) for the Python
   driver, under the default and the crawler profiles, with the top reasons
   (`_speedups.declined()`); URLs whose host is an IDN are counted apart, with their own share
   (UTS #46 is the idna package's);
2. canonicalize's throughput against url-py (the Rust url crate) on the same corpus, and on a
   light spelling of the same URLs (`lightly`: only a character escaped here and there, the
   dirt most real traffic carries), the rounds interleaved so that drift of the machine hits
   both alike; the best round counts;
3. where the dirty set's time goes: its URLs in three classes (left as they were, rewritten,
   with a finding), each timed alone for both, with its share of the URLs and of urlsan's
   time.  url-py only parses and writes a URL; urlsan also records each rewrite and looks for
   what a server behind would make of the target (the findings), which a URL with a finding
   pays for.

With ``--count N`` (valgrind installed), also instructions per URL under callgrind, for both,
on N URLs of each set and as they are (clean): a process that runs every URL twice less one
that runs it once, so that start-up cancels out.  A count is not moved by other load on the
machine.

Goals: at most 0.5% leaves the compiled path under the default profile, IDN hosts apart; at
least 2.4x url-py on the light set, the dirt the goal was set on; on the dirty set, where one
URL in five carries a finding, no less than before the findings were the compiled path's
(2.0-2.1x, measured with this script on commit 2b5961e: CHANGELOG.md).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import callgrind  # bench/callgrind.py: this folder is on sys.path when run
from corpus import CORPORA, load  # bench/corpus.py

from core import run  # bench/core.py: one pass, timed, exceptions counted as done work
from urlsan.core import Policy, canonicalize, compiled
from urlsan.core.canonical import twin_flags
from urlsan.core.driver import query_rules_after

HERE = Path(__file__).resolve().parent

# One example of every finding kind's shape, as an attacker or a sloppy client writes it
# (docs/security.md lists the kinds); spliced into a path ("/") or a query ("?").
FINDING_PIECES = (
    ("/", "a/./b/../"),  # dot-segment
    ("/", "%2e%2E/"),  # encoded-dot-segment
    ("/", "../../"),  # dot-segment-above-root (at the path's start)
    ("/", "..;/"),  # path-parameter-dotdot
    ("/", "a%2fb/"),  # escaped-slash
    ("/", "a\\b/"),  # backslash
    ("/", "%252e%252e/"),  # double-encoding, decoded-dot-segment-above-root
    ("/", "%u002e%u002e/"),  # percent-u
    ("/", "%c0%ae%c0%ae/"),  # overlong-utf8
    ("/", "x%00.jpg/"),  # nul-escape
    ("/", "x%0d%0aSet-Cookie:/"),  # crlf-escape
    ("/", "100%/"),  # stray-percent
    ("/", "a b/"),  # raw-space
    ("/", "a\x01/"),  # control-char
    ("/", "a%E2%80%AEb/"),  # format-char
    ("/", "a%ff/"),  # invalid-utf8
    ("/", "index%2Ehtml/"),  # escaped-dot
    ("?", "q=%2541&"),  # double-encoding in a query
    ("?", "q=%00&"),  # nul-escape in a query
)


def spell(url: str, rng: random.Random) -> str:
    """``url`` spelled dirty, each rewrite drawn on its own (a URL may carry several)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, tail = rest.partition("/")
    path, query_mark, query = tail.partition("?")
    host = _host(authority, rng)
    path = _path(path, rng)
    if query_mark:
        query = _escape_some(query, rng, 0.03)
    if rng.random() < 0.1:  # a finding kind's example
        where, piece = rng.choice(FINDING_PIECES)
        if where == "/":
            path = piece + path
        else:
            query_mark, query = "?", piece + query
    if rng.random() < 0.3:
        scheme = _case(scheme, rng)
    return f"{scheme}://{host}/{path}{query_mark}{query}" if slash or path else f"{scheme}://{host}"


def lightly(url: str, rng: random.Random) -> str:
    """``url`` with only a character escaped here and there (``%7E``, ``%41``, ``%2E`` inside a
    name, hex in either case), in its path and query: the dirt most real traffic carries."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, tail = rest.partition("/")
    path, query_mark, query = tail.partition("?")
    query = _escape_some(query, rng, 0.03) if query_mark else query
    return f"{scheme}://{authority}{slash}{_escape_some(path, rng, 0.04)}{query_mark}{query}"


def _case(text: str, rng: random.Random) -> str:
    return "".join(c.upper() if rng.random() < 0.5 else c for c in text)


def _hex(byte: int, rng: random.Random) -> str:
    return f"%{byte:02X}" if rng.random() < 0.5 else f"%{byte:02x}"


def _host(authority: str, rng: random.Random) -> str:
    if "xn--" in authority.lower() and rng.random() < 0.5:
        return _unicode_host(authority)  # an IDN in Unicode: the same host (RFC 5890)
    r = rng.random()
    if r < 0.03:
        return ".".join(str(rng.randrange(1, 224)) for _ in range(4))
    if r < 0.05:
        return f"[2001:DB8::{rng.randrange(1, 0xFFFF):X}]"
    if r < 0.06:
        return f"[fe80::{rng.randrange(1, 0xFFFF):x}%25eth{rng.randrange(4)}]"  # RFC 6874
    return _case(authority, rng) if r < 0.3 else authority


def _unicode_host(authority: str) -> str:
    try:
        return authority.encode("ascii").decode("idna")
    except UnicodeError:
        return authority


def _escape_some(text: str, rng: random.Random, p: float) -> str:
    """Escape an unreserved character (RFC 3986 §2.3: ``%41`` is ``A``) now and then."""
    out = []
    for c in text:
        if ((c.isascii() and c.isalnum()) or c in "-._~") and rng.random() < p:
            out.append(_hex(ord(c), rng))
        else:
            out.append(c)
    return "".join(out)


def _path(path: str, rng: random.Random) -> str:
    path = _escape_some(path, rng, 0.04)  # "%2E" inside a name among them
    r = rng.random()
    if r < 0.05:
        path = "a/%2e%2e/" + path  # an encoded dot segment
    elif r < 0.07:
        path = "a/%252e%252e/b/" + path  # a double-encoded one, which climbs no higher
    elif r < 0.09:
        path = "a/./" + path.replace("/", "\\", 1)  # a backslash beside a dot segment
    elif r < 0.11:
        path = path.replace("-", " ", 1) if "-" in path else path + " x"  # a raw space
    elif r < 0.12:
        path = "a/%c0%ae/" + path  # overlong UTF-8 for "."
    return path


def has_idn_host(url: str) -> bool:
    authority = url.partition("://")[2].partition("/")[0].partition("?")[0]
    return not authority.rpartition("@")[2].isascii()


def leaves_compiled_path(url: str, policy: Policy, flags: int) -> str | None:
    """Why ``canonicalize(url, policy)`` leaves the compiled twin for the Python driver; None
    when the twin serves it (the query rules after it included)."""
    assert compiled.twin is not None and compiled.declined is not None
    if flags < 0:
        return "the twin cannot serve the policy"
    result = compiled.twin(url, flags, "auto")
    if result is None:
        return compiled.declined() or "?"
    query_rules = policy.rules & {"drop-params", "sort-query", "drop-empty-query"}
    if query_rules and query_rules_after(result, policy, None) is None:
        return "query rules: the reference's"
    return None


def share_table(urls: list[str]) -> None:
    idn = [u for u in urls if has_idn_host(u)]
    rest = [u for u in urls if not has_idn_host(u)]
    for name, policy in (("default", Policy()), ("crawler", Policy.profile("crawler"))):
        flags = twin_flags(policy)
        reasons = Counter(filter(None, (leaves_compiled_path(u, policy, flags) for u in rest)))
        left = sum(reasons.values())
        idn_left = sum(leaves_compiled_path(u, policy, flags) is not None for u in idn)
        print(f"\n{name} profile: {left} of {len(rest)} URLs ({100 * left / len(rest):.2f}%) leave")
        print(f"the compiled path; IDN hosts apart ({len(idn)} URLs, ", end="")
        print(f"{100 * len(idn) / len(urls):.2f}% of all): {idn_left} leave")
        for why, n in reasons.most_common(6):
            print(f"  {n:>7} {100 * n / len(rest):6.2f}%  {why}")


def url_py() -> Callable[[str], object] | None:
    try:
        import url as url_py
    except ImportError:
        return None

    def parse(u: str) -> object:
        try:
            return str(url_py.URL.parse(u))
        except (url_py.URLError, ValueError):
            return None

    return parse


def contenders() -> dict[str, Callable[[str], object]]:
    """urlsan, and url-py when it is installed."""
    found: dict[str, Callable[[str], object]] = {"urlsan": lambda u: canonicalize(u).url}
    peer = url_py()
    if peer is not None:
        found["url-py"] = peer
    return found


def best_rates(
    sets: dict[str, list[str]], found: dict[str, Callable[[str], object]], rounds: int
) -> dict[tuple[str, str], float]:
    """URLs/s of each contender on each non-empty set, the best of ``rounds`` rounds, each round
    running every set and contender in turn so that drift of the machine hits all alike."""
    best = {(name, who): 0.0 for name, urls in sets.items() if urls for who in found}
    for _ in range(rounds):
        for name, urls in sets.items():
            for who, fn in found.items():
                if urls:
                    best[name, who] = max(best[name, who], len(urls) / run(fn, urls))
    return best


def throughput_table(sets: dict[str, list[str]], rounds: int) -> None:
    found = contenders()
    best = best_rates(sets, found, rounds)
    print(f"\nthroughput, URLs/s (best of {rounds} interleaved rounds)")
    print(f"{'set':<8}" + "".join(f"{who:>14}" for who in found) + f"{'ratio':>9}")
    for name in sets:
        line = f"{name:<8}" + "".join(f"{best[name, who]:>14,.0f}" for who in found)
        if "url-py" in found:
            line += f"{best[name, 'urlsan'] / best[name, 'url-py']:>8.2f}x"
        print(line)
    if "url-py" not in found:
        print("url-py is not installed (pip install -e '.[peers]')")


CLASSES = ("as they were", "rewritten", "with a finding")


def class_of(url: str) -> str:
    """Which of CLASSES ``url`` is in, by what `canonicalize` records of it."""
    result = canonicalize(url)
    return CLASSES[2] if result.findings else CLASSES[1] if result.edits else CLASSES[0]


def classes_table(urls: list[str], rounds: int) -> None:
    """The time per URL of each class of ``urls``, each class timed alone (its rounds
    interleaved with url-py's), with its share of the URLs and of urlsan's time."""
    found = contenders()
    if "url-py" not in found:
        return
    groups: dict[str, list[str]] = {name: [] for name in CLASSES}
    for u in urls:
        groups[class_of(u)].append(u)
    best = best_rates(groups, found, rounds)
    present = [name for name in CLASSES if groups[name]]
    total = sum(len(groups[name]) / best[name, "urlsan"] for name in present)
    print(f"\nwhere the dirty set's time goes (each class timed alone, best of {rounds} rounds)")
    print(f"{'URLs':<16}{'share':>7}{'urlsan ns':>11}{'url-py ns':>11}{'ratio':>8}{'time':>7}")
    for name in present:
        ours, theirs = best[name, "urlsan"], best[name, "url-py"]  # URLs/s
        share = 100 * len(groups[name]) / ours / total
        print(
            f"{name:<16}{100 * len(groups[name]) / len(urls):>6.1f}%{1e9 / ours:>11,.0f}"
            f"{1e9 / theirs:>11,.0f}{ours / theirs:>7.2f}x{share:>6.0f}%"
        )


# Runs in a process of its own under callgrind: each URL of a JSON file, ``passes`` times over.
# The loop is a function's, as `run`'s timed pass is: at module level every name it reads is a
# dict lookup, about 500 instructions a URL added to each contender alike.
WORKER = """
import json, sys
urls = json.load(open(sys.argv[2]))
if sys.argv[1] == "urlsan":
    from urlsan.core import canonicalize
    fn = lambda u: canonicalize(u).url
else:
    import url as url_py
    def fn(u):
        try:
            return str(url_py.URL.parse(u))
        except (url_py.URLError, ValueError):
            return None
def main(passes):
    for _ in range(passes):
        for u in urls:
            fn(u)
main(int(sys.argv[3]))
"""


def instructions(who: str, urls: list[str]) -> float:
    """Instructions per URL of ``who`` ("urlsan" or "url-py") on ``urls`` (bench/callgrind.py)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(urls, f)
    try:
        return callgrind.per_item(["-c", WORKER, who, f.name], len(urls))
    finally:
        os.unlink(f.name)


def instructions_table(sets: dict[str, list[str]]) -> None:
    print(f"\ninstructions per URL under callgrind ({len(next(iter(sets.values())))} URLs a set)")
    print(f"{'set':<8}{'urlsan':>10}{'url-py':>10}{'ratio':>9}")
    for name, urls in sets.items():
        ours, theirs = instructions("urlsan", urls), instructions("url-py", urls)
        print(f"{name:<8}{ours / 1000:>9.2f}k{theirs / 1000:>9.2f}k{theirs / ours:>8.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--corpus-dir", type=Path, default=HERE.parent.parent / "shared" / "data")
    parser.add_argument("--count", type=int, default=0, help="URLs a set under callgrind")
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}")
    if compiled.twin is None:
        print("the compiled twin is not loaded: every URL takes the Python driver")
        return 1
    rng = random.Random(args.seed)
    real = load(args.corpus_dir)
    urls = [spell(u, rng) for u in real]
    print(f"{len(urls)} dirty spellings of the URLs of {', '.join(CORPORA)} (seed {args.seed})")
    share_table(urls)
    light_rng = random.Random(args.seed)
    light = [lightly(u, light_rng) for u in real]
    throughput_table({"dirty": urls, "light": light}, args.rounds)
    classes_table(urls, args.rounds)
    if args.count:
        picks = random.Random(args.seed).sample(range(len(real)), args.count)
        instructions_table(
            {name: [urls_[k] for k in picks] for name, urls_ in
             (("clean", real), ("light", light), ("dirty", urls))}
        )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
