"""`urlsan probe` against every real server tests/backends starts: the value it prints names
the server's own model, and every model it names reads the backends corpus as the server does
(the server's own model standing for it: test_agreement holds the two equal on every target).
Without servers: the conclusions from answers, the origin, the pace and the redirects."""

from __future__ import annotations

import json
import time

import pytest

from urlsan.cli import probe as probing
from urlsan.cli.main import main
from urlsan.cli.status import UsageError
from urlsan.core import backends

from .corpus import corpus
from .servers import SERVERS
from .test_agreement import start

PAGE = "/probe/page"
CORPUS = corpus()


def _agreement(name: str, own: str) -> float:
    same = sum(backends.read(t, name) == backends.read(t, own) for t in CORPUS)
    return same / len(CORPUS)


@pytest.mark.e2e
@pytest.mark.parametrize("name", list(SERVERS))
def test_probe_names_a_value_that_reads_as_the_server(name: str) -> None:
    with start(name) as server:  # type: ignore[attr-defined]
        found = probing.probe(f"http://127.0.0.1:{server.port}{PAGE}", rate=200)
    assert name in found.models, found
    assert found.backends.split(",") == list(found.models)
    assert 20 <= found.probes <= 60
    for model in found.models:
        assert _agreement(model, name) >= 0.995, model
    # The value as a whole (what the user pastes) reads the corpus as the server does.
    assert _agreement(found.backends, name) >= 0.995, found.backends
    # No target the server reads otherwise than RFC 3986 passes the value unseen.
    value = backends.parse_names(found.backends)
    for target in CORPUS[::5]:
        if backends.divergences(target, (name,)):
            assert backends.divergences(target, value), target


@pytest.mark.e2e
def test_the_command_prints_the_value_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    with start("tomcat") as server:  # type: ignore[attr-defined]
        url = f"http://127.0.0.1:{server.port}{PAGE}"
        assert main(["probe", "--rate", "200", url]) == 0
        text = capsys.readouterr().out
        assert main(["probe", "--rate", "200", "--json", url]) == 0
        found = json.loads(capsys.readouterr().out)
    assert "urlsan_backends=tomcat\n" in text and "models consistent: tomcat" in text
    assert found["backends"] == "tomcat" and found["models"] == ["tomcat"]
    assert "strip-params" in found["traits"] and found["unknown"] == []


@pytest.mark.parametrize("name", backends.NAMES)
def test_answers_as_a_model_reads_conclude_that_model(name: str) -> None:
    answers = {t: probing.predict(name, PAGE, t) for t in probing.targets(PAGE)[1:]}
    found = probing.conclude(PAGE, answers)
    assert name in found.models
    assert set(found.traits) | set(found.unknown) >= set(backends.model(name).traits)


def test_no_consistent_model_names_the_nearest() -> None:
    # nginx's answers, but "/x/..;/PAGE" answered as the page too: no model reads both so
    answers = {t: probing.predict("nginx", PAGE, t) for t in probing.targets(PAGE)[1:]}
    answers["/x/..;/" + PAGE[1:]] = True
    found = probing.conclude(PAGE, answers)
    assert found.models == ()
    assert found.nearest[0][1] >= 1 and found.backends


@pytest.mark.parametrize(
    "url", ["ftp://h/p", "http:///p", "http://h/p?q=1", "http://h/p#f", "/just/a/path"]
)
def test_a_url_that_names_no_page_of_an_origin_is_refused(url: str) -> None:
    with pytest.raises(UsageError):
        probing.parse_url(url)


def test_requests_go_to_the_one_origin_at_the_rate_given() -> None:
    sent: list[tuple[probing.Origin, bytes, bytes]] = []
    page = probing.Answer(200, "", b"page")

    def send(origin: probing.Origin, target: bytes, method: bytes) -> probing.Answer:
        sent.append((origin, target, method))
        if target == b"/x/../p":
            return probing.Answer(301, "/p", b"")  # same origin: followed
        if target == b"//p":
            return probing.Answer(301, "http://elsewhere.example/p", b"")  # not followed
        return page if target == b"/p" else probing.Answer(404, "", b"no")

    start_time = time.monotonic()
    found = probing.probe("http://h.example:8080/p", rate=50, send=send)
    took = time.monotonic() - start_time
    assert {o for o, _, _ in sent} == {probing.Origin("http", "h.example", 8080)}
    assert sent[0][2] == b"HEAD" and {m for _, _, m in sent[1:]} == {b"GET"}
    assert b"http://elsewhere.example/p" not in {t for _, t, _ in sent}
    assert found.probes == len(sent)
    assert took >= (len(sent) - 2) / 50  # the followed redirects come without a pause


def test_the_servers_page_lists_every_request_probe_sends() -> None:
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "backends.md").read_text()
    listed = [ln[3:-1] for ln in page.splitlines() if ln.startswith("- `/")]
    sent = [repr(t)[1:-1] for t in probing.targets("/a/page")[1:]]
    assert listed == sent
