"""Every model of urlsan.core.backends against its real server, on the whole corpus."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from urlsan.core import backends

from .corpus import corpus
from .servers import REQUIRED, SERVERS, expected_body, installed_version

pytestmark = pytest.mark.e2e

CORPUS = corpus()


def disagreements(
    name: str, server: object, targets: list[bytes], settings: dict[str, str] | None = None
) -> list[str]:
    with ThreadPoolExecutor(8) as pool:
        readings = list(pool.map(server.read, targets))  # type: ignore[attr-defined]
    out = []
    for target, real in zip(targets, readings, strict=True):
        model = backends.read(target, name, **(settings or {}))
        refused = real.status != 200
        if model.refused != refused or (
            model.path is not None and expected_body(name, model.path) != real.path
        ):
            out.append(f"{target!r}: server {real.status} {real.path!r}, model {model}")
    return out


def start(name: str, **settings: object) -> object:
    factory, missing = SERVERS[name]
    reason = missing()
    if reason:
        if REQUIRED:
            pytest.fail(f"URLSAN_REQUIRE_BACKENDS=1 and {reason}")
        pytest.skip(reason)
    return factory(**settings)


@pytest.mark.parametrize("name", backends.MEASURED)
def test_the_model_agrees_with_the_server_on_every_target(name: str) -> None:
    with start(name) as server:  # type: ignore[attr-defined]
        bad = disagreements(name, server, CORPUS)
    refused = sum(backends.read(t, name).refused for t in CORPUS)
    print(f"{name}: {len(CORPUS) - len(bad)}/{len(CORPUS)} agree ({refused} refused)")
    assert not bad, f"{len(bad)} of {len(CORPUS)} disagree:\n" + "\n".join(bad[:30])


# The modeled settings other than the defaults: (server, the model's settings, the harness's)
VARIANTS = [
    ("nginx", {"merge_slashes": "off"}, {"merge_slashes": False}),
    ("apache", {"AllowEncodedSlashes": "On"}, {"encoded_slashes": "On"}),
    ("apache", {"AllowEncodedSlashes": "NoDecode"}, {"encoded_slashes": "NoDecode"}),
    ("apache", {"MergeSlashes": "Off"}, {"merge_slashes": False}),
    ("tomcat", {"encodedSolidusHandling": "decode"}, {"encodedSolidusHandling": "decode"}),
    (
        "tomcat",
        {"encodedSolidusHandling": "passthrough"},
        {"encodedSolidusHandling": "passthrough"},
    ),
]


@pytest.mark.parametrize(
    ("name", "settings", "harness"), VARIANTS, ids=[f"{n}-{s}" for n, s, _ in VARIANTS]
)
def test_a_modeled_setting_agrees_with_the_server_so_configured(
    name: str, settings: dict[str, str], harness: dict[str, object]
) -> None:
    # The targets that hold what the settings are about: escapes and repeated slashes.
    targets = [t for t in CORPUS if b"%" in t or b"//" in t]
    with start(name, **harness) as server:  # type: ignore[attr-defined]
        bad = disagreements(name, server, targets, settings)
    print(f"{name} {settings}: {len(targets) - len(bad)}/{len(targets)} agree")
    assert not bad, f"{len(bad)} of {len(targets)} disagree:\n" + "\n".join(bad[:30])


@pytest.mark.parametrize("name", backends.MEASURED)
def test_the_model_was_measured_on_the_release_series_installed(name: str) -> None:
    # A model measured on another series (nginx 1.24, Tomcat 11…) must be measured again; a
    # patch release only has to agree.
    _, missing = SERVERS[name]
    if missing():
        if REQUIRED:
            pytest.fail(f"URLSAN_REQUIRE_BACKENDS=1 and {missing()}")
        pytest.skip(missing())
    here = installed_version(name)
    model = backends.model(name).version
    assert here.split(".")[:2] == model.split(".")[:2], f"{name}: model {model}, installed {here}"
