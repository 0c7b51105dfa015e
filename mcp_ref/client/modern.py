"""The client's side of the 2026-07-28 era: the era probe, the per-request envelope, and MRTR.

A modern server has no handshake.  The client learns its era once, when it
connects (:func:`probe`), and from then on every request names its own
protocol version and capabilities in ``_meta`` (:func:`with_envelope`).  A
request of the caller's may then take several JSON-RPC requests on the wire,
each with a new id; :class:`ModernCall` is that request across its rounds, on top of the
era-neutral :class:`~mcp_ref.client.calls.Call` (all a handshake-era request is):

* ``input_required`` (MRTR, 2026-07-28 basic/patterns/mrtr): the client answers
  the ``inputRequests`` with its sampling, elicitation and roots handlers — the
  same ones that answer a handshake-era server's requests — and retries with
  ``inputResponses`` and the ``requestState`` echoed exactly;
* ``UnsupportedProtocolVersionError`` (-32022): retry with a version from its
  ``supported`` list (basic/versioning: the client "SHOULD select a mutually
  supported version from the ``supported`` list and retry the request");
* a lost HTTP response stream: re-issue the request with a new id (changelog,
  SEP-2575: "clients MUST re-issue it as a new request with a new request ID");
* ``HeaderMismatch`` (-32020) for a tool whose ``x-mcp-header`` parameters the
  client had not seen: list the tools, then retry once with the headers.

Every one of these is bounded (``Client(max_input_rounds=)``, default
:data:`MAX_INPUT_ROUNDS`; one version retry, :data:`MAX_REISSUES`, one header retry).  A result of
another ``resultType`` goes to :meth:`ModernCall.settle`, which an extension's call overrides.
The module loads when a connection finds (or is told) that the server is modern: a client pinned
to the handshake era never reads it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from .. import lifecycle
from ..errors import (
    HEADER_MISMATCH,
    LIMIT_EXCEEDED,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    HeaderMismatchError,
    LimitExceeded,
    McpError,
    RequestCancelled,
    RequestTimeout,
    ResponseStreamLost,
    UnsupportedProtocolVersionError,
)
from ..lifecycle import MODERN_VERSIONS, SUPPORTED_VERSIONS
from ..session import RequestContext
from ..types import DiscoverResult
from .calls import MAX_INPUT_ROUNDS, Call

if TYPE_CHECKING:
    from .interfaces import Connection

__all__ = [
    "MAX_INPUT_ROUNDS",
    "ModernCall",
    "LegacyServer",
    "probe",
    "pick_version",
    "with_envelope",
    "envelope_meta",
    "adopt_version",
]

log = logging.getLogger(__name__)

#: Times a request whose HTTP response stream broke is re-issued before the caller gets the error.
MAX_REISSUES = 2

#: Errors only a modern server sends (basic/versioning §Backward Compatibility: "a recognized modern
#: JSON-RPC error ... identifies a modern server").
MODERN_ERROR_CODES = frozenset(
    {HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION}
)


def pick_version(offered: list, pinned: str | None) -> str | None:
    """The modern version to speak, given the versions a server offers: the pinned one if offered,
    else the newest modern version both sides know; None when there is none."""
    if pinned is not None:
        return pinned if pinned in offered else None
    return next((v for v in MODERN_VERSIONS if v in offered), None)


class LegacyServer(Exception):
    """The probe found a handshake-era server (internal: the connection falls back to ``initialize``)."""


def probe(
    connection: Connection, pinned: str | None, timeout: float | None, *, bounded: float | None
) -> tuple[str, DiscoverResult]:
    """Ask ``server/discover``; return the version to speak and the server's answer.

    Raises :class:`LegacyServer` when the answer says the server is handshake-only:
    any error that is not a recognized modern one or, with ``bounded`` (stream
    transports, where no HTTP status drives the fallback: ``Client(probe_timeout=)``,
    in seconds), no answer within that time.  2026-07-28 basic/transports/stdio §Backward Compatibility:
    "The fallback MUST NOT be keyed to one specific error code".  A modern error
    is raised as it is (-32022 is handled here: one retry with a supported version).
    """
    version = pinned or MODERN_VERSIONS[0]
    wait = timeout
    if bounded is not None:
        wait = bounded if timeout is None else min(timeout, bounded)
    retried = False
    while True:
        params = {"_meta": envelope_meta(connection, version)}
        try:
            raw = connection.session.request("server/discover", params, timeout=wait)
        except UnsupportedProtocolVersionError as exc:
            # A modern server that does not speak ``version``: "Use one of the versions in its
            # advertised supported list. Do not fall back to initialize."
            choice = pick_version(exc.supported, pinned)
            if choice is None or retried:
                handshake = [v for v in SUPPORTED_VERSIONS if v in exc.supported]
                if handshake and pinned is None:
                    raise LegacyServer(
                        handshake[0]
                    ) from None  # it offers a handshake revision we speak
                raise UnsupportedProtocolVersionError(
                    f"the server speaks {', '.join(exc.supported) or 'no listed version'}; "
                    f"mcp_ref speaks {', '.join(MODERN_VERSIONS + SUPPORTED_VERSIONS)}"
                ) from None
            version, retried = choice, True
            continue
        except McpError as exc:
            if exc.code in MODERN_ERROR_CODES or exc.code == LIMIT_EXCEEDED:
                raise  # a modern refusal; and a rate-limited probe says nothing of the era: try later
            raise LegacyServer(None) from exc
        except RequestTimeout:
            if bounded is not None:
                raise LegacyServer(None) from None
            raise
        try:
            result = DiscoverResult.from_wire(raw)
        except TypeError:
            result = None
        if (
            result is None
            or not isinstance(result.supported_versions, list)
            or not isinstance(result.capabilities, dict)
        ):
            # Not a DiscoverResult: a server that answers any method it does not know with
            # something; "any other" answer than a modern one identifies a legacy server.
            raise LegacyServer(None)
        offered = [v for v in result.supported_versions if isinstance(v, str)]
        choice = pick_version(offered, pinned) if version not in offered else version
        if choice is None:
            handshake = [v for v in SUPPORTED_VERSIONS if v in offered]
            if handshake and pinned is None:
                raise LegacyServer(handshake[0])
            raise UnsupportedProtocolVersionError(
                f"the server speaks {', '.join(offered) or 'no listed version'}; mcp_ref speaks "
                f"{', '.join(MODERN_VERSIONS + SUPPORTED_VERSIONS)}"
            )
        return choice, result


def with_envelope(params: dict | None, meta: dict) -> dict:
    """A copy of a request's params with the envelope's keys added to its ``_meta`` (keys the caller
    put there, such as trace context, are kept)."""
    out = dict(params or {})
    own = out.get("_meta")
    out["_meta"] = {**own, **meta} if isinstance(own, dict) else dict(meta)
    return out


def envelope_meta(
    connection: Connection, version: str | None = None, *, declares: tuple[str, ...] = ()
) -> dict:
    """The ``_meta`` of a modern request: version, capabilities, client info, log level.

    2026-07-28 basic/index §_meta: every request carries ``protocolVersion`` and
    ``clientCapabilities``; ``clientInfo`` "SHOULD" be on every request.  ``declares``: extensions
    its capabilities declare too (an extension declared "in its per-request capabilities", SEP-2663),
    with no settings.  Built once per version, ``declares`` (a few: the calls of the client's
    extensions) and log level (9 of them), and kept in ``connection.metas``, which the client
    empties when what it declares changes; shared, so never changed.
    """
    # Given (the server/discover probe), or chosen by then: every other modern request follows connect().
    version = cast(str, version or connection.protocol_version)
    key = (version, declares, connection.log_level)
    meta = connection.metas.get(key)
    if meta is None:
        capabilities = connection.client.capabilities(version)
        if declares:
            extensions: dict[str, dict] = {name: {} for name in declares}
            capabilities = {
                **capabilities,
                "extensions": {**extensions, **capabilities.get("extensions", {})},
            }
        meta = connection.metas[key] = lifecycle.request_meta(
            version, capabilities, connection.client.client_info, key[2]
        )
    return meta


def adopt_version(connection: Connection, error: UnsupportedProtocolVersionError) -> None:
    """After -32022 for a request: speak a version from the error's ``supported`` list, or re-raise it."""
    choice = pick_version(error.supported, connection.client.pinned_version)
    if choice is None:
        raise error
    connection.session.protocol_version = choice


