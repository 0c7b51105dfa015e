"""The enterprise-managed authorization exchange (:class:`~mcp_ref.oauth.assertions.IdJagExchange`)
against a real identity provider endpoint on 127.0.0.1: what it sends, and the bound on what it
reads back."""

from __future__ import annotations

import json
from types import SimpleNamespace
from urllib.parse import parse_qs

import pytest
from http_fixtures import serve  # noqa: F401 - a fixture

from mcp_ref.oauth.assertions import ID_JAG, IdJagExchange
from mcp_ref.oauth.discovery import MAX_TOKEN_RESPONSE_BYTES
from mcp_ref.oauth.errors import TokenError

AUTHORIZATION_SERVER = SimpleNamespace(issuer="https://as.example")


def identity_provider(body: bytes, forms: list[dict]):
    """A token endpoint that keeps each form it is sent and answers ``body`` (JSON)."""

    def app(environ, start_response):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        forms.append(parse_qs(environ["wsgi.input"].read(length).decode()))
        start_response("200 OK", [("Content-Type", "application/json")])
        return [body]

    return app


def test_the_exchange_sends_the_id_token_and_returns_the_id_jag(serve):
    forms: list[dict] = []
    answer = {"issued_token_type": ID_JAG, "access_token": "the-id-jag", "token_type": "N_A"}
    idp = serve(app=identity_provider(json.dumps(answer).encode(), forms))
    exchange = IdJagExchange(idp.url + "/token", "the-id-token", client_id="me", timeout=10)
    assert exchange(AUTHORIZATION_SERVER, "https://mcp.example/mcp") == "the-id-jag"
    [form] = forms
    assert form["subject_token"] == ["the-id-token"]
    assert form["audience"] == ["https://as.example"]
    assert form["resource"] == ["https://mcp.example/mcp"]


def test_an_answer_past_the_bound_is_refused_without_being_read_whole(serve):
    # a valid JSON object, one byte a token answer may not have: refused, not parsed
    padding = "x" * MAX_TOKEN_RESPONSE_BYTES
    answer = {"issued_token_type": ID_JAG, "access_token": "the-id-jag", "padding": padding}
    idp = serve(app=identity_provider(json.dumps(answer).encode(), []))
    exchange = IdJagExchange(idp.url + "/token", "the-id-token", client_id="me", timeout=10)
    with pytest.raises(TokenError, match="without a JSON object"):
        exchange(AUTHORIZATION_SERVER, "https://mcp.example/mcp")


def test_a_failure_names_the_identity_provider_without_its_credentials(serve):
    """A token endpoint URL may carry a credential (userinfo, a key in the query): a TokenError
    names the endpoint without them (``shown``)."""

    def refusing(environ, start_response):
        start_response("500 Internal Server Error", [("Content-Type", "text/plain")])
        return [b"down"]

    idp = serve(app=refusing)
    endpoint = idp.url.replace("http://", "http://svc:PASSWORD-XYZ@") + "/token?key=SECRET-KEY"
    exchange = IdJagExchange(endpoint, "the-id-token", client_id="me", timeout=10)
    with pytest.raises(TokenError) as caught:
        exchange(AUTHORIZATION_SERVER, "https://mcp.example/mcp")
    assert "http://***@127.0.0.1" in str(caught.value) and "/token?..." in str(caught.value)
    assert "PASSWORD-XYZ" not in str(caught.value) and "SECRET-KEY" not in str(caught.value)
