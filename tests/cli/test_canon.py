"""`urlsan canon`: inputs, output modes, bad lines, exit statuses."""

from __future__ import annotations

import gzip
import json
import select
import subprocess
import zlib
from pathlib import Path

import pytest
from cli_harness import URLSAN, RunUrlsan

from urlsan.cli.status import (
    EXIT_BAD_LINES,
    EXIT_BROKEN_PIPE,
    EXIT_OFFENDERS,
    EXIT_OK,
    EXIT_USAGE,
    EXIT_WRITE_ERROR,
)
from urlsan.core import canonicalize

MESSY = "HTTP://Example.COM:80/%7euser/./a/../b"
CLEAN = "http://example.com/~user/b"


def test_arguments(urlsan: RunUrlsan) -> None:
    r = urlsan("canon", MESSY, "http://a/b c")
    assert (r.status, r.lines, r.err) == (EXIT_OK, [CLEAN, "http://a/b%20c"], "")


def test_stdin_keeps_order_and_one_line_per_line(urlsan: RunUrlsan) -> None:
    # BOM on line 1 (ada-kasztp.txt has one), CRLF, blanks around a URL, no final newline.
    stdin = b"\xef\xbb\xbf" + MESSY.encode() + b"\r\n  http://B/  \nhttp://c/%41"
    r = urlsan("canon", stdin=stdin)
    assert r.status == EXIT_OK
    assert r.lines == [CLEAN, "http://b/", "http://c/A"]


def test_input_file_gzip_and_output_file(urlsan: RunUrlsan, tmp_path: Path) -> None:
    plain, packed = tmp_path / "urls.txt", tmp_path / "urls.txt.gz"
    plain.write_text(f"{MESSY}\nhttp://x/\n")
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    # gzip is recognized by its magic number, not the file name; also on stdin.
    disguised = tmp_path / "urls.list"
    disguised.write_bytes(packed.read_bytes())
    for source in (plain, packed, disguised):
        assert urlsan("canon", "-i", str(source)).lines == [CLEAN, "http://x/"]
    assert urlsan("canon", stdin=packed.read_bytes()).lines == [CLEAN, "http://x/"]
    out = tmp_path / "out.txt.gz"
    r = urlsan("canon", "-i", str(plain), "-o", str(out))
    assert (r.status, r.out) == (EXIT_OK, b"")
    assert gzip.decompress(out.read_bytes()) == f"{CLEAN}\nhttp://x/\n".encode()


def test_profile_and_rules(urlsan: RunUrlsan) -> None:
    url = "http://a//b/?utm_source=x&b=1&a=2#top"
    assert urlsan("canon", url).lines == ["http://a//b/?utm_source=x&b=1&a=2#top"]
    assert urlsan("canon", "--profile", "crawler", url).lines == ["http://a//b/?a=2&b=1"]
    r = urlsan("canon", "--profile", "crawler", "--rules", "+merge-slashes,-sort-query", url)
    assert r.lines == ["http://a/b/?b=1&a=2"]


def test_json_is_the_library_result(urlsan: RunUrlsan) -> None:
    r = urlsan("canon", "--json", MESSY, "http://ok/")
    objs = [json.loads(line) for line in r.lines]
    assert objs == [canonicalize(MESSY).as_dict(), canonicalize("http://ok/").as_dict()]
    assert set(objs[0]) == {"input", "url", "edits", "findings"}


def test_diff_shows_only_changes_with_rules(urlsan: RunUrlsan) -> None:
    r = urlsan("canon", "--diff", "http://ok/", MESSY)
    assert r.status == EXIT_OK
    assert r.lines == [
        "2: lowercase-scheme, lowercase-host, drop-default-port, decode-unreserved, "
        "remove-dot-segments",
        f"- {MESSY}",
        f"+ {CLEAN}",
    ]
    assert "1 of 2 URLs changed" in r.err
    colored = urlsan("canon", "--diff", "--color", "always", MESSY)
    assert b"\x1b[32m+ " + CLEAN.encode() in colored.out


