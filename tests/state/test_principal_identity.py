"""One canonical, JSON-safe identity for a principal (issue 32, item 1): every record the shared
state keeps with a principal in it — a session's record, a forwarded 2024-11-05 POST on the bus, a
task record, an MRTR ``requestState``, a held set's key — is the same after a JSON round trip
(through Redis, a bus message, a sealed token), and its owner still matches the caller it was made for (and
no other).  A tuple came back from JSON as a list and matched no one: a session made with a bearer
token was "not found" on every other worker.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from redis_fixture import redis_server, redis_url  # noqa: F401 - fixtures

from mcp_ref.oauth.resource import AccessInfo
from mcp_ref.server.principal import Principal, principal_id, principal_id_of

#: A caller with a user, one without, and two whose parts would run together if not encoded.
ALICE = AccessInfo("client:with:colons", "alice", ("read",))
SERVICE = AccessInfo("client:with:colons", None)
TRICKY = (AccessInfo("a:b", "c"), AccessInfo("a", "b:c"))


def through_json(value):
    """``value`` as another process reads it back."""
    return json.loads(json.dumps(value))


def same_caller_again(auth: AccessInfo) -> AccessInfo:
    """The same caller on its next request: another AccessInfo, equal in what names it."""
    return AccessInfo(auth.client_id, auth.subject, auth.scopes)


def test_the_identity_is_a_string_that_survives_json_and_tells_callers_apart():
    for auth in (ALICE, SERVICE, *TRICKY):
        identity = principal_id(auth)
        assert isinstance(identity, str) and through_json(identity) == identity
        assert identity == Principal.of(auth, "peer").id
    assert principal_id_of(None) is None
    assert principal_id(TRICKY[0]) != principal_id(TRICKY[1])
    assert principal_id(ALICE) != principal_id(SERVICE)


def session_of(auth: AccessInfo | None, kind: str = "streamable"):
    """What ``record_state`` reads of a session: its principal, its kind, what it negotiated."""
    connection = SimpleNamespace(
        protocol_version="2025-11-25",
        client_capabilities={},
        client_info={"name": "t", "version": "1"},
        log_level=None,
        subscriptions={"memo://a"},
    )
    return SimpleNamespace(principal=auth, kind=kind, connection=connection)


@pytest.mark.parametrize("auth", [ALICE, SERVICE, None], ids=["user", "client", "no token"])
@pytest.mark.parametrize("kind", ["streamable", "legacy"])
def test_a_session_record_read_back_from_json_still_belongs_to_its_caller(auth, kind):
    from mcp_ref.http.server.shared import owned_by, record_state

    state = record_state(session_of(auth, kind), "w1")
    assert through_json(state) == state  # nothing in it that JSON changes (a tuple would)
    assert owned_by(through_json(state), None if auth is None else same_caller_again(auth))
    others = [other for other in (ALICE, SERVICE, None) if other is not auth]
    assert not any(owned_by(through_json(state), other) for other in others)
    # a 2024-11-05 POST forwarded to the stream's worker carries the record's principal on the bus
    message = {
        "session": "s",
        "kind": "legacy",
        "from": "w2",
        "data": "{}",
        "principal": state["principal"],
    }
    assert owned_by(through_json(message), auth)


@pytest.mark.parametrize("table", ["memory", "redis"])
def test_a_session_record_in_either_table_still_belongs_to_its_caller(table, request):
    """The memory table keeps a record as a shared one gives it back (through JSON), so one process
    compares as a deployment does."""
    from mcp_ref.http.server.sessions import MemorySessionTable
    from mcp_ref.http.server.shared import owned_by, record_state

    state_store = None
    if table == "memory":
        sessions = MemorySessionTable()
    else:
        from mcp_ref.state.redis import RedisState

        state_store = RedisState.from_url(request.getfixturevalue("redis_url"))
        sessions = state_store.session_table()
    try:
        sessions.add("s1", record_state(session_of(ALICE), "w1"))
        sessions.update("s1", {"principal_note": ("a", "tuple")})  # stored as JSON keeps it: a list
        record = sessions.get("s1")
        assert owned_by(record["state"], same_caller_again(ALICE)) and not owned_by(
            record["state"], SERVICE
        )
        assert record["state"]["principal_note"] == ["a", "tuple"]
    finally:
        if state_store is not None:
            state_store.close()


@pytest.mark.parametrize("records", ["memory", "redis"])
def test_a_task_record_read_back_still_belongs_to_its_caller(records, request):
    from mcp_ref.errors import InvalidParams
    from mcp_ref.extensions.tasks import TaskStore

    state_store = None
    if records == "memory":
        store = TaskStore()
    else:
        from mcp_ref.state.redis import RedisState

        state_store = RedisState.from_url(request.getfixturevalue("redis_url"))
        store = TaskStore(records=state_store.task_records())
    try:
        task = store.create(principal_id(ALICE), principal_id(ALICE))
        record = store.records.get(task.id)
        assert through_json(record) == record
        assert store.find(task.id, principal_id(same_caller_again(ALICE))).id == task.id
        with pytest.raises(InvalidParams):
            store.find(task.id, principal_id(SERVICE))
    finally:
        if state_store is not None:
            state_store.close()


def test_a_sealed_request_state_opens_for_its_caller_only():
    from mcp_ref.errors import InvalidParams
    from mcp_ref.server.input_required import Inputs, digest, open_state, seal_state
    from mcp_ref.signing import Keyring

    keyring, params = Keyring("secret"), {"name": "greet", "arguments": {}}
    token = seal_state(Inputs({"k": 1}, {"k"}), "tools/call", params, keyring, principal_id(ALICE))
    request_digest = digest("tools/call", params)
    opened = open_state(
        token, "tools/call", request_digest, keyring, principal_id(same_caller_again(ALICE))
    )
    assert opened == {"k": 1}
    with pytest.raises(InvalidParams):
        open_state(token, "tools/call", request_digest, keyring, principal_id(SERVICE))


def test_a_stream_holders_key_is_the_callers_identity():
    """``max_streams_per_client`` counts streams by this key in the shared held sets."""
    from mcp_ref.http.server.base import client_of

    key = client_of({"mcp_ref.oauth": ALICE, "REMOTE_ADDR": "10.0.0.1"})
    assert key == principal_id(same_caller_again(ALICE)) and through_json(key) == key
    assert client_of({"REMOTE_ADDR": "10.0.0.1"}) == "http-client:10.0.0.1"


def test_the_verdict_key_holds_everything_a_policy_can_read_of_the_caller():
    def caller(scopes=("read",), claims=None, expires_at=None) -> Principal:
        auth = AccessInfo("c", "alice", scopes, expires_at=expires_at, claims=claims or {})
        return Principal.of(auth, "")

    # one id (one user): yet scopes, claims or the token's expiry may judge two of its sessions apart
    key = caller().verdict_key
    assert caller(scopes=("read", "admin")).verdict_key != key
    assert caller(claims={"role": "admin"}).verdict_key != key
    assert caller(expires_at=1.0).verdict_key != key
    # the same caller again, on its next request (a new Principal, claims in another order): one key
    assert (
        caller(claims={"a": [1, {"b": 2}], "c": 3}).verdict_key
        == caller(claims={"c": 3, "a": [1, {"b": 2}]}).verdict_key
    )
    assert Principal.of(None, "stdio").verdict_key == Principal("stdio").verdict_key
    # claims JSON cannot write: a key of its own, equal to no other caller's
    odd = caller(claims={1: "x", "1": "y"})
    assert (
        odd.verdict_key == odd.verdict_key
        and odd.verdict_key != caller(claims={1: "x", "1": "y"}).verdict_key
    )
