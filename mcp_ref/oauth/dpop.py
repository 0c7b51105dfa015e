"""DPoP: tokens bound to a key the client holds (RFC 9449), for ``OAuth(dpop=True)``.

Every request to the token endpoint and, once the token is DPoP-bound, to the MCP server
carries a ``DPoP`` header: a JWT signed with the client's key (``typ: dpop+jwt``, the public
key in ``jwk``) naming the HTTP method (``htm``), the URL (``htu``), a unique ``jti``, ``iat``,
and for the MCP server the access token's hash (``ath``).  A server may ask for its nonce
(``use_dpop_nonce`` with a ``DPoP-Nonce`` header): the next proof carries it.

Needs the ``auth`` extra (PyJWT with cryptography), imported here only.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from urllib.parse import urlsplit

from .pkce import base64url

#: Origins whose latest nonce is remembered; the oldest is forgotten past it.
MAX_NONCES = 64


class _Nonces(dict):
    """The latest ``DPoP-Nonce`` of each origin (bounded: the oldest is forgotten)."""

    def __setitem__(self, origin: str, nonce: str) -> None:
        self.pop(origin, None)
        super().__setitem__(origin, nonce)
        while len(self) > MAX_NONCES:
            del self[next(iter(self))]


class DPoPKey:
    """A fresh P-256 key pair (ES256) and the proofs signed with it (RFC 9449 §4)."""

    algorithm = "ES256"

    def __init__(self):
        try:
            import jwt
            from cryptography.hazmat.primitives.asymmetric import ec
        except ImportError:
            raise ImportError(
                'DPoP needs the auth extra, PyJWT with cryptography: pip install "PyJWT[crypto]"'
            ) from None
        self._jwt = jwt  # PyJWT, which signs the proofs
        self._key = ec.generate_private_key(ec.SECP256R1())
        numbers = self._key.public_key().public_numbers()
        #: RFC 9449 §4.2: the public key, in the proof's header.
        self.jwk = {
            "kty": "EC",
            "crv": "P-256",
            "x": base64url(numbers.x.to_bytes(32, "big")),
            "y": base64url(numbers.y.to_bytes(32, "big")),
        }
        #: The latest nonce each origin asked for (RFC 9449 §8, §9).
        self.nonces: dict[str, str] = _Nonces()

    def proof(self, method: str, url: str, *, access_token: str | None = None) -> str:
        """A DPoP proof for one request: RFC 9449 §4.2 (``htu`` without query and fragment)."""
        parts = urlsplit(url)
        origin = f"{parts.scheme.lower()}://{parts.netloc.lower()}"
        claims = {
            "jti": secrets.token_urlsafe(16),
            "htm": method.upper(),
            "htu": f"{origin}{parts.path or '/'}",
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = base64url(hashlib.sha256(access_token.encode("ascii")).digest())
        nonce = self.nonces.get(origin)
        if nonce:
            claims["nonce"] = nonce
        return self._jwt.encode(
            claims,
            self._key,
            algorithm=self.algorithm,
            headers={"typ": "dpop+jwt", "jwk": self.jwk},
        )
