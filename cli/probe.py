"""`urlsan probe URL`: which model of `urlsan.core.backends` reads paths as a live server does,
learnt from a few dozen GET requests and what the server answers.

URL is a page of the backend that answers with a stable response (200 and the same body each
time).  Each probe is a spelling of that page's path that some servers read as the page and
others do not (``/x/../PAGE``, ``/x/..;/PAGE``, ``/x/..%2f/PAGE``...); the answer to each is
compared with the answer to the page itself (status, ``Location`` and body; a redirect on the
same origin followed once).  A model is consistent when, for every probe, it reads the probe as
the page exactly when the server answered as for the page.

What it sends: HTTP/1.1 GET requests (one HEAD first, to check the origin answers), one at a
time on a fresh connection, to the URL's host and port only, never a body, at most
``--rate`` a second.
"""

from __future__ import annotations

import argparse
import json
import socket
import ssl
import sys
import time
import urllib.parse
from collections.abc import Callable
from typing import Any, NamedTuple

from ..core import backends
from ..core.backend_models import MODELS, TRAITS
from .status import EXIT_OK, UsageError

_TIMEOUT = 10.0
_MAX_BODY = 1 << 20  # an answer is compared on its first MiB


class Answer(NamedTuple):
    """What the server answered, as the probe compares it."""

    status: int
    location: str
    body: bytes


class Found(NamedTuple):
    """What probing learnt (`probe`)."""

    models: tuple[str, ...]  # the models consistent with every answer
    traits: tuple[str, ...]  # traits every consistent model has
    unknown: tuple[str, ...]  # traits some consistent models have and others not
    backends: str  # the urlsan_backends value that protects the server
    probes: int  # requests sent (the page's included)
    nearest: tuple[tuple[str, int], ...]  # when no model is consistent: the closest, misses


# The spellings of the page's path, each a function of the page's directory-free path
# ("/a/b" -> "a/b"): what it tells apart is in the comment.
_SPELLINGS: tuple[Callable[[str], str], ...] = (
    lambda p: "/x/../" + p,  # dot segments resolved
    lambda p: "/x/%2e%2e/" + p,  # decoded before the dots
    lambda p: "/x/%2E%2e/" + p,
    lambda p: "/x/.%2e/" + p,
    lambda p: "/x/..%2f" + p,  # %2F decoded, then the dots
    lambda p: "/x/..%2F" + p,
    lambda p: "/x/..;/" + p,  # path parameters stripped before the dots
    lambda p: "/x;y/../" + p,
    lambda p: "/x/..;y/" + p,
    lambda p: "/x/%u002e%u002e/" + p,  # %u escapes
    lambda p: "/x/..%5c" + p,  # %5C as a separator
    lambda p: "/x/..\\" + p,  # "\" as a separator
    lambda p: "/x/..%00/" + p,  # %00
    lambda p: "/x/%252e%252e/" + p,  # decoded twice
    lambda p: "/../" + p,  # above the root: clamped, refused or kept
    lambda p: "/x/../../" + p,
    lambda p: "//" + p,  # slashes merged
    lambda p: "/./" + p,
    lambda p: "/" + p.replace("/", "//", 1) if "/" in p else "//" + p,
    lambda p: "/" + p + ";y",  # a parameter on the last segment
    lambda p: "/" + p + "#y",  # a raw '#': cut, kept or refused
    lambda p: "/" + p + "%23y",
    lambda p: "/" + p + "/.",  # a trailing dot segment
    lambda p: "/" + p + "/x/..",
    lambda p: "/" + _escape_first(p),  # an unreserved escape decoded
    lambda p: "/" + p.upper(),  # case-insensitive routing
    lambda p: "/" + p + " ",  # white space before the version
    lambda p: "/" + p + "\t",
    lambda p: "/x/.. /" + p,  # a space inside the target
    lambda p: "/x/%ff/../" + p,  # an escape that is no UTF-8, resolved away
    lambda p: "/x/%c0/../" + p,
    lambda p: "/x/%zz/../" + p,  # a stray "%"
    lambda p: "/x/%80/../" + p,
)


def _escape_first(path: str) -> str:
    for i, c in enumerate(path):
        if c.isalnum():
            return f"{path[:i]}%{ord(c):02X}{path[i + 1 :]}"
    return path


def targets(page: str) -> tuple[str, ...]:
    """The probes for the page's path ``page`` (origin-form, no query), the page first."""
    rest = page.lstrip("/")
    out = dict.fromkeys([page] + [spell(rest) for spell in _SPELLINGS])
    return tuple(out)


def predict(name: str, page: str, target: str) -> bool:
    """Whether model ``name`` reads ``target`` as the page at ``page``."""
    own = backends.read(page, name)
    try:
        seen = backends.read(target.encode("latin-1"), name)
    except ValueError:
        return False
    return not seen.refused and seen.path == own.path and not own.refused


def consistent(page: str, answers: dict[str, bool]) -> tuple[tuple[str, int], ...]:
    """Each model and the number of probes it predicts otherwise than ``answers`` (target:
    answered as the page), fewest first."""
    misses = {
        name: sum(predict(name, page, t) != same for t, same in answers.items()) for name in MODELS
    }
    return tuple(sorted(misses.items(), key=lambda kv: kv[1]))


def conclude(page: str, answers: dict[str, bool]) -> Found:
    """The models, traits and value ``answers`` establish."""
    ranked = consistent(page, answers)
    models = tuple(name for name, miss in ranked if miss == 0)
    chosen = models or tuple(name for name, miss in ranked if miss == ranked[0][1])
    sets = [set(MODELS[name].traits) for name in chosen]
    common = set.intersection(*sets) if sets else set()
    either = set.union(*sets) if sets else set()
    order = list(TRAITS)
    return Found(
        models=models,
        traits=tuple(t for t in order if t in common),
        unknown=tuple(t for t in order if t in either - common),
        backends=",".join(chosen),
        probes=len(answers),
        nearest=() if models else ranked[:3],
    )


