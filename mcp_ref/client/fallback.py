"""The handshake instead of 2026-07-28: a server the era probe found to speak the handshake only.

2026-07-28 basic/versioning §Backward Compatibility: a client for both eras probes with
``server/discover`` (:func:`mcp_ref.client.connection.probe`); "any other error, or does not
respond within a reasonable timeout: the server is legacy" (basic/transports/stdio), and the client
goes on with ``initialize``.  Loaded when a probe finds such a server.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import McpError, RequestTimeout

if TYPE_CHECKING:
    from .interfaces import ClientSettings

log = logging.getLogger(__name__)


class LegacyServer(Protocol):
    """What :func:`initialize_instead` reads of the probe's
    :class:`~mcp_ref.client.connection.LegacyServer`."""

    args: tuple[Any, ...]
    silent: bool
    __cause__: BaseException | None


class Falling(Protocol):
    """What :func:`initialize_instead` uses of a :class:`~mcp_ref.client.connection.ClientConnection`."""

    client: ClientSettings

    def initialize(
        self, timeout: float | None, *, refused: Callable[[], bool] | None = None
    ) -> None:
        """The handshake (``refused``: asked after a -32022 to ``initialize``)."""

    def discover(
        self, pinned: str | None, timeout: float | None, bounded: float | None
    ) -> LegacyServer | None:
        """The probe again: 2026-07-28 if the server speaks it (None), else why not."""


def initialize_instead(
    connection: Falling,
    legacy: LegacyServer,
    modern_only: bool,
    wait: float | None,
    deadline: float | None,
) -> None:
    """``initialize``, after the probe found a handshake-era server (``legacy``, which may name
    the handshake revision to ask for), within what the probe left of connecting's bound
    (``deadline``, ``wait`` seconds after connecting began; None: none).  ``modern_only``
    (``Client(era="modern")``): an McpError instead.

    A server that went unanswered within the probe's bound (``legacy.silent``) and then refuses
    ``initialize`` with -32022 is a modern one slow to start: that refusal "identifies a modern
    server" (2026-07-28 basic/versioning §Backward Compatibility), and it is asked
    ``server/discover`` again within what is left."""
    client = connection.client
    if modern_only:
        raise McpError(
            f"the server does not speak {client.pinned_version or 'a modern revision'}: it did not "
            f"answer server/discover as a 2026-07-28 server does "
            f"({legacy.__cause__ or 'a handshake-era server?'})"
        ) from None
    if legacy.args[0] is not None:
        client.requested_version = legacy.args[0]
    log.debug(
        "server/discover was not answered as a modern server would: falling back to initialize"
    )
    late = RequestTimeout(f"server/discover, initialize: no answer within {wait:g} s")
    timeout = None
    if deadline is not None:  # initialize gets what the probe left of the bound
        timeout = deadline - time.monotonic()
        if timeout <= 0:
            raise late

    def modern_after_all() -> bool:
        # It answered the probe after the client gave up on it: asked again, in the one bound
        left = None if deadline is None else deadline - time.monotonic()
        return connection.discover(client.pinned_version, left, None) is None

    try:
        connection.initialize(timeout, refused=modern_after_all if legacy.silent else None)
    except RequestTimeout:
        if deadline is None:
            raise
        raise late from None
