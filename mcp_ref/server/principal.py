"""Who is calling: the :class:`Principal` a handler sees as ``ctx.principal``, and the
:class:`AccessInfo` a token verifier vouches for (``ctx.auth``).

The server's roles and the transports name the caller with it; the policy extra
(:mod:`mcp_ref.extensions.policy`) asks ``authorize`` about it.  It lives here, below both, so a
server that uses no policy never loads one.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any
from urllib.parse import quote


@dataclass(frozen=True)
class AccessInfo:
    """Who is calling, as the verifier vouches: ``ctx.auth`` in a handler.

    ``audience`` lists the resources the token was issued for (RFC 8707); ``expires_at`` is a
    ``time.time()`` value or None; ``claims`` are the token's claims as the verifier read them (a
    JWT's payload, an introspection answer), for policies that need more (``ctx.principal.claims``).
    """

    client_id: str
    subject: str | None = None
    scopes: tuple[str, ...] = ()
    expires_at: float | None = None
    audience: tuple[str, ...] = ()
    claims: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def principal(self) -> tuple[str, str | None]:
        """The client and the user it acts for (to store or compare: :func:`principal_id`)."""
        return self.client_id, self.subject


@dataclass(frozen=True)
class Principal:
    """Who is calling: ``ctx.principal`` in a handler, and what ``authorize`` is asked about.

    ``id`` is stable for as long as the caller is the same: ``oauth:<client id>:<subject>`` when the
    request carried a verified token, else the HTTP session (``http-session:<id>``), else the
    stdio process or other connection (``stdio``, ``connection-<n>``), else, for a stateless HTTP
    request with no token, the peer's address (``http-client:<address>``: behind a proxy all its
    clients share one, so authenticate them to tell them apart).  ``scopes`` and ``claims`` come
    from the token (empty without one); ``auth`` is the verifier's whole answer.  ``client`` is who
    the caller is beyond one session when no token names it (an HTTP session's
    ``http-client:<address>``; None elsewhere): what its per-caller limits count against
    (:attr:`limit_id`).
    """

    id: str
    scopes: frozenset[str] = frozenset()
    claims: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)
    auth: AccessInfo | None = field(default=None, compare=False, hash=False, repr=False)
    client: str | None = field(default=None, compare=False, hash=False, repr=False)

    @property
    def authenticated(self) -> bool:
        """True when the request carried a verified token."""
        return self.auth is not None

    @cached_property
    def verdict_key(self) -> Hashable:
        """Everything about this caller an ``authorize(principal, action, name)`` can read, as one
        hashable value: its ``id``, ``scopes``, ``claims`` and the rest of ``auth`` (an expiry, an
        audience).  Principals with equal keys are one caller to a policy, so a verdict about one
        holds for the other: caches of verdicts are keyed by it.  The ``id`` alone is not enough:
        two sessions of one user share it, yet their tokens may grant different scopes or claims.

        Claims are compared by their JSON text (keys sorted; a value JSON cannot write, by its
        ``repr``), ``auth`` by its ``repr`` (an :class:`AccessInfo`'s leaves its claims out).  Claims
        no JSON text can be made of give this principal a key of its own.
        """
        try:
            claims: object = json.dumps(self.claims, sort_keys=True, default=repr)
        except (TypeError, ValueError):  # keys of mixed types, a cycle
            claims = object()  # equal to no other: its verdicts are its own
        return (self.id, self.scopes, claims, repr(self.auth))

    @property
    def limit_id(self) -> str:
        """Whom this caller's per-caller limits count against: the server's and its items' rate
        limits, ``max_subscribed_resources`` and a task store's ``max_tasks_per_principal``.

        :attr:`id` when a token names the caller; else the client beyond the session
        (:attr:`client`), when the transport knows one.  A new HTTP session is free to open, so
        limits kept per session would start afresh with each, and 2025-11-25 server/tools §Security
        Considerations says servers MUST "Rate limit tool invocations" (docs/policy.md: "how often
        each caller may call").  The session's :attr:`id` still names the caller everywhere else
        (the tasks it owns, ``ctx.principal.id``).
        """
        return self.client if self.auth is None and self.client is not None else self.id

    def has_scopes(self, scopes: Iterable[str]) -> bool:
        """True when every one of ``scopes`` was granted."""
        return all(scope in self.scopes for scope in scopes)

    @classmethod
    def of(cls, auth: AccessInfo | None, peer: str, client: str | None = None) -> Principal:
        """The principal of a connection: its token's, or its transport's ``peer`` id (and
        ``client``, who it is beyond the session: :attr:`limit_id`)."""
        # the same few peers again and again (a stateless HTTP POST asks each time)
        if auth is None:
            return _of_peer(peer, client) if cls is Principal else cls(peer, client=client)
        claims = getattr(auth, "claims", None) or {}
        return cls(principal_id(auth), frozenset(auth.scopes), claims, auth)


def principal_of(connection: Any) -> Principal:
    """The principal of a server connection (``ServerConnection.principal``): its token's, else its
    transport's ``peer`` id (``connection-<serial>`` without one) and ``client``."""
    peer = connection.peer or f"connection-{connection.serial}"
    return Principal.of(connection.auth, peer, connection.client)


def principal_id(auth: Any) -> str:
    """The one identity of the caller ``auth`` (an :class:`AccessInfo`) names, wherever it is
    stored, sealed or compared: ``oauth:<client>[:<subject>]`` (:attr:`Principal.id`), a string a
    JSON round trip keeps (a tuple came back as a list: issue 32); each part percent-encoded, so a
    ":" in one cannot make two callers one."""
    client = quote(auth.client_id, safe="")
    if auth.subject is None:
        return f"oauth:{client}"
    return f"oauth:{client}:{quote(auth.subject, safe='@')}"


def principal_id_of(auth: Any) -> str | None:
    """:func:`principal_id` of ``auth``, None without a verified token."""
    return None if auth is None else principal_id(auth)


# bounded: past it the least recently seen peer is made again when it returns
@lru_cache(maxsize=256)
def _of_peer(peer: str, client: str | None) -> Principal:
    return Principal(peer, client=client)
