"""What the command shows on a terminal: whether a stream is one, text made safe to show on it,
and the colors of ``--diff``."""

from __future__ import annotations

from typing import IO


def isatty(stream: IO[str]) -> bool:
    """Whether ``stream`` is a terminal (no, for a stream that cannot say, or is closed)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Colors:
    """ANSI colors for --diff, or empty strings."""

    def __init__(self, on: bool) -> None:
        self.head = "\x1b[1;36m" if on else ""
        self.minus = "\x1b[31m" if on else ""
        self.plus = "\x1b[32m" if on else ""
        self.reset = "\x1b[0m" if on else ""


# C0 and C1 controls and DEL, shown as \xNN: a URL in a list must not be able to drive the
# terminal it is displayed on (ESC sequences can rewrite the screen or the title).
_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x20), *range(0x7F, 0xA0)]}


def shown(text: str) -> str:
    """``text`` safe for a terminal."""
    # isprintable() is false for every control (and a few more): the common case costs a scan.
    return text if text.isprintable() else text.translate(_CONTROLS)


_CONTROLS_BUT_LINE_ENDS = {c: v for c, v in _CONTROLS.items() if c != 0x0A}


def safe_bytes(data: bytes) -> bytes:
    """Output bytes safe for a terminal: bytes that are not UTF-8, and controls other than the
    line ends, as ``\\xNN``."""
    text = data.decode("utf-8", "backslashreplace")
    return text.translate(_CONTROLS_BUT_LINE_ENDS).encode("utf-8")
