"""Proof Key for Code Exchange (RFC 7636), with the S256 method, the only one MCP allows.

2025-11-25 basic/authorization §Authorization Code Protection: "MCP clients MUST implement PKCE
according to OAuth 2.1 Section 7.5.2 and MUST use the S256 code challenge method when technically
capable"; an authorization server that does not advertise S256 is refused by the client.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets

#: RFC 7636 §4.1: 43 to 128 characters of [A-Z] / [a-z] / [0-9] / "-" / "." / "_" / "~".
_VERIFIER = re.compile(r"[A-Za-z0-9\-._~]{43,128}")


def new_verifier() -> str:
    """A fresh code verifier: 32 random bytes, base64url without padding (43 characters)."""
    return secrets.token_urlsafe(32)


def base64url(data: bytes) -> str:
    """Base64url without padding (RFC 7636 Appendix A; RFC 7515 §2, which DPoP proofs use too)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def challenge(verifier: str) -> str:
    """The S256 code challenge of ``verifier``: BASE64URL(SHA256(ASCII(verifier))), no padding."""
    return base64url(hashlib.sha256(verifier.encode("ascii")).digest())


def verifies(verifier: object, expected_challenge: str) -> bool:
    """True when ``verifier`` is well formed and its S256 challenge is ``expected_challenge`` (constant time)."""
    if not isinstance(verifier, str) or not _VERIFIER.fullmatch(verifier):
        return False
    return hmac.compare_digest(challenge(verifier), expected_challenge)
