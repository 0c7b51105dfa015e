"""The era probe's answers other than a modern server's, and the handshake instead.

2026-07-28 basic/versioning §Backward Compatibility: a client for both eras probes with
``server/discover`` (:func:`mcp_ref.client.connection.probe`).  "A recognized modern JSON-RPC
error ... identifies a modern server"; "any other error, or does not respond within a reasonable
timeout: the server is legacy" (basic/transports/stdio), and the client goes on with
``initialize`` (:func:`initialize_instead`).  Loaded when a probe gets any other answer than a
modern server's result in a version both speak.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn, Protocol

from ..errors import (
    HeaderMismatchError,
    McpError,
    MCPRefError,
    MissingRequiredClientCapabilityError,
    RequestTimeout,
    UnsupportedProtocolVersionError,
)
from ..lifecycle import MODERN_VERSIONS, SUPPORTED_VERSIONS

if TYPE_CHECKING:
    from .interfaces import ClientSettings

log = logging.getLogger(__name__)


#: Answers to the probe raised as they are, never taken for a legacy server's: the errors this
#: revision defines for a modern server's refusal, -32020 and -32021 (basic/versioning §Backward
#: Compatibility: "a recognized modern JSON-RPC error ... identifies a modern server";
#: UnsupportedProtocolVersionError, -32022, is retried first).  Any other code means a legacy
#: server (stdio §Backward Compatibility: "The fallback MUST NOT be keyed to one specific error
#: code"), mcp_ref's own -31005 too.
PROBE_REFUSALS = (HeaderMismatchError, MissingRequiredClientCapabilityError)


class LegacyServer(MCPRefError):
    """The probe found a handshake-era server (internal: the connection falls back to
    ``initialize``, never raising it); its argument: the handshake revision the server offered,
    or None."""

    #: True when the probe went unanswered within its bound (:class:`ProbeUnanswered`).
    silent = False


class ProbeUnanswered(LegacyServer):
    """No answer to the probe within its bound: a handshake-era server, or a modern one slow to
    start (internal)."""

    silent = True


def judge_refusal(error: McpError | RequestTimeout, bounded: float | None) -> NoReturn:
    """Raise what an error answer to the probe, or no answer, means: a modern server's refusal
    (:data:`PROBE_REFUSALS`) raised as it is; any other error a :class:`LegacyServer`; no answer
    within ``bounded`` (stream transports) a :class:`ProbeUnanswered`, else the timeout."""
    if isinstance(error, RequestTimeout):
        if bounded is None:
            raise error
        raise ProbeUnanswered(None) from None
    # Over HTTP a 429 Too Many Requests is raised as well: RFC 6585 §4, "the user has sent too
    # many requests in a given amount of time", says nothing of the era (the HTTP fallback
    # inspects a 400's body, streamable-http §Backward Compatibility), and an initialize sent at
    # once would be one request too many.  Try again later.
    if isinstance(error, PROBE_REFUSALS) or (
        isinstance(error.data, dict) and error.data.get("httpStatus") == 429
    ):
        raise error
    raise LegacyServer(None) from error


def pick_version(offered: list, pinned: str | None) -> str | None:
    """The modern version to speak, given the versions a server offers: the pinned one if offered,
    else the newest modern version both sides know; None when there is none."""
    if pinned is not None:
        return pinned if pinned in offered else None
    return next((v for v in MODERN_VERSIONS if v in offered), None)


def choose_version(offered: list, pinned: str | None, *, retried: bool = False) -> str:
    """The modern version to speak of those a server offers (:func:`pick_version`).  With none, or
    ``retried`` (a -32022 to the probe's retry): a :class:`LegacyServer` naming the newest
    handshake revision we speak that the server offers (when none is pinned), else
    UnsupportedProtocolVersionError."""
    choice = None if retried else pick_version(offered, pinned)
    if choice is not None:
        return choice
    handshake = [v for v in SUPPORTED_VERSIONS if v in offered]
    if handshake and pinned is None:
        raise LegacyServer(handshake[0]) from None
    raise UnsupportedProtocolVersionError(
        f"the server speaks {', '.join(offered) or 'no listed version'}; "
        f"mcp_ref speaks {', '.join(MODERN_VERSIONS + SUPPORTED_VERSIONS)}"
    ) from None


class Falling(Protocol):
    """What :func:`initialize_instead` uses of a :class:`~mcp_ref.client.connection.ClientConnection`."""

    client: ClientSettings

    def initialize(
        self, timeout: float | None, *, refused: Callable[[], bool] | None = None
    ) -> None:
        """The handshake (``refused``: asked after a -32022 to ``initialize``)."""

    def discover(self, pinned: str | None, timeout: float | None, bounded: float | None) -> None:
        """The probe again: 2026-07-28 if the server speaks it, else LegacyServer."""


def initialize_instead(
    connection: Falling,
    legacy: Exception,
    modern_only: bool,
    wait: float | None,
    began: float,
) -> None:
    """``initialize``, after the probe found a handshake-era server (``legacy``, a
    :class:`LegacyServer`, which may name the handshake revision to ask for; any other error the
    probe raised is raised again), within what the probe left of connecting's bound
    (``wait`` seconds from ``began``, the ``time.monotonic()`` connecting began at; None: no bound).
    ``modern_only`` (``Client(era="modern")``): an McpError instead.

    A server that went unanswered within the probe's bound (``legacy.silent``) and then refuses
    ``initialize`` with -32022 is a modern one slow to start: that refusal "identifies a modern
    server" (2026-07-28 basic/versioning §Backward Compatibility), and it is asked
    ``server/discover`` again within what is left."""
    if not isinstance(legacy, LegacyServer):
        raise legacy
    client = connection.client
    if modern_only:
        raise McpError(
            f"the server does not speak {client.pinned_version or 'a modern revision'}: it did not "
            f"answer server/discover as a 2026-07-28 server does "
            f"({legacy.__cause__ or 'a handshake-era server?'})"
        ) from legacy.__cause__  # the server's own answer (an HTTP 401 the CLI reads), if any
    if legacy.args[0] is not None:
        client.requested_version = legacy.args[0]
    log.debug(
        "server/discover was not answered as a modern server would: falling back to initialize"
    )
    deadline = None if wait is None else began + wait
    late = RequestTimeout(f"server/discover, initialize: no answer within {wait:g} s")
    timeout = None
    if deadline is not None:  # initialize gets what the probe left of the bound
        timeout = deadline - time.monotonic()
        if timeout <= 0:
            raise late

    def modern_after_all() -> bool:
        # It answered the probe after the client gave up on it: asked again, in the one bound
        left = None if deadline is None else deadline - time.monotonic()
        try:
            connection.discover(client.pinned_version, left, None)
        except LegacyServer:
            return False
        return True

    try:
        connection.initialize(timeout, refused=modern_after_all if legacy.silent else None)
    except RequestTimeout:
        if deadline is None:
            raise
        raise late from None
