from urlsan.core.result import Edit, Finding, Result

FLAGS: dict[str, int]
UNRESERVED_2396: int

def canonicalize(target: str, flags: int, form: str, /) -> Result | None: ...
def declined() -> str | None: ...
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
    /,
) -> None: ...
