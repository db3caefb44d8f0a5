"""Signed-request detection."""

from __future__ import annotations

import pytest

from urlsan.addon.signed import detect_signature, may_carry_signature


@pytest.mark.parametrize(
    "names, authorization, expected",
    [
        (["X-Amz-Signature"], None, "aws-sigv4-query"),
        (["x-amz-credential", "x"], None, "aws-sigv4-query"),
        (["X-Goog-Signature"], None, "gcs-v4-query"),
        (["Signature", "Key-Pair-Id", "Expires"], None, "cloudfront"),
        (["Signature"], None, None),
        (["sv", "se", "sig"], None, "azure-sas"),
        (["sig"], None, None),
        ([], "AWS4-HMAC-SHA256 Credential=a", "aws4-hmac-sha256-header"),
        ([], "GOOG4-HMAC-SHA256 Credential=a", "goog4-hmac-sha256-header"),
        ([], "Bearer abc", None),
        (["q", "page"], None, None),
    ],
)
def test_detect_signature(
    names: list[str], authorization: str | None, expected: str | None
) -> None:
    assert detect_signature(names, authorization) == expected


@pytest.mark.parametrize(
    "target, expected",
    [
        (b"/a", False),
        (b"/sig/a", False),  # the path does not count
        (b"/a?q=1", False),
        (b"/a?X-Amz-Signature=1", True),
        (b"/a?x-amz-credential=1", True),
        (b"/a?X-Goog-Signature=1", True),
        (b"/a?Signature=1&Key-Pair-Id=2", True),
        (b"/a?sv=1&se=2&sig=3", True),
    ],
)
def test_may_carry_signature(target: bytes, expected: bool) -> None:
    assert may_carry_signature(target) is expected
