"""The compiled twin (core/_speedups.c) under AddressSanitizer and UBSan, hammered with input.

    .venv/bin/python tools/asan_speedups.py [--seconds 60] [--seed 0] [--all-code-points]
                                            [--huge-reference]

About five minutes with the defaults (the sanitized interpreter is slow); exit 77 = skipped.

Builds core/_speedups.c with ``-fsanitize=address,undefined`` into a temporary directory, then
runs this file again in a child process with ``LD_PRELOAD=libasan.so`` (the interpreter is not
instrumented, so the runtime must come first), ``PYTHONMALLOC=malloc`` (so that PyMem buffers and
str objects come from malloc, where ASan sees their bounds), ``ASAN_OPTIONS=detect_leaks=0``
(the interpreter itself leaks at exit); an ASan report aborts the child, UBSan reports are
collected (each site once) and listed at the end.  The child loads the sanitized
module as ``urlsan.core._speedups`` before ``urlsan.core`` is imported, so compiled.py sets it up
exactly as in production, and feeds it:

- hostile edge cases ("", "%", "http://", "http://h:", ":" ...) under every flag value (all_flags);
- 1 MB inputs (escapes, dot segments, non-ASCII, surrogates, long hosts and ports) per policy,
  compared with the reference on their first 128 KB (in full with --huge-reference);
- every code point (a sample of them; all with --all-code-points) and every ASCII character at
  every position of a few templates;
- random URL-shaped and arbitrary text for --seconds, each twin Result compared with
  canonicalize_python (a mismatch is reported and fails the run);
- the inputs of tests/data and, when present, the ada corpora of ../shared/data.

It also checks, in the parent (normal build), that repeated calls do not leak memory.  Exit
status 0: no sanitizer report, no mismatch, no leak.  Needs gcc, libasan and the Python headers;
a missing one is reported and the run exits 77 (the "skipped" status of automake's test driver).
Not a pytest module: nothing here is collected.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "core" / "_speedups.c"
DATA = ROOT / "tests" / "data"
SHARED = ROOT.parent / "shared" / "data"
SKIP = 77
SHOWN = 50  # mismatches printed in full; all are counted
CHILD_ENV = "URLSAN_ASAN_CHILD"  # path of the sanitized .so, set by the parent for the child


# --- parent: build, then run the child under the sanitizers


def skip(why: str) -> NoReturn:
    print(f"{why}: skipped", file=sys.stderr)
    sys.exit(SKIP)


def build(out_dir: Path) -> Path:
    cc = shutil.which("gcc")
    if cc is None:
        skip("gcc not found")
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").exists():
        skip(f"no Python.h in {include}")
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    target = out_dir / f"_speedups{suffix}"
    cmd = [
        cc,
        "-shared",
        "-fPIC",
        "-O1",
        "-g",
        "-fsanitize=address,undefined",
        "-fsanitize-recover=undefined",  # UBSan reports are collected; ASan aborts at once
        "-fno-omit-frame-pointer",
        "-Wall",
        "-Wextra",
        "-Wno-unused-parameter",
        "-Wno-missing-field-initializers",
        "-Wno-cast-function-type",
        f"-I{include}",
        str(SOURCE),
        "-o",
        str(target),
    ]
    print("$", " ".join(cmd), flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.stderr.strip():
        print(done.stderr, file=sys.stderr)
    if done.returncode != 0:
        sys.exit(f"build failed ({done.returncode})")
    return target


def libasan() -> str:
    path = subprocess.run(
        ["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True
    ).stdout.strip()
    if not path or not Path(path).exists():
        skip("libasan.so not found")
    return str(Path(path).resolve())


def leak_check() -> int:
    """Repeated calls on the regular build: memory traced by tracemalloc must not grow."""
    import tracemalloc

    from urlsan.core import Policy, compiled
    from urlsan.core.canonical import twin_flags

    twin = compiled.twin
    if twin is None:
        print("leak check: the twin is not built, skipped")
        return 0
    flags = [twin_flags(Policy()), twin_flags(Policy.profile("crawler")), 0, all_flags()]
    inputs = [*hostile_cases(), *itertools.islice(random_targets(random.Random(1)), 300)]

    def burn() -> None:
        for t in inputs:
            for f in flags:
                for form in ("auto", "origin", "absolute"):
                    twin(t, f, form)
        for bad in ((b"/", 0, "auto"), ("/", -1, "auto"), ("/", 2**40, "auto"), ("/",)):
            with contextlib.suppress(TypeError, ValueError, OverflowError):
                twin(*bad)

    burn()
    tracemalloc.start()
    burn()
    first = tracemalloc.get_traced_memory()[0]
    for _ in range(20):
        burn()
    grown = tracemalloc.get_traced_memory()[0] - first
    tracemalloc.stop()
    calls = 20 * len(inputs) * len(flags) * 3
    print(f"leak check: {calls} calls, traced memory grew by {grown} bytes")
    return 1 if grown > 64 * 1024 else 0


def parent(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="urlsan-asan-") as tmp:
        so = build(Path(tmp))
        env = dict(os.environ)
        env.update(
            {
                CHILD_ENV: str(so),
                "LD_PRELOAD": libasan(),
                "PYTHONMALLOC": "malloc",
                "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:strict_string_checks=1:"
                "detect_stack_use_after_return=1:check_initialization_order=1",
                "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=0",
            }
        )
        env.pop("URLSAN_NO_EXTENSIONS", None)
        started = time.monotonic()
        child = subprocess.run(
            [sys.executable, __file__, *sys.argv[1:]], env=env, stderr=subprocess.PIPE, text=True
        )
        elapsed = time.monotonic() - started
    sys.stderr.write(child.stderr)
    # UBSan prints each site once: "file:line:col: runtime error: ...".
    ub = sorted({line for line in child.stderr.splitlines() if "runtime error:" in line})
    asan = "ERROR: AddressSanitizer" in child.stderr
    print(f"sanitized run: exit {child.returncode} in {elapsed:.0f} s")
    print(f"AddressSanitizer: {'REPORT (see above)' if asan else 'no report'}")
    print(f"UBSan: {len(ub)} distinct report(s)")
    for line in ub:
        print("  " + line)
    leaks = leak_check()
    return 1 if child.returncode or asan or ub or leaks else 0


# --- child: load the sanitized module where compiled.py will find it, then hammer it


def load_sanitized(path: str) -> Any:
    import importlib.machinery
    import importlib.util

    name = "urlsan.core._speedups"
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before urlsan.core: compiled.py imports this one
    loader.exec_module(module)
    return module


FORMS = ("auto", "origin", "absolute", "authority", "asterisk")
HOSTILE = [
    "",
    "/",
    "%",
    "/%",
    "/%4",
    "/%%",
    "/?%",
    "/#%",
    "/%u",
    ":",
    "//",
    "*",
    "?",
    "#",
    "http",
    "http:",
    "http:/",
    "http://",
    "http://h",
    "http://h:",
    "http://h:/",
    "http://:",
    "http://:80",
    "http://h:80:",
    "http://h.",
    "http://.",
    "http://-",
    "http://0x",
    "http://h/%",
    "http://h?%",
    "http://h#%",
    "http://h/%2",
    "HTTP://",
    "HTTP://H",
    "httpsssss://h/",
    "abcdefgh://h/",
    "abcdefghi://h/",
    "wss://h:00443",
    "http://h/..",
    "http://h/../..;/.",
    "/..;",
    "/.",
    "/..",
    "/a/..//",
    "/\udcff",
    "/\udcc0",
    "/\ud800\udc00",
    "/\U0010ffff",
    "/\x00",
    "/\x7f",
    "/\\",
]


def hostile_cases() -> Iterator[str]:
    yield from HOSTILE
    for t in HOSTILE:
        yield t + "?"
        yield t + "#"
        yield t + "é"
        yield t + "\udcff"


MB = 1 << 20
UNITS = ["%", "../", "./", "%41", "%7e", "é", "😀", "\udcff", "a/", " ", "%%41", "..;/", "\x00"]


def huge_cases() -> Iterator[str]:
    for unit in UNITS:
        body = unit * (MB // len(unit))
        yield "/" + body
        yield "/?" + body
        yield "/#" + body
        yield "HTTP://Example.COM:0080/" + body[: MB // 2] + "?" + body[: MB // 2]
    yield "http://" + "a" * MB + "/"
    yield "HTTP://" + "A" * MB
    yield "http://" + "a." * (MB // 2) + "b/"
    yield "http://" + "1" * MB + "/"
    yield "http://h:" + "0" * MB + "/"
    yield "http://h:" + "0" * MB + "80"
    yield "http://h:" + "9" * MB
    yield "/" + "a/" * (MB // 2) + ".." + "/.." * (MB // 3)
    yield "/" + "/a" * (MB // 2)
    yield "/" + "?" * MB
    yield "/#" + "#" * MB
    yield "/" + "%" * (MB - 1) + "4"


def code_points(everything: bool) -> Iterator[int]:
    if everything:
        yield from range(0x110000)
        return
    picked = set(range(0x400)) | set(range(0xD7F0, 0xE010)) | set(range(0, 0x110000, 97))
    picked |= {0x7FF, 0x800, 0xFFFF, 0x10000, 0x10FFFF, 0xFFFE, 0xFEFF}
    yield from sorted(picked)


TEMPLATES = ["HTTP://Ex.com:0080/a/./b?c=d#e", "/a/../b;c?d#e", "ws://h/%41%7e"]


def random_targets(rng: random.Random) -> Iterator[str]:
    pieces = [
        *".;/?#&=:@!$'()*+,~-_ <>{}|^`[]\\\"\x00\x7f\t",
        "..",
        "%",
        "%%",
        "%4",
        "%u",
        "%2e",
        "%2F",
        "%25",
        "%41",
        "%7e",
        "%zz",
        "%c0",
        "%C3%A9",
        "é",
        "€",
        "😀",
        "\udcff",
        "\udcc0",
        "\ud800",
        "a",
        "Bc",
        "09",
    ]
    hosts = ["h", "Ex.COM", "a-b.c1", "a.1", "0x7f.1", "h.", "h_", "u@h", "[::1]", "é", ""]
    ports = ["", ":", ":0", ":80", ":443", ":0080", ":8080", ":1:2"]
    schemes = ["http", "HTTP", "hTtPs", "ws", "WSS", "ftp", "h", ""]
    while True:
        k = rng.random()
        path = "".join(rng.choice(pieces) for _ in range(rng.randrange(12)))
        if k < 0.45:
            yield f"{rng.choice(schemes)}://{rng.choice(hosts)}{rng.choice(ports)}/{path}"
        elif k < 0.85:
            yield "/" + path
        else:
            yield "".join(chr(rng.randrange(0x110000)) for _ in range(rng.randrange(20)))


def all_flags() -> int:
    """Every switch of the twin on (compiled._flags: the bits _speedups.FLAGS names)."""
    from urlsan.core import compiled

    top = max([*compiled._flags.values(), compiled._unreserved_2396, 1])
    return 2 * top - 1


class Differential:
    """Each twin Result against the reference; every mismatch counted, the first SHOWN kept."""

    def __init__(self, twin: Any, policies: list[Any]) -> None:
        from urlsan.core.canonical import twin_flags
        from urlsan.core.policy import QUERY_RULES

        self.twin = twin
        self.policies = policies
        self.flags = {id(p): twin_flags(p) for p in policies}
        # The twin runs the character and structural rules; the query rules (QUERY_RULES) run
        # after it in Python (core/canonical.py), so the raw twin answers as the reference does
        # without them, and canonicalize (twin, then query rules) as it does with them.
        self.alone = {id(p): dataclasses.replace(p, rules=p.rules - QUERY_RULES) for p in policies}
        self.query_rules = QUERY_RULES
        self.counts = {"calls": 0, "handled": 0, "mismatches": 0}
        self.raw = lambda target, policy, form: twin(target, self.flags[id(policy)], form)
        self.shown: list[str] = []

    def __call__(
        self, target: str, chosen: list[Any] | None = None, forms: tuple[str, ...] = FORMS
    ) -> None:
        from urlsan.core.canonical import canonicalize, canonicalize_python

        counts = self.counts
        for policy in self.policies if chosen is None else chosen:
            for form in forms:
                # Under a strict policy the twin raises the reference's InvalidTarget.
                got = outcome(self.raw, target, policy, form)
                counts["calls"] += 1
                if got is None:
                    continue
                counts["handled"] += 1
                expected = outcome(canonicalize_python, target, self.alone[id(policy)], form)
                if got != expected:
                    self.mismatch("twin", target, policy, form, got, expected)
                # canonicalize is the compiled entry: the twin, then the query rules.
                whole = outcome(canonicalize, target, policy, form)
                reference = expected
                if policy.rules & self.query_rules:
                    reference = outcome(canonicalize_python, target, policy, form)
                if whole != reference:
                    self.mismatch("canonicalize", target, policy, form, whole, reference)

    def mismatch(self, what: str, target: str, policy: Any, form: str, got: Any, exp: Any) -> None:
        self.counts["mismatches"] += 1
        if len(self.shown) < SHOWN:
            shown = f"{what}: {target[:200]!r} {policy!r} {form}"
            self.shown.append(f"{shown}:\n  got      {got!r}\n  expected {exp!r}"[:4000])

    def report(self) -> int:
        """Print the mismatches kept and the count of all; 1 if there was any."""
        for m in self.shown:
            print("MISMATCH", m)
        total = self.counts["mismatches"]
        if total > len(self.shown):
            print(f"[asan] {total} mismatches in all; the first {len(self.shown)} are shown above")
        print(f"[asan] done: {self.counts}, {total} mismatches, no ASan abort")
        return 1 if total else 0


def outcome(func: Any, target: str, policy: Any, form: str) -> object:
    """The Result, or an InvalidTarget as a comparable value."""
    from urlsan.core import InvalidTarget

    try:
        return func(target, policy, form=form)
    except InvalidTarget as e:
        return ("InvalidTarget", e.rule, e.component, e.offset, e.message)


def child(path: str, args: argparse.Namespace) -> int:
    module = load_sanitized(path)
    from urlsan.core import InvalidTarget, Policy, compiled
    from urlsan.core.canonical import twin_flags
    from urlsan.core.policy import PROFILES, REQUIRED_RULES

    assert compiled.twin is module.canonicalize, "compiled.py did not pick the sanitized module"
    twin: Any = module.canonicalize
    policies = [Policy(), *(Policy.profile(n) for n in PROFILES), Policy(rules=REQUIRED_RULES)]
    for spec in (
        "-decode-unreserved,-uppercase-escape",
        "-lowercase-host,-lowercase-scheme",
        "-remove-dot-segments,-empty-path",
        "-drop-default-port,-strip-port-zeros,-drop-empty-port",
        "+strip-fragment,+merge-slashes",
        "+reject-escaped-slash",
    ):
        policies.append(Policy().with_rules(spec))
    policies = [p for p in policies if twin_flags(p) >= 0]
    differential = Differential(twin, policies)
    counts = differential.counts

    def step(name: str) -> None:
        print(f"[asan] {time.monotonic() - t0:6.0f} s  {name}: {counts}", flush=True)

    t0 = time.monotonic()
    # 1. Hostile edge cases: the bare ones under every flag value, all under every policy.
    for target in HOSTILE:
        for flags in range(all_flags() + 1):
            for form in (*FORMS, "x"):
                twin(target, flags, form)
        counts["calls"] += (len(FORMS) + 1) * (all_flags() + 1)
    for target in hostile_cases():
        differential(target)
    for bad in ((b"/", 0, "auto"), ("/", -1, "auto"), ("/", 2**40, "auto"), ("/",), ()):
        with contextlib.suppress(TypeError, ValueError, OverflowError):
            twin(*bad)
    step("hostile x all flags")

    # 2. One-megabyte inputs: the twin under every policy; the reference (seconds per call
    #    here) on their first 128 KB, or on the whole megabyte with --huge-reference.
    few = policies[:2]
    for target in huge_cases():
        for policy in policies:
            for form in FORMS:
                with contextlib.suppress(InvalidTarget):  # a strict policy's refusal
                    twin(target, twin_flags(policy), form)
        twin(target, all_flags(), "auto")
        counts["calls"] += 3 * len(policies) + 1
        differential(target if args.huge_reference else target[: 128 * 1024], few, ("auto",))
    step("1 MB inputs")

    # 3. Every ASCII character and (a sample of) every code point at every position.
    flags = twin_flags(Policy())
    for template in TEMPLATES:
        for pos in range(len(template) + 1):
            for c in range(128):
                differential(template[:pos] + chr(c) + template[pos:], few)
            for cp in code_points(args.all_code_points):
                t = template[:pos] + chr(cp) + template[pos:]
                for form in FORMS:
                    twin(t, flags, form)
                counts["calls"] += 3
        step(f"code points at every position of {template!r}")

    # 4. The data files and the ada corpora.
    for target in data_inputs():
        differential(target, few)
    step("tests/data and ada corpora")

    # 5. Random input for the rest of the budget.
    rng = random.Random(args.seed)
    deadline = time.monotonic() + args.seconds
    targets = random_targets(rng)
    while time.monotonic() < deadline:
        for _ in range(100):
            differential(next(targets))
    step("random")

    return differential.report()


def data_inputs() -> Iterator[str]:
    def strings(value: Any) -> Iterator[str]:
        if isinstance(value, str):
            yield value
        elif isinstance(value, list):
            for item in value:
                yield from strings(item)
        elif isinstance(value, dict):
            for key, item in value.items():
                yield key
                yield from strings(item)

    for path in sorted(DATA.rglob("*.json")):
        yield from strings(json.loads(path.read_bytes().decode("latin-1")))
    for path in sorted(SHARED.glob("ada-*.txt")):
        yield from path.read_text(encoding="utf-8", errors="surrogateescape").splitlines()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60, help="random-input budget (child)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--huge-reference", action="store_true", help="compare 1 MB inputs in full")
    ap.add_argument("--all-code-points", action="store_true", help="U+0000..U+10FFFF, not a sample")
    args = ap.parse_args()
    so = os.environ.get(CHILD_ENV)
    return child(so, args) if so else parent(args)


if __name__ == "__main__":
    sys.exit(main())
