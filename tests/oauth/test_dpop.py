"""DPoP proofs (RFC 9449 §4.2) from :class:`mcp_ref.oauth.dpop.DPoPKey`: signed with the key whose
public half is in the header, ``htu`` without query and fragment, ``ath`` and ``nonce`` when due."""

from __future__ import annotations

import base64
import hashlib

import pytest

jwt = pytest.importorskip("jwt")
pytest.importorskip("cryptography")


def test_a_proof_verifies_with_its_own_header_key_and_names_the_request():
    from mcp_ref.oauth.dpop import DPoPKey  # here, after the skips: it needs the auth extra

    key = DPoPKey()
    key.nonces["https://rs.example"] = "n-1"
    proof = key.proof("post", "https://RS.example/mcp?x=1#frag", access_token="token-1")
    header = jwt.get_unverified_header(proof)
    assert header["typ"] == "dpop+jwt" and header["alg"] == "ES256" and header["jwk"] == key.jwk
    public = jwt.PyJWK(header["jwk"], algorithm="ES256").key
    claims = jwt.decode(proof, public, algorithms=["ES256"])
    assert claims["htm"] == "POST" and claims["htu"] == "https://rs.example/mcp"
    digest = base64.urlsafe_b64encode(hashlib.sha256(b"token-1").digest()).rstrip(b"=").decode()
    assert claims["ath"] == digest and claims["nonce"] == "n-1"
    assert "ath" not in jwt.decode(
        key.proof("GET", "https://rs.example/"), public, algorithms=["ES256"]
    )
