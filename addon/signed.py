"""Signed-request detection: requests whose signature covers the request-target.

Any byte change to a signed target (even an equivalent one, like ``%7e`` → ``~``) breaks the
signature, so by default these requests are only audited.  The signature may sit in the query
(presigned URLs) or in the ``Authorization`` header (AWS Signature Version 4, GCS HMAC).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple


class Signature(NamedTuple):
    """One way a request can be signed: all of ``params`` present in the query (any case)."""

    name: str
    params: frozenset[str]


# Parameter names compared case-insensitively: a false positive only costs a skipped rewrite.
SIGNATURES: tuple[Signature, ...] = (
    # https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html
    Signature("aws-sigv4-query", frozenset({"x-amz-signature"})),
    Signature("aws-sigv4-query", frozenset({"x-amz-credential"})),
    # https://cloud.google.com/storage/docs/access-control/signed-urls
    Signature("gcs-v4-query", frozenset({"x-goog-signature"})),
    # https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/private-content-signed-urls.html
    Signature("cloudfront", frozenset({"signature", "key-pair-id"})),
    # https://learn.microsoft.com/en-us/rest/api/storageservices/create-service-sas
    Signature("azure-sas", frozenset({"sig", "se"})),
)

# Authorization schemes whose signature covers the canonical URI and query.
SIGNED_AUTHORIZATION: tuple[str, ...] = ("aws4-hmac-sha256", "goog4-hmac-sha256")

# Every query signature above has a parameter name containing one of these (any case): a cheap
# pre-check on the raw target that saves parsing the query of nearly every request.  A name that
# is percent-encoded to dodge it only gets its own signature broken by a rewrite.
_QUERY_HINTS: tuple[bytes, ...] = (b"sig", b"x-amz-", b"x-goog-")


def may_carry_signature(target: bytes) -> bool:
    """False when ``target`` certainly has no signature parameter in its query."""
    query_at = target.find(b"?")
    if query_at < 0:
        return False
    query = target[query_at:].lower()
    # Unrolled _QUERY_HINTS: this runs for every request with a query.  find, not `in`:
    # core.surt._ia says why.
    return query.find(b"sig") >= 0 or query.find(b"x-amz-") >= 0 or query.find(b"x-goog-") >= 0


def detect_signature(query_names: Iterable[str], authorization: str | None) -> str | None:
    """The name of the signature scheme that covers this request's target, or ``None``.

    ``authorization`` is the request's Authorization header, if any.
    """
    names = {n.lower() for n in query_names}
    for sig in SIGNATURES:
        if sig.params <= names:
            return sig.name
    authorization = (authorization or "").lstrip().lower()
    for scheme in SIGNED_AUTHORIZATION:
        if authorization.startswith(scheme):
            return f"{scheme}-header"
    return None
