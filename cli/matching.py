"""``urlsan audit --filter``: only the flows of a flow file that the proxy's ``urlsan_filter``
would have let the addon see.  mitmproxy is imported only when a filter is given."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from typing import IO, Any, BinaryIO, cast

from .status import UsageError

Matcher = Callable[[Any], bool]


def parse(expr: str, flag: str) -> Matcher:
    """mitmproxy's filter of ``expr``; `UsageError` naming ``flag`` when it does not parse."""
    from mitmproxy import flowfilter

    try:
        return cast(Matcher, flowfilter.parse(expr))
    except ValueError as e:
        raise UsageError(f"{flag}: {e}") from None


class MatchingFlows(io.RawIOBase):
    """The flow file ``stream`` with only the HTTP flows ``matches`` takes (and every other
    flow, which the reader passes over anyway), as a flow file again: the reader of
    `urlsan.audit.sources` reads it unchanged.  A torn file ends the stream; its error is kept
    in `error` for the caller to count."""

    def __init__(self, stream: IO[bytes], matches: Matcher) -> None:
        super().__init__()
        from mitmproxy.io import FlowReader

        self._flows: Iterator[Any] = iter(FlowReader(cast(BinaryIO, stream)).stream())
        self._matches = matches
        self._pending = b""
        self.error: Exception | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            flow = self._next()
            if flow is None:
                return 0
            if self._wanted(flow):
                self._pending = _serialized(flow)
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def _next(self) -> Any:
        from mitmproxy import exceptions

        try:
            return next(self._flows)
        except StopIteration:
            return None
        except exceptions.FlowReadException as e:
            self.error = e
            return None

    def _wanted(self, flow: Any) -> bool:
        from mitmproxy import http

        if not isinstance(flow, http.HTTPFlow):
            return True
        # The addon matches at requestheaders, before any response or error: a filter on the
        # status (~c 404) or the response's headers matches nothing there, so none here.
        response, error = flow.response, flow.error
        flow.response = flow.error = None
        try:
            return bool(self._matches(flow))
        finally:
            flow.response, flow.error = response, error


def _serialized(flow: Any) -> bytes:
    from mitmproxy.io import FlowWriter

    out = io.BytesIO()
    FlowWriter(out).add(flow)  # type: ignore[no-untyped-call]
    return out.getvalue()
