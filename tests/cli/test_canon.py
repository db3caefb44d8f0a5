"""`urlsan canon`: inputs, output modes, bad lines, exit statuses."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from cli_harness import RunUrlsan
from urlsan.cli.status import EXIT_BAD_LINES, EXIT_OFFENDERS, EXIT_OK, EXIT_USAGE
from urlsan.core import Policy, canonicalize

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


def test_jobs_keep_order_and_match_one_process(urlsan: RunUrlsan, tmp_path: Path) -> None:
    # More than two chunks, so that the worker pool really starts; bad lines in between.
    lines = [
        f"HTTP://H{i % 7}.example/%7e{i}/./x" if i % 3 else f"http://h/{i}" for i in range(5000)
    ]
    lines[10] = ""
    lines[4500] = "http://a/b c"
    urls = tmp_path / "urls.txt"
    urls.write_text("\n".join(lines) + "\n")
    one = urlsan("canon", "-i", str(urls), "--profile", "strict")
    two = urlsan("canon", "-i", str(urls), "--profile", "strict", "--jobs", "2")
    assert one == two
    assert one.status == EXIT_BAD_LINES
    assert len(one.lines) == 5000
    assert one.lines[4] == "http://h4.example/~4/x"
    assert [x.split(":")[2] for x in one.err.splitlines()[:2]] == ["11", "4501"]
    policy = Policy.profile("strict")
    assert one.lines[4999] == canonicalize(lines[4999], policy).url


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