class ModernCall(Call):
    """One request of the caller's, across the rounds the modern era may need (see the module
    docstring).  ``result()`` waits for the final result; ``cancel()`` stops it at any round."""

    def __init__(
        self,
        connection: Connection,
        method: str,
        params: dict | None,
        options: dict,
        declares: tuple[str, ...] = (),
    ):
        on_progress = options.get("on_progress")
        if on_progress is not None:
            from .mrtr import ProgressAcrossRounds

            options = dict(options, on_progress=ProgressAcrossRounds(on_progress))
        self._cancelled: str | None = (
            None  # no lock: cancel() and the rounds each write their side, then read the other's
        )
        self._contexts: list[RequestContext] = []  # of the input handlers running now
        super().__init__(connection, method, params, options, declares)

    def cancel(self, reason: str | None = None) -> bool:
        """Cancel the request (the server is told, as the transport requires); False if it had finished."""
        self._cancelled = reason or "cancelled"
        for context in list(self._contexts):
            context.cancelled.set()
        return self.pending.cancel(reason)

    def result(self) -> dict:
        """Wait for the final result: answer ``input_required`` rounds, retry as the module says."""
        connection = self._connection
        reissues = 0
        version_retried = headers_retried = False
        params = self._params
        while True:
            try:
                result = self.pending.result()
            except UnsupportedProtocolVersionError as exc:
                if version_retried:
                    raise
                version_retried = True
                adopt_version(connection, exc)
                self._resend(params)
                continue
            except ResponseStreamLost:
                if reissues >= MAX_REISSUES:
                    raise
                reissues += 1
                self._resend(params)
                continue
            except HeaderMismatchError:
                if headers_retried or not connection.learn_tool_headers(self.method, params):
                    raise
                headers_retried = True
                self._resend(params)
                continue
            kind = result.get(
                "resultType", lifecycle.COMPLETE
            )  # absent: "MUST treat ... as complete"
            if kind == lifecycle.COMPLETE:
                return result
            if kind != lifecycle.INPUT_REQUIRED:
                return self.settle(kind, result)
            from . import mrtr

            params = mrtr.next_round(self, self._params, result)
            self._resend(params)

    def settle(self, kind: str, result: dict) -> dict:
        """The final result of an answer whose ``resultType`` is neither complete nor input_required:
        an error here; a call that declares an extension defining ``kind`` overrides it."""
        raise McpError(
            f"{self.method}: the server answered with resultType {kind!r}, which this "
            f"client did not ask for"
        )

    def _resend(self, params: dict | None) -> None:
        self._check_cancelled()
        # mrtr: "The JSON-RPC id MUST be different between the initial request and the retry".
        self.pending = self._connection.send_request(
            self.method, params, declares=self.declares, **self._options
        )
        if (
            self._cancelled is not None
        ):  # cancel() came meanwhile, perhaps seeing the previous request only
            self.pending.cancel(self._cancelled)

    @property
    def max_input_rounds(self) -> int:
        """Rounds of input requests the client answers for this call (``Client(max_input_rounds=)``)."""
        return self._connection.client.max_input_rounds

    def too_many_rounds(self) -> LimitExceeded:
        """The error of a call whose server still asks for input after :attr:`max_input_rounds` rounds."""
        from .mrtr import too_many_rounds

        return too_many_rounds(self)

    def request_options(self) -> dict:
        """The call's options that apply to each request it sends (its timeout)."""
        return {"timeout": self._options["timeout"]} if "timeout" in self._options else {}

    def answer(self, requests: Any) -> dict:
        """The ``inputResponses`` for an ``inputRequests`` map (of an ``input_required`` result, or of
        a task), from the client's handlers (:func:`mcp_ref.client.mrtr.answer`)."""
        from .mrtr import answer

        return answer(self, requests)

    @contextmanager
    def input_handler(self, context: RequestContext) -> Iterator[None]:
        """While an input handler serves ``context``: cancelling the call cancels it too."""
        self._contexts.append(context)
        try:
            self._check_cancelled()  # after the append: a cancel() that comes later sees the context
            yield
        finally:
            self._contexts.remove(context)

    def _check_cancelled(self) -> None:
        if self._cancelled is not None:
            raise RequestCancelled(f"{self.method}: cancelled ({self._cancelled})")