def test_check(urlsan: RunUrlsan, tmp_path: Path) -> None:
    ok = urlsan("canon", "--check", "http://a/", CLEAN)
    assert (ok.status, ok.out) == (EXIT_OK, b"")
    assert "0 of 2 URLs not canonical" in ok.err
    urls = tmp_path / "urls.txt"
    urls.write_text(f"http://a/\n{MESSY}\n")
    bad = urlsan("canon", "--check", "-i", str(urls))
    assert bad.status == EXIT_OFFENDERS
    assert bad.lines == [
        f"{urls}:2: lowercase-scheme, lowercase-host, drop-default-port, decode-unreserved, "
        f"remove-dot-segments: {MESSY} -> {CLEAN}"
    ]
    as_json = urlsan("canon", "--check", "--json", "http://a/", MESSY)
    assert [json.loads(x)["input"] for x in as_json.lines] == [MESSY]
    assert urlsan("canon", "--check", "-q", MESSY).err == ""


def test_dedupe_keeps_the_first_of_each_canonical_form(urlsan: RunUrlsan) -> None:
    r = urlsan("canon", "--dedupe", MESSY, "http://a/", CLEAN, "HTTP://A:80/")
    assert r.lines == [CLEAN, "http://a/"]
    assert "2 distinct, 2 collapsed" in r.err
    check = urlsan("canon", "--check", "--dedupe", "http://a/", "http://A/")
    assert check.status == EXIT_OFFENDERS
    assert check.lines[-1] == "argument:2: duplicate of line 1: http://A/"


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_dedupe_passes_each_bad_line_once(urlsan: RunUrlsan, tmp_path: Path, jobs: str) -> None:
    """A blank line is no URL: under --dedupe it is deduplicated like any other output (one
    empty line, however many blank ones came in), and so is a repeated bad input; each is still
    reported, and the exit status is still 3."""
    text = b"http://a/\n\n  \nHTTP://A/\n\n\xff\nhttp://b/\n\xff\n\n" * 300
    source = tmp_path / "urls.txt"
    source.write_bytes(text)
    r = urlsan("canon", "--dedupe", "--jobs", jobs, "-i", str(source))
    assert r.status == EXIT_BAD_LINES
    assert r.out == b"http://a/\n\n\xff\nhttp://b/\n"
    assert r.err.endswith(
        "urlsan canon: 2,700 lines: 2 distinct, 898 collapsed; 1,800 bad lines (2 distinct) "
        "passed through\n"
    )
    json_out = urlsan("canon", "--dedupe", "--json", "-i", str(source))
    assert [json.loads(line).get("error") for line in json_out.lines] == [
        None, "empty", "not UTF-8 (byte 0xff at offset 0)", None
    ]  # fmt: skip
    skip = urlsan("canon", "--dedupe", "--on-error", "skip", "-i", str(source))
    assert skip.out == b"http://a/\nhttp://b/\n" and "1,800 bad lines skipped" in skip.err
    # Without --dedupe, output line n is still input line n.
    plain = urlsan("canon", "-i", str(source))
    assert plain.out.count(b"\n") == 2700


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_gzip_input_cut_short(urlsan: RunUrlsan, tmp_path: Path, jobs: str) -> None:
    """Every whole line before the cut is canonicalized and written; the line the cut goes
    through is a bad line where the run stopped (its rest is unknown), exit status 3."""
    urls = [f"HTTP://a/{i}/./x" for i in range(20000)]
    packed = gzip.compress("\n".join(urls).encode() + b"\n")
    torn = packed[: len(packed) // 2]
    source = tmp_path / "urls.txt.gz"
    source.write_bytes(torn)
    whole_lines = zlib.decompressobj(wbits=31).decompress(torn).count(b"\n")
    r = urlsan("canon", "--jobs", jobs, "-i", str(source))
    assert r.status == EXIT_BAD_LINES
    assert r.lines == [f"http://a/{i}/x" for i in range(whole_lines)]
    assert f"{source}:{whole_lines + 1}: the gzip data ends here, cut short or corrupt" in r.err
    assert r.err.endswith(f"stopped at bad line {whole_lines + 1}\n")
    keys = urlsan("canon", "--key", "surt", "-i", str(source))
    assert keys.status == EXIT_BAD_LINES and len(keys.lines) == whole_lines
    assert f"line {whole_lines + 1}: the gzip data ends here" in keys.err


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"", "empty"),
        (b"   ", "empty"),
        (b"http://a/\xff", "not UTF-8 (byte 0xff at offset 9)"),
        (b"http://a/" + b"x" * 100, "longer than 64 bytes"),
    ],
)
def test_bad_lines_are_reported_and_passed_or_skipped(
    urlsan: RunUrlsan, line: bytes, reason: str
) -> None:
    stdin = b"HTTP://A/\n" + line + b"\nHTTP://B/\n"
    passed = urlsan("canon", "--max-length", "64", stdin=stdin)
    assert passed.status == EXIT_BAD_LINES
    assert f"urlsan canon: <stdin>:2: {reason}\n" in passed.err
    kept = b"" if line.startswith(b"http://a/x") else line.strip()  # a too-long line is not kept
    assert passed.out == b"http://a/\n" + kept + b"\nhttp://b/\n"
    skipped = urlsan("canon", "--max-length", "64", "--on-error", "skip", stdin=stdin)
    assert skipped.status == EXIT_BAD_LINES
    assert skipped.out == b"http://a/\nhttp://b/\n"
    assert "1 bad line skipped" in skipped.err


