"""Who is told that a listing changed (mcp_ref.state.changes): with ``authorize``, only the callers
who may see the item that changed (spec_notes/policy.md, ``list_changed``).

The server runs in this process behind bearer tokens, served on 127.0.0.1 over real sockets; the
clients are real HTTP clients, in both eras (a handshake session's GET stream, a 2026-07-28 listen
stream).  The changes are made on the server object, from the test's thread.
"""

from __future__ import annotations

import threading

import pytest
from conftest import WAIT
from http_fixtures import serve  # noqa: F401 - a fixture
from policy_tokens import bearer

from mcp_ref import Client, Server
from mcp_ref.oauth.resource import AccessInfo, ProtectedResource

ERAS = ("handshake", "modern")
#: One user, two tokens: the same principal id (``oauth:scopes-client:alice``), told apart by their
#: scopes, or by their claims alone.  Token -> (scopes, claims).
TOKENS = {
    "scopes": {"alice-admin": (("admin",), {}), "alice-plain": ((), {})},
    "claims": {"alice-admin": ((), {"role": "admin"}), "alice-plain": ((), {"role": "staff"})},
}


class Tokens:
    """A verifier knowing alice's two tokens (``users``: one of :data:`TOKENS`)."""

    def __init__(self, users: dict) -> None:
        self.users = users
        self.audience: tuple[str, ...] = ()

    def verify(self, token: str) -> AccessInfo | None:
        if token not in self.users:
            return None
        scopes, claims = self.users[token]
        return AccessInfo("scopes-client", "alice", scopes, audience=self.audience, claims=claims)


def is_admin(principal) -> bool:
    """The admin scope, or an admin role claim."""
    return "admin" in principal.scopes or principal.claims.get("role") == "admin"


def authorize(principal, action, name) -> bool:
    """Tools named ``secret...`` are for admins only."""
    return not name.startswith("secret") or is_admin(principal)


class AskedInOrder(Server):
    """A Server that lists its connections admin first, or the other first (``admin_first``): which
    of alice's sessions is asked about first is the test's choice, not a set's."""

    admin_first = True

    def connections(self) -> list:
        return sorted(
            super().connections(),
            key=lambda connection: is_admin(connection.principal) != self.admin_first,
        )


class Heard:
    """The list changes one client was told of, in order."""

    def __init__(self) -> None:
        self.kinds: list[str] = []
        self.cond = threading.Condition()

    def __call__(self, kind: str) -> None:
        with self.cond:
            self.kinds.append(kind)
            self.cond.notify_all()

    def wait_for(self, kind: str) -> list[str]:
        """What was heard once ``kind`` has been (at most WAIT)."""
        with self.cond:
            assert self.cond.wait_for(lambda: kind in self.kinds, WAIT), self.kinds
            return list(self.kinds)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("differing", TOKENS)
@pytest.mark.parametrize("admin_first", [True, False], ids=["admin-first", "plain-first"])
def test_two_sessions_of_one_user_are_told_by_what_each_may_see(serve, era, differing, admin_first):
    server = AskedInOrder("scopes", authorize=authorize)
    server.admin_first = admin_first  # handshake sessions: asked in this order
    server.add_tool(lambda: "hi", name="hello")
    server.add_prompt(lambda: "hi", name="greet")  # prompts list changes: the marker below
    tokens = Tokens(TOKENS[differing])
    served = serve(app=server.wsgi_app(auth=ProtectedResource(tokens, ["https://as.example"])))
    tokens.audience = (served.mcp,)
    # 2026-07-28 listen streams are asked in the order they were opened: the same order
    order = sorted(TOKENS[differing], reverse=not admin_first)
    heard = {token: Heard() for token in order}
    clients = {}
    try:
        for token in order:
            clients[token] = Client.http(
                served.mcp, era=era, auth=bearer(token), timeout=WAIT, on_list_changed=heard[token]
            )
            assert clients[token].call_tool("hello").content[0].text == "hi"
        server.add_tool(lambda: "x", name="secret_x")  # only alice-admin may see it
        server.add_prompt(lambda: "y", name="public_y")  # everyone: after it, on the same stream
        assert heard["alice-admin"].wait_for("prompts") == ["tools", "prompts"]  # not lost
        assert heard["alice-plain"].wait_for("prompts") == ["prompts"]  # nothing hidden leaks
        assert "secret_x" in {tool.name for tool in clients["alice-admin"].list_tools()}
        assert "secret_x" not in {tool.name for tool in clients["alice-plain"].list_tools()}
    finally:
        for client in clients.values():
            client.close()