# --- the wire


class Origin(NamedTuple):
    scheme: str
    host: str
    port: int

    @property
    def authority(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"


def parse_url(url: str) -> tuple[Origin, str]:
    """The origin and the origin-form path of ``url``; `UsageError` unless http(s) with a host."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"URL must be http:// or https:// with a host: {url!r}")
    if parts.query or parts.fragment:
        raise UsageError("URL must name a page by its path alone (no query or fragment)")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return Origin(parts.scheme, parts.hostname, port), parts.path or "/"


def fetch(origin: Origin, target: bytes, method: bytes = b"GET") -> Answer:
    """One request on a fresh connection; the status, Location and (capped) body."""
    head = b"%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: urlsan-probe\r\nConnection: close\r\n\r\n"
    data = head % (method, target, origin.authority.encode("idna"))
    raw = bytearray()
    with socket.create_connection((origin.host, origin.port), _TIMEOUT) as sock:
        conn: socket.socket = sock
        if origin.scheme == "https":
            conn = ssl.create_default_context().wrap_socket(sock, server_hostname=origin.host)
        conn.sendall(data)
        while len(raw) < _MAX_BODY:
            try:
                chunk = conn.recv(65536)
            except (ConnectionResetError, TimeoutError):
                break
            if not chunk:
                break
            raw += chunk
    return _answer(bytes(raw))


def _answer(raw: bytes) -> Answer:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    fields = lines[0].split(b" ", 2)
    status = int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else 0
    location = ""
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"location":
            location = value.strip().decode("latin-1")
    return Answer(status, location, body)


class Prober:
    """Sends the probes to one origin, one at a time, at most ``rate`` a second."""

    def __init__(self, origin: Origin, rate: float, send: Callable[..., Answer] = fetch) -> None:
        self.origin, self.gap, self.send = origin, 1.0 / rate, send
        self.last = 0.0
        self.sent = 0

    def answer(self, target: bytes, method: bytes = b"GET") -> Answer:
        wait = self.last + self.gap - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self.last = time.monotonic()
        self.sent += 1
        got = self.send(self.origin, target, method)
        return self._followed(got, method)

    def _followed(self, got: Answer, method: bytes) -> Answer:
        """A redirect to a path on the same origin, followed once (Go's ServeMux answers a
        path it cleans so)."""
        if got.status not in (301, 302, 307, 308) or not got.location:
            return got
        to = urllib.parse.urlsplit(got.location)
        same = not to.netloc or (to.hostname, to.port or self.origin.port) == (
            self.origin.host,
            self.origin.port,
        )
        if not same or not to.path.startswith("/"):
            return got
        target = to.path + (f"?{to.query}" if to.query else "")
        self.sent += 1
        return self.send(self.origin, target.encode("latin-1"), method)


def probe(url: str, rate: float = 10.0, send: Callable[..., Answer] = fetch) -> Found:
    """Probe the page at ``url`` (`Found`); `UsageError` when it gives no stable answer."""
    origin, page = parse_url(url)
    prober = Prober(origin, rate, send)
    head = prober.answer(page.encode("latin-1"), b"HEAD")
    if head.status == 0:
        raise UsageError(f"{url}: no HTTP answer")
    reference = prober.answer(page.encode("latin-1"))
    if reference != prober.answer(page.encode("latin-1")):
        raise UsageError(f"{url}: two GETs of the page answered differently; name a stable page")
    answers = {}
    for target in targets(page)[1:]:
        answers[target] = prober.answer(target.encode("latin-1")) == reference
    return conclude(page, answers)._replace(probes=prober.sent)


# --- the command


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "probe",
        help="learn which server model reads paths as a live backend does (urlsan_backends)",
        description="Send a few dozen GET requests, spellings of the path of URL (a page that "
        "answers the same each time), to URL's origin only, one at a time, never with a body; "
        "print the traits the answers establish, those they cannot tell, the models "
        "consistent with them and the urlsan_backends value that protects the backend.",
    )
    p.add_argument("url", metavar="URL", help="a page of the backend: http(s)://host[:port]/path")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--rate", type=float, default=10.0, help="at most this many requests a second (10)"
    )
    p.set_defaults(func=cmd_probe)


def cmd_probe(args: argparse.Namespace) -> int:
    if not args.rate > 0:
        raise UsageError("--rate must be above 0")
    try:
        found = probe(args.url, args.rate)
    except OSError as e:
        raise UsageError(f"{args.url}: {e}") from None
    if args.json:
        sys.stdout.write(json.dumps(_json(found)) + "\n")
        return EXIT_OK
    print(f"probes sent: {found.probes}")
    print(f"models consistent: {', '.join(found.models) or 'none'}")
    if found.nearest:
        near = ", ".join(f"{n} ({m} probes read otherwise)" for n, m in found.nearest)
        print(f"nearest: {near}")
    print(f"traits established: {', '.join(found.traits) or 'none'}")
    print(f"traits not told apart: {', '.join(found.unknown) or 'none'}")
    print(f"urlsan_backends={found.backends}")
    return EXIT_OK


def _json(found: Found) -> dict[str, Any]:
    return {
        "backends": found.backends,
        "models": list(found.models),
        "traits": list(found.traits),
        "unknown": list(found.unknown),
        "nearest": [{"model": n, "misses": m} for n, m in found.nearest],
        "probes": found.probes,
    }
