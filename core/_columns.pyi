from collections.abc import Callable
from typing import Any

def map_strings(
    call: Callable[..., Any],
    tail: tuple[Any, ...],
    field: int,
    fallback: Callable[[str], str | None] | None,
    validity: Any,
    offsets: Any,
    data: Any,
    offset: int,
    length: int,
    large: bool,
    twin: tuple[object, int, Callable[..., Any] | None, Any, tuple[Any, ...] | None] | None,
    /,
) -> tuple[int, bytes | None, bytes, bytes]: ...
def map_result(
    call: Callable[..., Any],
    tail: tuple[Any, ...],
    field: int,
    fallback: Callable[[str], Any] | None,
    validity: Any,
    offsets: Any,
    data: Any,
    offset: int,
    length: int,
    large: bool,
    twin: tuple[object, int, Callable[..., Any] | None, Any, tuple[Any, ...] | None] | None,
    /,
) -> tuple[int, bytes | None, bytes, bytes, int, bytes | None, bytes, bytes, bytes, bytes]: ...
def ia_plain(url: str, /) -> str | None: ...
def ia_entry(
    python: Callable[..., str], full: Callable[[str, bool], str], /
) -> Callable[..., str]: ...
