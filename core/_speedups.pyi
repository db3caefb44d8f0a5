from collections.abc import Callable
from typing import Any

from urlsan.core.result import Edit, Finding, InvalidTarget, Result

FLAGS: dict[str, int]
UNRESERVED_2396: int
STRICT: int
DECLINES: tuple[str, ...]  # every reason declined() may give, in one place
FINDINGS: tuple[str, ...]  # the finding kinds it reports (urlsan.core.taxonomy.KINDS)
ASCII_URL: object  # a capsule: core/_twin.h

def canonicalize(target: str, flags: int, form: str, /) -> Result | None: ...
def declined() -> str | None: ...
def urls(
    entry: Callable[..., Result],
    texts: list[str],
    policy: Any,
    form: str,
    blanks: str,
    longest: int,
    /,
) -> list[str]: ...
def columns(
    entry: Callable[..., Result], values: list[Any], policy: Any, blanks: str, /
) -> tuple[list[str | None], list[bool | None], list[list[str] | None]]: ...
def entry(
    python: Callable[..., Result],
    declined: Callable[..., Result],
    after_twin: Callable[..., Result],
    derive: Callable[..., Any],
    default_policy: Any,
    policy_type: type,
    switch: dict[str, Any],
    /,
) -> Callable[..., Result]: ...
def fields_as_slots(cls: type, /) -> None: ...
def setup(
    result: type[Result],
    edit: type[Edit],
    finding: type[Finding],
    path: str,
    query: str,
    fragment: str,
    unreserved: str,
    unreserved_2396: str,
    default_ports: dict[str, str],
    fold_after: int,
    rule_order: tuple[str, ...],
    userinfo: str,
    host: str,
    invalid_target: type[InvalidTarget],
    nfkc: str,
    /,
) -> None: ...
