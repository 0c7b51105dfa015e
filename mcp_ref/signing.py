"""The deployment's keys: HMAC-SHA256 tags on what a server hands a client to give back.

Pagination cursors and the 2026-07-28 MRTR ``requestState`` both travel
through the client and come back; both must be accepted by every worker of
the same deployment and refused when changed.  A :class:`Keyring` holds the
keys: the first signs, every one verifies, so a deployment rotates a secret
(``"new,old"``) without refusing what it already handed out.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Sequence

__all__ = ["Keyring"]


class Keyring:
    """HMAC-SHA256 keys from ``secret``: bytes, a string (``"new,old"`` rotates), or a sequence of
    them.  None draws one random 32-byte key, valid for this process only (``configured`` is False)."""

    __slots__ = ("configured", "_keys")

    def __init__(self, secret: bytes | str | Sequence[bytes | str] | None = None):
        #: True when the secret was given (shared by a deployment), False when drawn at random.
        self.configured = secret is not None
        self._keys = _keys(secret) if secret is not None else (secrets.token_bytes(32),)

    def tag(self, payload: bytes, size: int = 16) -> bytes:
        """The first ``size`` bytes of the HMAC of ``payload`` under the signing key."""
        return hmac.new(self._keys[0], payload, hashlib.sha256).digest()[:size]

    def verify(self, payload: bytes, tag: bytes) -> bool:
        """True when ``tag`` is the HMAC of ``payload`` under any key (compared in constant time)."""
        return bool(tag) and any(
            hmac.compare_digest(tag, hmac.new(key, payload, hashlib.sha256).digest()[: len(tag)])
            for key in self._keys
        )


def _keys(secret: bytes | str | Sequence[bytes | str]) -> tuple[bytes, ...]:
    """The signing keys of ``secret``: the first signs, all verify."""
    if isinstance(secret, str):
        parts: list = [part.strip() for part in secret.split(",")]
    elif isinstance(secret, (bytes, bytearray)):
        parts = [bytes(secret)]
    else:
        parts = list(secret)
    keys = tuple(part.encode("utf-8") if isinstance(part, str) else bytes(part) for part in parts)
    if not keys or not all(keys):
        raise ValueError("a secret must be non-empty (bytes, a string, or a list of them)")
    return keys


def b64url(data: bytes) -> str:
    """``data`` in unpadded base64url (RFC 4648 §5), as a cursor or a ``requestState`` carries it."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64url(text: str) -> bytes:
    """The bytes of unpadded base64url ``text``; ``binascii.Error`` when it is not base64url."""
    return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
