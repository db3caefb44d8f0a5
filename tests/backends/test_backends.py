"""urlsan.core.backends without servers: the names, the readings of the known bypasses, the
one scan against the full walk, and bad input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urlsan.core import backend_models as backends_models
from urlsan.core import backends
from urlsan.core.backend_models import MODELS

from .corpus import clean, corpus

R = backends.Reading
REFUSED = R(True, None)


# The servers run here, and so measured: each model is held against its server (test_agreement).
RUN_HERE = {
    "nginx",
    "apache",
    "tomcat",
    "jetty",
    "go",
    "go-mux",
    "node",
    "werkzeug",
    "haproxy",
    "haproxy-path",
    "caddy",
    "caddy-path",
    "lighttpd",
}


def test_the_names_cover_the_servers_of_the_brief() -> None:
    assert set(backends.NAMES) >= RUN_HERE


@pytest.mark.parametrize(
    ("target", "name", "reading"),
    [
        # %2F decoded, then dot segments resolved
        ("/a/..%2f/b", "nginx", R(False, "/b")),
        ("/a/..%2f/b", "go-mux", R(False, "/b")),
        ("/a/..%2f/b", "jetty", R(False, "//b")),
        ("/a/..%2f/b", "apache", REFUSED),
        ("/a/..%2f/b", "tomcat", REFUSED),
        ("/a/..%2f/b", "go", R(False, "/a/..//b")),
        # path parameters stripped before dot removal
        ("/a/..;/b", "tomcat", R(False, "/b")),
        ("/a/;/../b", "tomcat", R(False, "/b")),
        ("/a/..;/b", "jetty", REFUSED),
        ("/a;b=c;d", "jetty", R(False, "/a;b=c")),
        # %u, merged slashes, unresolved dots, dropped trailing slash, '#'
        ("/a/%u002e%u002e/b", "jetty", R(False, "/b")),
        ("/x/..//y", "nginx", R(False, "/y")),
        ("/x/..//y", "apache", R(False, "/y")),
        ("/x/..//y", "tomcat", R(False, "/y")),
        ("/x/..//y", "go-mux", R(False, "/y")),
        ("/x/..//y", "jetty", R(False, "//y")),
        ("/a/b/..", "tomcat", R(False, "/a")),
        ("/a/b/..", "go-mux", R(False, "/a")),
        ("/a/b/..", "nginx", R(False, "/a/")),
        ("/a/../b", "node", R(False, "/a/../b")),
        ("/a/../b", "werkzeug", R(False, "/a/../b")),
        ("/a#b", "go", R(False, "/a#b")),
        ("/a#b", "nginx", R(False, "/a")),
        # charsets: bytes, Latin-1, U+FFFD, refused
        ("/%ff", "nginx", R(False, "/\udcff")),
        ("/%ff", "jetty", R(False, "/\xff")),
        ("/%ff", "werkzeug", R(False, "/\ufffd")),
        ("/%ff", "tomcat", REFUSED),
        ("/%ff", "node", REFUSED),
        # who refuses what
        ("/a\\b", "tomcat", REFUSED),
        ("/a%5cb", "tomcat", REFUSED),
        ("/%00", "nginx", REFUSED),
        ("/%00", "apache", REFUSED),
        ("/%00", "jetty", REFUSED),
        ("/..", "nginx", REFUSED),
        ("/..", "apache", REFUSED),
        ("/..", "tomcat", REFUSED),
        ("/..", "go-mux", R(False, "/")),
        # white space at the end of the target separates it from the version: dropped, and the
        # dot segment it leaves resolved; a space inside the target is too many words
        ("/a/b/.. ", "nginx", R(False, "/a/")),
        ("/a/b/.. \t", "tomcat", R(False, "/a")),
        ("/a/b/..  ", "jetty", R(False, "/a/")),
        ("/a/b/.. ", "node", R(False, "/a/b/..")),
        ("/a/b/..\x0c ", "werkzeug", R(False, "/a/b/..")),
        ("/a/b/.. ", "apache", REFUSED),
        # lighttpd: ".." above the root clamps, a stray "%" stays, the query is checked too
        ("/../x", "lighttpd", R(False, "/x")),
        ("/a/%zz/..%2f", "lighttpd", R(False, "/a/")),
        ("/a/%zz", "lighttpd", R(False, "/a/%zz")),
        ("/a?q=%00", "lighttpd", REFUSED),
        ("/a?q=%c0", "lighttpd", REFUSED),
        ("/a#%00", "lighttpd", R(False, "/a")),
        # Caddy: a handler sees the path as Go does, a path matcher tests it cleaned
        ("/a/..%2f/b", "caddy", R(False, "/a/..//b")),
        ("/a/..%2f/b", "caddy-path", R(False, "/b")),
        # HAProxy's ACL: the path as sent; a byte above 0x7E passes only in the words its
        # fast scan skips at the start of the target
        ("/a/../%2e/b", "haproxy-path", R(False, "/a/../%2e/b")),
        ("/a/b/.. ", "haproxy", R(False, "/a/")),
        (b"/a\x80b", "haproxy-path", R(False, "/a\udc80b")),
        (b"/abcd\x80", "haproxy-path", REFUSED),
        (b"/\x80", "haproxy-path", REFUSED),
        ("/a/b/.. ", "go-mux", REFUSED),
        ("/a/b/..\t", "nginx", REFUSED),
        ("/a b/..", "nginx", REFUSED),
        ("/a b/..", "tomcat", REFUSED),
    ],
)
def test_the_known_bypasses_read_as_the_servers_read_them(
    target: str | bytes, name: str, reading: backends.Reading
) -> None:
    assert backends.read(target, name) == reading


def test_str_and_bytes_targets_read_alike() -> None:
    assert backends.read("/é/%2e%2e/x", "nginx") == backends.read("/é/%2e%2e/x".encode(), "nginx")


def test_the_one_scan_never_hides_a_difference() -> None:
    # A target the scan calls plain reads, in every model, as its own path.
    plain = [t for t in corpus() if backends.plain(t)]
    assert len(plain) > 100
    for target in plain:
        path = target.split(b"?", 1)[0].decode()
        for name in backends.NAMES:
            assert backends.walk(target, MODELS[name]) == R(False, path), (target, name)


@pytest.mark.parametrize("target", clean())
def test_clean_targets_are_plain(target: bytes) -> None:
    assert backends.plain(target)


@pytest.mark.parametrize(
    "target",
    [b"/a//b", b"/a/./b", b"/a/..", b"/%41", b"/a;b", b"/\xe9", b"//a", b"/a?%00", b"/a?%C1"],
)
def test_targets_a_server_may_read_otherwise_are_not_plain(target: bytes) -> None:
    assert not backends.plain(target)


def test_an_unknown_server_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown server 'cherokee'"):
        backends.read("/", "cherokee")


def test_every_model_names_its_version_and_every_step_its_source() -> None:
    for model in MODELS.values():
        assert model.version and model.settings
        assert all(step.source for step in model.steps), model.name


def test_the_measured_models_are_those_tests_backends_starts() -> None:
    assert set(backends.MEASURED) == RUN_HERE
    assert set(backends.NAMES) - set(backends.MEASURED) == {"iis", "envoy"}


# The examples of the documentation the unmeasured models are read from.
@pytest.mark.parametrize(
    ("target", "name", "path"),
    [
        # HAProxy, http-request normalize-uri: the examples of its configuration manual
        ("//a///b", "haproxy", "/a/b"),  # path-merge-slashes
        ("/a/./b/.", "haproxy", "/a/b/"),  # path-strip-dot
        ("/foo/../", "haproxy", "/"),  # path-strip-dotdot
        ("/foo/../bar/", "haproxy", "/bar/"),
        ("/../bar/", "haproxy", "/../bar/"),  # without "full"
        ("/%61%62%63%20%2e", "haproxy", "/abc%20."),  # percent-decode-unreserved
        ("/%6a%2f", "haproxy", "/j%2F"),  # percent-to-uppercase
        # Envoy, normalize_path + merge_slashes: %2e is a dot, "\" a slash, escaped slashes kept
        ("/a/%2e%2e/b", "envoy", "/b"),
        ("/a\\..\\b", "envoy", "/b"),
        ("/a//b", "envoy", "/a/b"),
        ("/a/..%2fb", "envoy", "/a/..%2fb"),
        # IIS: %u escapes and "\" as a separator
        ("/a/%u002e%u002e/b", "iis", "/b"),
        ("/a\\..\\b", "iis", "/b"),
    ],
)
def test_the_documented_models_read_their_documentation_s_examples(
    target: str, name: str, path: str
) -> None:
    assert backends.read(target, name) == R(False, path)


@pytest.mark.parametrize("target", ["/a+b", "/a%252e", "/%2561"])
def test_iis_refuses_what_its_request_filtering_calls_double_escaped(target: str) -> None:
    assert backends.read(target, "iis") == REFUSED


def test_readings_of_every_server_equal_each_read() -> None:
    for target in corpus()[::37]:
        all_ = backends.readings(target)
        assert all_ == {name: backends.read(target, name) for name in backends.NAMES}


def test_readings_of_a_plain_target_is_the_path_for_all() -> None:
    assert set(backends.readings("/a/b?x=1").values()) == {R(False, "/a/b")}


@pytest.mark.parametrize("target", ["", "http://example.com/a", "*", b"a/b"])
def test_a_target_not_in_origin_form_is_a_clear_error(target: str | bytes) -> None:
    with pytest.raises(ValueError, match="not an origin-form request-target"):
        backends.read(target, "nginx")
    with pytest.raises(ValueError, match="not an origin-form request-target"):
        backends.readings(target)


@given(st.binary(max_size=40).map(lambda b: b"/" + b))
@settings(max_examples=300, deadline=None)
def test_any_origin_form_bytes_read_without_crashing(target: bytes) -> None:
    for name, reading in backends.readings(target).items():
        assert reading.refused == (reading.path is None), name


def test_the_servers_page_lists_every_model_with_its_version_and_kind() -> None:
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "backends.md").read_text()
    for model in MODELS.values():
        kind = "measured" if model.measured else "documented"
        row = f"| `{model.name}` | "
        line = next((ln for ln in page.splitlines() if ln.startswith(row)), "")
        assert f"| {model.version} | {kind} |" in line, model.name


# --- traits: the models as combinations of named steps, and a user's own combination


@pytest.mark.parametrize("name", backends.NAMES)
def test_the_traits_of_a_model_read_as_the_model_does(name: str) -> None:
    # What a user writes as custom:TRAITS reads as the server whose traits they are.
    spec = backends_models.CUSTOM + ",".join(MODELS[name].traits)
    for target in corpus()[::7]:
        assert backends.read(target, spec) == backends.read(target, name), (target, spec)


def test_a_trait_spec_reads_in_the_order_given() -> None:
    tomcat_like = "custom:strip-params,decode,dots-refuse"
    assert backends.read("/a/..;/b", tomcat_like) == R(False, "/b")
    assert backends.read("/a/..;/b", "custom:decode,dots-refuse,strip-params") == R(
        False, "/a/../b"
    )
    # a trait twice is a step taken twice: decoded twice, "%252e" is a dot
    assert backends.read("/a/%252e%252e/b", "custom:decode,decode,dots-refuse") == R(False, "/b")
    assert backends.read("/a/%252e%252e/b", "custom:decode,dots-refuse") == R(False, "/a/%2e%2e/b")
    # no '#' cut: kept in the path; no charset trait: bytes kept
    assert backends.read("/a#b/%ff", "custom:decode") == R(False, "/a#b/\udcff")
    assert backends.read("/Admin/%41", "custom:decode,lowercase") == R(False, "/admin/a")
    assert backends.read("/a/ ", "custom:refuse-sp,decode") == REFUSED


def test_a_trait_spec_is_one_entry_of_urlsan_backends() -> None:
    value = "nginx,custom:strip-params,decode,dots-refuse,tomcat"
    names = backends.parse_names(value, "urlsan_backends")
    assert names == ("nginx", "custom:strip-params,decode,dots-refuse", "tomcat")
    found = backends.divergences("/a/..;/b", names)
    assert [d.server for d in found] == ["custom:strip-params,decode,dots-refuse", "tomcat"]


def test_read_takes_any_value_urlsan_backends_takes() -> None:
    # One server, a trait spec, a list, host-scoped entries: what the proxy is given, read.
    assert backends.read("/a/..;/b", "tomcat,") == R(False, "/b")
    assert backends.read("/a/..;/b", "custom:strip-params,decode,dots-refuse") == R(False, "/b")
    value = "tomcat@intranet.example,nginx@wiki.example:8080"
    assert backends.read("/a/..;/b", value, host="intranet.example") == R(False, "/b")
    assert backends.read("/a/..;/b", value, host="wiki.example:8080") == R(False, "/a/..;/b")
    with pytest.raises(ValueError, match="no server"):
        backends.read("/a", value)  # no entry for every host, and no host given
    with pytest.raises(ValueError, match="unknown server"):
        backends.read("/a", "nginx,cherokee")


def test_servers_that_read_a_target_apart_read_as_the_one_that_leaves_rfc() -> None:
    # nginx decodes %2F before it resolves "..", Tomcat refuses %2F: the value protects
    # against nginx's reading, whichever comes first.
    for value in ("tomcat,nginx", "nginx,tomcat"):
        assert backends.read("/a/..%2F/b", value) == R(False, "/b")
    # both read "/a/b" as its bytes: that is the reading
    assert backends.read("/a/b", "tomcat,nginx") == R(False, "/a/b")
    # none leaves RFC 3986; one refuses: the one that routes it
    assert backends.read("/a/%2F/b", "tomcat,go-mux").refused is False
    with pytest.raises(ValueError, match="one server"):
        backends.read("/a", "tomcat,nginx", merge_slashes="off")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("custom:decode,merge-slash", "urlsan_backends: unknown trait 'merge-slash': one of"),
        ("custom:", "urlsan_backends: custom: names no trait"),
        ("nginx,dcode", "urlsan_backends: unknown server 'dcode'"),
    ],
)
def test_an_unknown_trait_is_a_clear_error(value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        backends.parse_names(value, "urlsan_backends")


def test_every_trait_is_documented_on_the_servers_page() -> None:
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "backends.md").read_text()
    rows = {
        ln.split("|")[1].strip().strip("`"): ln for ln in page.splitlines() if ln.startswith("| `")
    }
    for name, trait in backends_models.TRAITS.items():
        assert name in rows and trait.means in rows[name], name
    lines = page.splitlines()
    for model in MODELS.values():
        traits = ", ".join(f"`{t}`" for t in model.traits)
        assert f"| `{model.name}` | {traits} |" in lines, model.name


# --- per-host entries: a server behind the proxy for one host


def test_host_scoped_entries_protect_their_host_only() -> None:
    value = (
        "tomcat@intranet.example,nginx@wiki.example:8080,go,custom:decode,merge-slashes@x.example"
    )
    entries = backends.parse_names(value, "urlsan_backends")
    assert entries == (
        "tomcat@intranet.example",
        "nginx@wiki.example:8080",
        "go",
        "custom:decode,merge-slashes@x.example",
    )
    assert backends.for_host(entries, "intranet.example") == ("tomcat", "go")
    assert backends.for_host(entries, "Intranet.Example.:8443") == ("tomcat", "go")  # any port
    assert backends.for_host(entries, "wiki.example") == ("go",)  # the scope names port 8080
    assert backends.for_host(entries, "wiki.example:8080") == ("nginx", "go")
    assert backends.for_host(entries, "x.example") == ("go", "custom:decode,merge-slashes")
    assert backends.for_host(entries, None) == ("go",)
    assert backends.described(entries) == (
        "intranet.example as tomcat, wiki.example:8080 as nginx, "
        "x.example as custom:decode,merge-slashes, every host as go"
    )
    assert backends.described(("tomcat", "nginx")) == "tomcat, nginx"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("tomcat@", "'tomcat@' names no host"),
        ("tomcta@intranet.example", "unknown server 'tomcta'"),
        ("custom:decode,merge-slash@x.example", "unknown trait 'merge-slash'"),
    ],
)
def test_a_bad_scoped_entry_is_a_clear_error(value: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"urlsan_backends: {message}"):
        backends.parse_names(value, "urlsan_backends")


def test_canon_check_reads_each_url_as_its_host_s_server(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from urlsan.cli.main import main

    urls = ["http://intranet.example/static/..;/admin", "http://wiki.example/static/..;/admin"]
    status = main(["canon", "--check", "--backends", "tomcat@intranet.example", *urls])
    out = capsys.readouterr().out.splitlines()
    assert status == 1
    assert len(out) == 1 and "tomcat routes it as '/admin'" in out[0] and urls[0] in out[0]


def test_audit_reads_each_request_as_its_host_s_server() -> None:
    from urlsan.addon import decision

    settings = decision.settings("reject", backends="tomcat@intranet.example")
    for host, diverges in (("intranet.example", True), ("wiki.example", False)):
        request = decision.Request(
            None, "", "GET", "http", host, b"/static/..;/admin", "HTTP/1.1", ""
        )
        outcome = decision.examine(request, settings)
        assert bool(outcome.divergences) == diverges, host
