"""The policy tests' token verifier and bearer auth, shared by the policy, hardening and admission
tests (a module of its own: tests/docs has a test_policy.py too, so importing them from a test
module named test_policy depended on the order the directories are on sys.path)."""

from __future__ import annotations

from mcp_ref.oauth.resource import AccessInfo


class Tokens:
    """A token verifier for the tests: two users of one client, one an admin."""

    def __init__(self):
        self.audience = ()

    def verify(self, token: str):
        users = {
            "alice-token": ("alice", ("admin",), {"team": "ops"}),
            "bob-token": ("bob", (), {"team": "sales"}),
        }
        if token not in users:
            return None
        subject, scopes, claims = users[token]
        return AccessInfo("policy-client", subject, scopes, audience=self.audience, claims=claims)


def bearer(token: str):
    def add(request):
        request.headers["Authorization"] = f"Bearer {token}"
        return request

    return add
