"""Fuzzing and growth measurements for urlsan.core.canonicalize (issue #5).

    python tools/fuzz.py atheris [libFuzzer flags] [corpus dir]   coverage-guided fuzzing
    python tools/fuzz.py atheris-addon [flags] [corpus dir]       the same, the addon's hook
    python tools/fuzz.py growth [--max N]                         time per input size, printed

The atheris target picks a policy and a form from the first byte and checks the same invariants
as tests/hardening/test_fuzz.py (tests/hardening/fuzzing.py).  Failing inputs are written by
libFuzzer to -artifact_prefix (tests/hardening passes tests/data/fuzz/).

Run as a file (as above) it puts the checkout's root first on sys.path, for
``tests.hardening.fuzzing``; ``python -m tools.fuzz`` from the root needs nothing.
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

if __name__ == "__main__" and not __package__:  # python tools/fuzz.py: the root, for tests
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Adversarial families: each is a function of n that builds an input of about n characters.
FAMILIES = {
    "dots": lambda n: "/.." * (n // 3),
    "dot-slash": lambda n: "/./" * (n // 3),
    "encoded-dots": lambda n: "/%2e%2e" * (n // 7),
    "percents": lambda n: "/" + "%" * n,
    "percent-2": lambda n: "/" + "%2" * (n // 2),
    "double-enc": lambda n: "/" + "%25" * (n // 3),
    "slashes": lambda n: "/" * n,
    "pchar-run": lambda n: "/" + "a" * n + "%",  # a fast-path regex must fail in linear time
    "segment-run": lambda n: "/a" * (n // 2) + "/%",
    "backslashes": lambda n: "/" + "\\" * n,
    "segments": lambda n: "/a" * (n // 2),
    "params-dotdot": lambda n: "/..;" * (n // 4),
    "non-ascii": lambda n: "/" + "é" * n,
    "raw-bytes": lambda n: "/" + "\udcff" * n,
    "controls": lambda n: "/" + "\x01" * n,
    # Issue #13: rewrites that alternate rules (one edit each), and escapes that raise findings.
    "control-percent": lambda n: "/" + "\x01%" * (n // 2),
    "nul-escapes": lambda n: "/" + "%00" * (n // 3),
    "nul-cr-escapes": lambda n: "/" + "%00%0d" * (n // 6),
    "escape-run": lambda n: "/" + "%41" * (n // 3),
    "query-pairs": lambda n: "/?" + "a=1&" * (n // 4),
    "query-amps": lambda n: "/?" + "&" * n,
    "fragment": lambda n: "/#" + "#?" * (n // 2),
    "host-labels": lambda n: "http://" + "a." * (n // 2) + "/",
    "host-numeric": lambda n: "http://" + "0x" + "f" * n + "/",
    "host-ats": lambda n: "http://" + "@" * n + "h/",
    "host-colons": lambda n: "http://h" + ":" * n + "/",
    "ipv6": lambda n: "http://[" + ":" * n + "]/",
    "scheme": lambda n: "a" * n + ":",
}


def growth(max_n: int) -> None:
    from tests.hardening.fuzzing import FORMS, POLICIES
    from urlsan.core import InvalidTarget, canonicalize

    sizes = [max_n // 16, max_n // 4, max_n]
    print(
        f"{'family':<16} {'policy':<22} {'form':<10} "
        + " ".join(f"{n:>10}" for n in sizes)
        + "   ratio(last/first per char)"
    )
    worst = 0.0
    for family, make in FAMILIES.items():
        for pname in ("rfc3986", "opt-in", "crawler"):
            for form in ("auto", "origin") if family[:4] not in ("host", "ipv6") else FORMS[:1]:
                times = []
                for n in sizes:
                    target = make(n)
                    t0 = time.perf_counter()
                    with contextlib.suppress(InvalidTarget):
                        canonicalize(target, POLICIES[pname], form=form)
                    times.append(time.perf_counter() - t0)
                per_char = [t / n for t, n in zip(times, sizes, strict=True)]
                ratio = per_char[-1] / max(per_char[0], 1e-12)
                worst = max(worst, ratio)
                print(
                    f"{family:<16} {pname:<22} {form:<10} "
                    + " ".join(f"{t * 1000:>8.2f}ms" for t in times)
                    + f"   {ratio:6.2f}"
                )
    quadratic = sizes[-1] // sizes[0]
    print(f"worst per-character growth ratio: {worst:.2f} (linear ~1; quadratic ~{quadratic})")


def atheris_main(argv: list[str]) -> None:
    import atheris

    with atheris.instrument_imports(include=["urlsan"]):
        import urlsan.core  # noqa: F401
        from tests.hardening.fuzzing import FORMS, POLICY_NAMES, check

    def one_input(data: bytes) -> None:
        if not data:
            return
        choice = data[0]
        policy = POLICY_NAMES[choice % len(POLICY_NAMES)]
        form = FORMS[(choice // len(POLICY_NAMES)) % len(FORMS)]
        check(data[1:], policy, form)

    atheris.Setup([sys.argv[0], *argv], one_input)
    atheris.Fuzz()


def atheris_addon_main(argv: list[str]) -> None:
    """The addon's request path: requestheaders on a flow whose target is the input."""
    import atheris

    with atheris.instrument_imports(include=["urlsan"]):
        from mitmproxy.test import taddons, tflow, tutils

        from urlsan.addon import UrlSanitizer

    modes = ("rewrite", "audit", "reject", "redirect")
    addon = UrlSanitizer()
    with taddons.context(addon) as tctx:

        def one_input(data: bytes) -> None:
            if not data:
                return
            mode = modes[data[0] % len(modes)]
            if tctx.options.urlsan_mode != mode:
                tctx.configure(addon, urlsan_mode=mode)
            path = data[1:]
            if not path.startswith((b"/", b"*")):
                path = b"/" + path  # what mitmproxy's HTTP/1 reader hands over
            flow = tflow.tflow(req=tutils.treq(path=path))
            addon.requestheaders(flow)
            if addon.errors:
                raise RuntimeError(f"the addon recorded an internal error on {path!r}")
            out = flow.request.data.path
            if out != path and not all(0x21 <= b <= 0x7E for b in out):
                raise AssertionError(f"not wire-safe: {out!r}")

        atheris.Setup([sys.argv[0], *argv], one_input)
        atheris.Fuzz()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "atheris":
        atheris_main(sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == "atheris-addon":
        atheris_addon_main(sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == "growth":
        n = int(sys.argv[sys.argv.index("--max") + 1]) if "--max" in sys.argv else 200_000
        growth(n)
    else:
        print(__doc__)
        sys.exit(2)
