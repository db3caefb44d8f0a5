"""Signed-request detection."""

from __future__ import annotations

import pytest
from urlsan.addon.signed import detect_signature


@pytest.mark.parametrize(
    "names, headers, expected",
    [
        (["X-Amz-Signature"], {}, "aws-sigv4-query"),
        (["x-amz-credential", "x"], {}, "aws-sigv4-query"),
        (["X-Goog-Signature"], {}, "gcs-v4-query"),
        (["Signature", "Key-Pair-Id", "Expires"], {}, "cloudfront"),
        (["Signature"], {}, None),
        (["sv", "se", "sig"], {}, "azure-sas"),
        (["sig"], {}, None),
        ([], {"authorization": "AWS4-HMAC-SHA256 Credential=a"}, "aws4-hmac-sha256-header"),
        ([], {"authorization": "GOOG4-HMAC-SHA256 Credential=a"}, "goog4-hmac-sha256-header"),
        ([], {"authorization": "Bearer abc"}, None),
        (["q", "page"], {}, None),
    ],
)
def test_detect_signature(names: list[str], headers: dict[str, str], expected: str | None) -> None:
    assert detect_signature(names, headers) == expected