def test_line_numbers_continue_after_a_too_long_line(urlsan: RunUrlsan) -> None:
    stdin = b"x" * 10_000 + b"\n\nhttp://c/\n" + b"y" * 5000  # long last line, no newline
    r = urlsan("canon", "--max-length", "100", "--on-error", "skip", stdin=stdin)
    assert r.lines == ["http://c/"]
    assert r.err.splitlines()[:3] == [
        "urlsan canon: <stdin>:1: longer than 100 bytes",
        "urlsan canon: <stdin>:2: empty",
        "urlsan canon: <stdin>:4: longer than 100 bytes",
    ]


def test_policy_rejections_are_bad_lines(urlsan: RunUrlsan) -> None:
    r = urlsan("canon", "--profile", "strict", "--json", "http://a/b c", "http://a/")
    assert r.status == EXIT_BAD_LINES
    first, second = (json.loads(x) for x in r.lines)
    assert first["url"] is None and first["error"].startswith("rejected: ")
    assert "encode-unsafe" in first["error"]
    assert second["url"] == "http://a/"
    assert "argument:1: rejected:" in r.err


def test_bad_lines_and_check_offenders_exit_3(urlsan: RunUrlsan) -> None:
    assert urlsan("canon", "--check", MESSY, "").status == EXIT_BAD_LINES


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["canon", "--profile", "nope", "x"], "unknown profile 'nope'"),
        (["canon", "--rules", "+nope", "x"], "unknown rule '+nope'"),
        (["canon", "-i", "/nonexistent/urls.txt"], "cannot read /nonexistent/urls.txt"),
        (["canon", "-i", "-", "http://a/"], "not both"),
        (["canon", "-o", "/nonexistent/dir/out", "x"], "cannot write"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    urlsan: RunUrlsan, argv: list[str], message: str
) -> None:
    r = urlsan(*argv)
    assert r.status == EXIT_USAGE
    assert message in r.err
    assert r.err.count("\n") == 1 and "Traceback" not in r.err


def test_argparse_mistakes_exit_2(urlsan: RunUrlsan) -> None:
    assert urlsan("canon", "--json", "--diff", "x").status == EXIT_USAGE
    assert urlsan("canon", "--jobs", "-1", "x").status == EXIT_USAGE
    assert urlsan("frobnicate").status == EXIT_USAGE
    assert urlsan("--help").status == EXIT_OK


