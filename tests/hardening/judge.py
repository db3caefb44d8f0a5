"""What a real server decodes from a request-target, and the rules for comparing two of them.

A *meaning* is what the application behind the server gets to see:

* nginx: ``$uri`` (decoded, dot segments resolved; ``merge_slashes off``) and ``$args`` read as
  an application reads a query (split on ``&`` and ``=``, escapes decoded), from its access log;
* werkzeug: ``PATH_INFO`` (decoded; WSGI latin-1 string as bytes) with dot segments resolved as a
  router or file server would, and the parsed ``request.args``;

or ``("refused", status)`` when the server answers anything but 200.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from tests.hardening import support
from tests.hardening.support import Nginx, Werkzeug, query_pairs, raw_request, resolve_dots

Meaning = tuple[Any, ...]
REFUSED = "refused"

# A client cannot put these in a request line: they end it.  Such raw targets are judged by their
# minimal repair only.
UNSENDABLE = frozenset(b"\r\n")

# Bytes that are never valid raw in a request-target (RFC 3986 Appendix A, RFC 9112 §3.2).
_INVALID_RAW = frozenset(range(0x21)) | frozenset(range(0x7F, 0x100)) | frozenset(b'"<>\\^`{|}[]')
_HEX = frozenset(b"0123456789abcdefABCDEF")


def minimal_repair(target: bytes) -> bytes:
    """The least a repair can do: escape the bytes that are never valid raw, and stray '%'.

    An independent reference for what a repaired target must mean (not urlsan's code).
    """
    out = bytearray()
    seen_hash = False
    for i, b in enumerate(target):
        escape = target[i + 1 : i + 3]
        if b == 0x25 and not (len(escape) == 2 and escape[0] in _HEX and escape[1] in _HEX):
            out += b"%25"
        elif b in _INVALID_RAW or (b == 0x23 and seen_hash):
            out += b"%%%02X" % b
        else:
            seen_hash = seen_hash or b == 0x23
            out.append(b)
    return bytes(out)


def is_sendable(target: bytes) -> bool:
    return not (UNSENDABLE & set(target))


def refused(r: support.Response) -> Meaning:
    """A refusal, and who refused: the upstream server (it names itself) or the proxy."""
    proxy = (r.server or b"").startswith(b"mitmproxy")
    return (REFUSED, r.status, "proxy" if proxy else "server")


class Server:
    """Sends targets to one port; ``keep_alive`` reuses a connection per worker thread (a proxy
    then reuses its upstream connection too), otherwise one connection per request."""

    name = "server"
    port = 0
    keep_alive = False
    _local = threading.local()

    def send(self, target: bytes, headers: dict[str, str] | None = None) -> support.Response:
        if not self.keep_alive:
            return raw_request(self.port, target, headers)
        conns = self._local.__dict__.setdefault("conns", {})
        conn = conns.get(self.port)
        if conn is None:
            conn = conns[self.port] = support.KeepAlive(self.port)
        return conn.request(target, headers)

    def meaning(self, target: bytes, case: int) -> Meaning:
        raise NotImplementedError

    def meanings(self, targets: Iterable[bytes], workers: int = 16) -> dict[bytes, Meaning]:
        todo = [t for t in dict.fromkeys(targets) if is_sendable(t)]
        with ThreadPoolExecutor(workers) as pool:
            results = list(pool.map(self.meaning, todo, range(len(todo))))
        support.FIGURES[f"requests sent to {self.name}"] += len(todo)
        return self.finish(dict(zip(todo, results, strict=True)))

    def finish(self, found: dict[bytes, Meaning]) -> dict[bytes, Meaning]:
        return found


class NginxJudge(Server):
    def __init__(
        self, nginx: Nginx, port: int | None = None, name: str = "nginx", keep_alive: bool = False
    ) -> None:
        self.keep_alive = keep_alive
        self.nginx = nginx
        self.port = port or nginx.port
        self.name = name
        self._case: dict[str, bytes] = {}

    def meaning(self, target: bytes, case: int) -> Meaning:
        tag = f"c{case}"
        self._case[tag] = target
        r = self.send(target, {"X-Case": tag})
        return refused(r) if r.status != 200 else ("pending", tag)

    def finish(self, found: dict[bytes, Meaning]) -> dict[bytes, Meaning]:
        by_case = {rec.case.decode(): rec for rec in self.nginx.records() if rec.status == 200}
        out = {}
        for target, m in found.items():
            if m[0] == "pending":
                rec = by_case[m[1]]
                args = b"" if rec.args == b"-" else rec.args
                m = ("ok", rec.uri, query_pairs(args))
            out[target] = m
        return out


class WerkzeugJudge(Server):
    def __init__(
        self,
        server: Werkzeug,
        port: int | None = None,
        name: str = "werkzeug",
        keep_alive: bool = False,
    ) -> None:
        self.keep_alive = keep_alive
        self.port = port or server.port
        self.name = name

    def meaning(self, target: bytes, case: int) -> Meaning:
        r = self.send(target)
        if r.status != 200:
            return refused(r)
        record = json.loads(r.body)
        path = record["path_info"].encode("latin-1")
        args = tuple((k, v) for k, v in record["args"])
        return ("ok", resolve_dots(path), args, path)


def same(a: Meaning, b: Meaning) -> bool:
    """Equal meanings; werkzeug's raw PATH_INFO (last field) is compared after dot resolution."""
    return a[:3] == b[:3]


@dataclass
class Verdicts:
    """How each target fared on one server: counts by class and the cases that break a rule."""

    server: str
    policy: str
    counts: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    examples: dict[str, list[bytes]] = field(default_factory=dict)
    known_bug: Callable[[bytes], str | None] | None = None

    def add(self, verdict: str, target: bytes, detail: str = "") -> None:
        if verdict.startswith("FAIL") and self.known_bug is not None:
            bug = self.known_bug(target)
            verdict = f"KNOWN-{bug}" if bug else verdict
        self.counts[verdict] += 1
        self.examples.setdefault(verdict, [])
        if len(self.examples[verdict]) < 3:
            self.examples[verdict].append(target)
        if verdict.startswith("FAIL"):
            self.failures.append(f"{verdict}: {target!r} {detail}")

    def summary(self) -> str:
        parts = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        return f"{self.server} / {self.policy}: {parts}"


def judge(
    server: str,
    policy: str,
    targets: Iterable[bytes],
    rewrite: Callable[[bytes], bytes],
    meanings: dict[bytes, Meaning],
    raw_is_misread: Callable[[bytes], bool] = lambda t: False,
    known_bug: Callable[[bytes, bytes], str | None] = lambda raw, new: None,
    faithful: Callable[[bytes], bytes] = minimal_repair,
) -> Verdicts:
    """Compare, target by target, what the server decodes from the raw and the rewritten form.

    Classes:
      unchanged       the rewrite is the raw target itself (accepted; -refused: refused by both)
      same            both accepted, same meaning (werkzeug: after dot resolution)
      same-dots       same, but werkzeug's unresolved PATH_INFO differs (remove-dot-segments)
      repaired        raw refused (or unsendable), rewritten accepted and means what the minimal
                      repair of the raw target means
      repaired-only   raw refused, rewritten accepted, the minimal repair is refused too (e.g.
                      nginx refuses '/../a' above the root; urlsan resolves it to '/a')
      refused-both    raw and rewritten refused (e.g. nginx refuses %00 in the path)
      misread-raw     the server misreads the raw target (werkzeug reads raw non-ASCII bytes as
                      latin-1 characters, and a leading "//" as an authority); the rewritten form
                      means what ``faithful(raw)`` means (default: the minimal repair)
      misread-both    the server misreads the raw and the rewritten target alike (werkzeug: both
                      start with "//"): the rewrite changed nothing it reads
      FAIL-differs    both accepted, meanings differ
      FAIL-refused    raw accepted, rewritten refused
      FAIL-repair     the rewritten form does not mean what the minimal repair means
      KNOWN-...       a FAIL that ``known_bug`` names (a core bug reported, with its own xfail test)
    """
    v = Verdicts(server, policy, known_bug=lambda raw: known_bug(raw, rewrite(raw)))
    for raw in dict.fromkeys(targets):
        new = rewrite(raw)
        m_new = meanings[new]
        repair = minimal_repair(raw)
        m_repair = meanings.get(repair, (REFUSED, 0))
        m_faithful = meanings.get(faithful(raw), (REFUSED, 0))
        m_raw = meanings.get(raw, (REFUSED, "unsendable"))
        detail = f"-> {new!r}: raw {m_raw!r} rewritten {m_new!r} minimal repair {m_repair!r}"
        if new == raw:
            v.add("unchanged" if m_raw[0] == "ok" else "unchanged-refused", raw)
        elif m_raw[0] == "ok" and raw_is_misread(raw):
            if m_new[0] != "ok":
                v.add("FAIL-refused", raw, detail)
            elif same(m_raw, m_new) and not (m_faithful[0] == "ok" and same(m_faithful, m_new)):
                v.add("misread-both", raw)
            elif m_faithful[0] == "ok" and not same(m_faithful, m_new):
                v.add("FAIL-repair", raw, detail + f" faithful {m_faithful!r}")
            else:
                v.add("misread-raw", raw)
        elif m_raw[0] == "ok":
            if m_new[0] != "ok":
                v.add("FAIL-refused", raw, detail)
            elif not same(m_raw, m_new):
                v.add("FAIL-differs", raw, detail)
            elif len(m_raw) > 3 and m_raw[3] != m_new[3]:
                v.add("same-dots", raw)
            else:
                v.add("same", raw)
        elif m_new[0] != "ok":
            v.add("refused-both", raw)
        elif m_repair[0] != "ok":
            v.add("repaired-only", raw)
        elif same(m_repair, m_new):
            v.add("repaired", raw)
        else:
            v.add("FAIL-repair", raw, detail)
    support.FIGURES["meaning verdicts"] += sum(v.counts.values())
    return v
