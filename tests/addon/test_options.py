"""The option table (addon/options.py): the proxy's options and the flags of `urlsan audit` and
`urlsan canon` are derived from it, so that a proxy run can be replayed by `urlsan audit`."""

from __future__ import annotations

from typing import Any

import pytest

from urlsan.addon import decision, options
from urlsan.addon.options import AUDIT, CANON, OPTIONS, PROXY, Option, taken_by
from urlsan.cli.main import build_parser


class _Loader:
    def __init__(self) -> None:
        self.added: dict[str, tuple[Any, Any, str, Any]] = {}

    def add_option(
        self, name: str, typespec: Any, default: Any, help: str, choices: Any = None
    ) -> None:
        assert name not in self.added, f"{name} declared twice"
        self.added[name] = (typespec, default, help, choices)


def test_the_addon_declares_each_proxy_option_from_the_table() -> None:
    pytest.importorskip("mitmproxy")
    from urlsan.addon.sanitizer import UrlSanitizer

    loader = _Loader()
    UrlSanitizer().load(loader)
    assert list(loader.added) == [o.option for o in taken_by(PROXY)]
    for o in taken_by(PROXY):
        _, default, text, choices = loader.added[o.option]
        assert text == o.help
        assert (tuple(default) if isinstance(default, list) else default) == o.default
        assert choices == (o.choices if o.kind == options.CHOICE else None)


def _actions(front: str) -> dict[str, Any]:
    parser = build_parser(front)
    sub = next(a for a in parser._actions if a.dest == "command")
    command = sub.choices[front]  # type: ignore[index]
    return {s: a for a in command._actions for s in a.option_strings}


@pytest.mark.parametrize("front", [AUDIT, CANON])
def test_each_command_takes_the_table_s_flags(front: str) -> None:
    actions = _actions(front)
    for o in OPTIONS:
        if front not in o.fronts:
            assert o.flag not in actions, f"{o.flag} is not taken by urlsan {front}"
            continue
        action = actions[o.flag]
        assert action.dest == o.name
        assert o.option in (action.help or "")  # the reader learns which proxy option it is
        if o.kind not in (options.SPECS, options.NAMES):
            assert action.default == o.default_for(front)


def test_every_option_that_changes_a_record_is_taken_by_urlsan_audit() -> None:
    """A proxy run can be replayed: only where the log goes and what runs in a worker
    process are the live proxy's alone."""
    proxy_only = {o.name for o in OPTIONS if o.fronts == frozenset({PROXY})}
    assert proxy_only == {o.name for o in OPTIONS if o.sets == options.LIVE}
    assert {o.name for o in taken_by(AUDIT)} == {o.name for o in taken_by(PROXY)} - proxy_only


def test_names_and_kinds() -> None:
    assert len({o.name for o in OPTIONS}) == len(OPTIONS)
    for o in OPTIONS:
        assert o.fronts and o.fronts <= set(options.FRONTS)
        assert o.sets in (
            options.POLICY,
            options.DECISION,
            options.RECORD,
            options.FLOWS,
            options.LIVE,
        )
        assert o.option == "urlsan_" + o.name and o.flag == "--" + o.name.replace("_", "-")
        assert not isinstance(o.default, list | dict | set)  # immutable
        assert bool(o.choices) == (o.kind == options.CHOICE or o.name == "backends")
        if o.choices and o.kind == options.CHOICE:
            assert o.default in o.choices


def test_the_decision_names_the_proxy_s_options_as_the_table_does() -> None:
    assert options.option_names(PROXY) == decision.OPTION_NAMES
    assert options.BY_NAME["max_target"].option == decision.TOO_LONG
    assert options.BY_NAME["backends"].option == decision.BACKENDS


def test_a_front_end_default_differs_only_where_declared() -> None:
    mode = options.BY_NAME["mode"]
    assert mode.default_for(PROXY) == "rewrite" and mode.default_for(AUDIT) == "audit"
    assert all(o.default_for(CANON) == o.default for o in OPTIONS if o.name != "mode")
    assert isinstance(OPTIONS[0], Option)


def test_names_are_comma_separated_in_the_proxy_as_on_the_command_line() -> None:
    """--set urlsan_redact=a,b is two names, as urlsan audit --redact a,b is."""
    pytest.importorskip("mitmproxy")
    from mitmproxy.test import taddons

    from urlsan.addon.sanitizer import UrlSanitizer

    addon = UrlSanitizer()
    with taddons.context(addon) as tctx:
        tctx.options.set("urlsan_redact=x,B", "urlsan_backends=nginx,tomcat")
        assert addon.settings.redactor.names == frozenset({"x", "b"})
        assert addon.settings.decision.backends == ("nginx", "tomcat")