def test_inputs_cannot_drive_the_terminal(urlsan: RunUrlsan) -> None:
    evil = "http://a/\x1b]0;pwned\x07x"
    for mode in ("--diff", "--check"):
        r = urlsan("canon", mode, evil)
        assert b"\x1b" not in r.out and b"\x07" not in r.out
        assert b"\\x1b]0;pwned\\x07x" in r.out


def test_check_dedupe_json_names_the_first(urlsan: RunUrlsan) -> None:
    r = urlsan("canon", "--check", "--dedupe", "--json", "http://a/", "HTTP://a/")
    assert r.status == EXIT_OFFENDERS
    (dup,) = (json.loads(x) for x in r.lines)
    assert (dup["input"], dup["duplicate_of"]) == ("HTTP://a/", 1)


def test_on_error_fail_stops_at_the_first_bad_line(urlsan: RunUrlsan) -> None:
    stdin = b"HTTP://A/\nhttp://b/\n\xff\nhttp://c/\n\n"
    r = urlsan("canon", "--on-error", "fail", stdin=stdin)
    assert (r.status, r.out) == (EXIT_BAD_LINES, b"http://a/\nhttp://b/\n")
    assert r.err.splitlines() == [
        "urlsan canon: <stdin>:3: not UTF-8 (byte 0xff at offset 0)",
        "urlsan canon: 3 lines: stopped at bad line 3",
    ]
    dedupe = urlsan("canon", "--on-error", "fail", "--dedupe", "--json", stdin=stdin)
    assert (dedupe.status, len(dedupe.lines)) == (EXIT_BAD_LINES, 2)
    assert urlsan("canon", "--on-error", "fail", "http://a/").status == EXIT_OK


def test_help_and_readme_agree_on_on_error(urlsan: RunUrlsan) -> None:
    help_text = urlsan("canon", "--help").out.decode()
    assert "{pass,skip,fail}" in help_text
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "--on-error pass|skip|fail" in readme


def test_null_separated_lines_in_and_out(urlsan: RunUrlsan) -> None:
    stdin = b"HTTP://A/%7e\0http://b/x\ny\0\0http://c/"  # no NUL after the last line
    r = urlsan("canon", "-z", stdin=stdin)
    assert r.out == b"http://a/~\0http://b/x%0Ay\0\0http://c/\0"
    assert r.status == EXIT_BAD_LINES and "<stdin>:3: empty" in r.err
    args = urlsan("canon", "--null", "HTTP://A/", "http://b/")
    assert args.out == b"http://a/\0http://b/\0"
    as_json = urlsan("canon", "-z", "--json", stdin=b"http://a/\0")
    assert json.loads(as_json.out.rstrip(b"\0"))["url"] == "http://a/"


def test_bad_line_reports_are_capped(urlsan: RunUrlsan) -> None:
    r = urlsan("canon", stdin=b"\xff\n" * 500 + b"http://a/\n")
    errors = r.err.splitlines()
    assert len(errors) == 22
    assert errors[19] == "urlsan canon: <stdin>:20: not UTF-8 (byte 0xff at offset 0)"
    assert errors[20] == "urlsan canon: more than 20 bad lines: counting them"
    assert errors[21] == "urlsan canon: 501 lines: 500 bad lines passed through"
    assert r.out.count(b"\n") == 501 and r.status == EXIT_BAD_LINES
    quiet = urlsan("canon", "-q", stdin=b"\xff\n" * 30)
    assert quiet.err.splitlines()[-1] == "urlsan canon: 30 bad lines"


def test_check_json_offenders_carry_their_line(urlsan: RunUrlsan) -> None:
    r = urlsan("canon", "--check", "--json", "http://a/", MESSY, "http://b/", "HTTP://b/")
    assert [(o["line"], o["input"]) for o in map(json.loads, r.lines)] == [
        (2, MESSY),
        (4, "HTTP://b/"),
    ]
    dup = urlsan("canon", "--check", "--json", "--dedupe", "http://a/", "HTTP://a/")
    assert [(o["line"], o["duplicate_of"]) for o in map(json.loads, dup.lines)] == [(2, 1)]


