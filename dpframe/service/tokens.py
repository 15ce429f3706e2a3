"""Analysts' tokens: random 256-bit strings, stored by the curator only as their SHA-256, compared in constant time.

Standard library only, so that ``dpframe token`` works without the server's extras.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping

__all__ = ["hash_token", "matching_name", "new_token"]


def new_token() -> str:
    """A new random token: 32 bytes (256 bits) from the operating system's secure source, URL-safe base64.

    >>> len(new_token()), new_token() != new_token()
    (43, True)
    """
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """The hex SHA-256 of a token, as a config's ``token_sha256`` holds it.

    A fast hash is enough: a token is 256 random bits, so there is no dictionary to try against a leaked hash.

    >>> hash_token("abc")[:16]
    'ba7816bf8f01cfea'
    """
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def matching_name(hashes: Mapping[str, str], token: str) -> str | None:
    """The name whose hash (``{name: token_sha256}``) is the token's, or None.

    Every hash is compared, in constant time and without an early exit, so the time does not tell which
    name, or how much of a hash, a guess came close to.

    >>> hashes = {"alice": hash_token("s3cret"), "bob": hash_token("other")}
    >>> matching_name(hashes, "s3cret"), matching_name(hashes, "guess")
    ('alice', None)
    """
    digest = hash_token(token).encode("ascii")
    found = None
    for name, expected in hashes.items():
        if hmac.compare_digest(digest, expected.encode("ascii")):
            found = name
    return found