def test_parameter_options(urlsan: RunUrlsan) -> None:
    url = "http://example.com/?utm_source=x&ref=1&src=2&id=3"
    r = urlsan("canon", "--drop-params", "utm_*", "--drop-params", "example.com:ref,src", url)
    assert r.lines == ["http://example.com/?id=3"]
    kept = urlsan("canon", "--profile", "crawler", "--keep-params", "UTM_SOURCE", url)
    assert "utm_source=x" in kept.lines[0]
    bad = urlsan("canon", "--drop-params", "a:b:c", url)
    assert bad.status == EXIT_USAGE and bad.err.count("\n") == 1


def _urlsan_process(*argv: str, **options: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen([*URLSAN, "canon", *argv], **options)  # type: ignore[call-overload]


@pytest.mark.parametrize("mode", [[], ["--line-buffered"], ["--dedupe"], ["--jobs", "2"]])
def test_each_line_comes_out_as_soon_as_it_goes_in(mode: list[str]) -> None:
    """`tail -f access.log | urlsan canon`: the writer keeps the pipe open, and each line is
    out within seconds (nothing was written before 2,048 lines or the end of the input)."""
    proc = _urlsan_process(*mode, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for i in range(3):
            proc.stdin.write(b"HTTP://A/%d\n" % i)
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], 20)
            assert ready, f"line {i + 1} did not come out"
            assert proc.stdout.readline() == b"http://a/%d\n" % i
        proc.stdin.close()
        assert proc.wait(timeout=30) == EXIT_OK
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("lines", [1, 100_000])
@pytest.mark.parametrize("to", ["stdout", "-o"])
def test_a_write_error_is_one_line_and_its_own_status(tmp_path: Path, lines: int, to: str) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text("HTTP://a/%7e\n" * lines)
    with open("/dev/full", "wb") as full:
        output = ["-o", "/dev/full"] if to == "-o" else []
        run = subprocess.run(
            [*URLSAN, "canon", "-i", str(urls), *output],
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    err = run.stderr.decode()
    assert run.returncode == EXIT_WRITE_ERROR, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "cannot write" in err and "No space left on device" in err


def test_a_reader_that_goes_away_is_status_141(tmp_path: Path) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text("HTTP://a/%7e\n" * 200_000)
    proc = _urlsan_process("-i", str(urls), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline() == b"http://a/~\n"
    proc.stdout.close()
    assert proc.wait(timeout=60) == EXIT_BROKEN_PIPE
    assert proc.stderr.read() == b""


def test_check_with_backends(urlsan: RunUrlsan) -> None:
    # Canonical, yet Tomcat strips ";" before it resolves "..": an offender for --check.
    r = urlsan(
        "canon",
        "--check",
        "--backends",
        "tomcat",
        "http://h/a/..;/b",
        "http://h/ok",
        "http://h/%7e",
    )
    assert r.status == EXIT_OFFENDERS
    assert len(r.lines) == 2
    assert "tomcat routes it as '/b' where RFC 3986 reads '/a/..;/b'" in r.lines[0]
    assert r.lines[1].endswith("http://h/%7e -> http://h/~")
    r = urlsan("canon", "--json", "--backends", "nginx,tomcat", "http://h/a/..%2f/b")
    found = json.loads(r.lines[0])["findings"]
    assert [f["detail"].split()[0] for f in found if f["rule"] == "backend-divergence"] == [
        "nginx"
    ]  # Tomcat refuses %2F: it answers 400 itself, reading nothing


@pytest.mark.parametrize(
    "args, message",
    [
        (["--check", "--backends", "tomcta"], "--backends: unknown server 'tomcta'"),
        (["--backends", "tomcat"], "use it with --check, --json or --diff"),
    ],
)
def test_backends_usage_errors(urlsan: RunUrlsan, args: list[str], message: str) -> None:
    r = urlsan("canon", *args, "http://h/")
    assert r.status == EXIT_USAGE and message in r.err
