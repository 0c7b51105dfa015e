"""The client's side of the 2026-07-28 era: choosing the era, the per-request envelope, and MRTR.

A modern server has no handshake.  The client learns its era once, when it
connects (:func:`probe`), and from then on every request names its own
protocol version and capabilities in ``_meta`` (:func:`with_envelope`).  A
request of the caller's may then take several JSON-RPC requests on the wire,
each with a new id; :class:`Call` is that request across its rounds:

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
:data:`MAX_INPUT_ROUNDS`, shared with a task's input requests in
:mod:`mcp_ref.extras.client_tasks`; one version retry, :data:`MAX_REISSUES`, one header retry).  In the handshake era a :class:`Call`
is a single request.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from .. import MODERN_VERSIONS, SUPPORTED_VERSIONS
from ..core import envelope
from ..core.errors import (
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
    UnsupportedProtocolVersion,
    UnsupportedProtocolVersionError,
)
from ..core.session import PendingRequest, RequestContext
from ..core.types import DiscoverResult
from ..extras import client_tasks as tasks

if TYPE_CHECKING:
    from .connection import ClientConnection

log = logging.getLogger(__name__)

#: The eras a client may ask for (``Client(era=...)``).
AUTO, MODERN, HANDSHAKE = "auto", "modern", "handshake"
ERAS = (AUTO, MODERN, HANDSHAKE)

#: ``input_required`` rounds one request may take before the client gives up (a server that asks
#: forever must not hold the caller forever; 2026-07-28 mrtr lets a server ask again and again).
#: The default of ``Client(max_input_rounds=)``, which bounds a task's input rounds too.
MAX_INPUT_ROUNDS = 16
#: Input requests one ``input_required`` result may carry.
MAX_INPUT_REQUESTS = 64
#: Times a request whose HTTP response stream broke is re-issued before the caller gets the error.
MAX_REISSUES = 2
#: How long the stdio probe waits for a server that does not answer ``server/discover`` at all
#: (stdio §Backward Compatibility: "does not respond within a reasonable timeout: the server is legacy").
PROBE_TIMEOUT = 10.0

#: Errors only a modern server sends (basic/versioning §Backward Compatibility: "a recognized modern
#: JSON-RPC error ... identifies a modern server").
MODERN_ERROR_CODES = frozenset({HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION})


def resolve_era(era: str, protocol_version: str | None) -> tuple[str, str | None]:
    """Check ``Client(era=, protocol_version=)`` and return the era to use and the pinned version.

    A pinned revision implies its era; ``era="auto"`` with no version prefers the newest modern
    revision and falls back to the newest handshake one.
    """
    if era not in ERAS:
        raise ValueError(f"era must be one of {', '.join(ERAS)}, not {era!r}")
    if protocol_version is None:
        return era, None
    if protocol_version in MODERN_VERSIONS:
        if era == HANDSHAKE:
            raise ValueError(f"{protocol_version} is a modern revision; the handshake era speaks "
                             f"{', '.join(SUPPORTED_VERSIONS)}")
        return MODERN, protocol_version
    if protocol_version in SUPPORTED_VERSIONS:
        if era == MODERN:
            raise ValueError(f"{protocol_version} is a handshake-era revision; the modern era speaks "
                             f"{', '.join(MODERN_VERSIONS)}")
        return HANDSHAKE, protocol_version
    raise ValueError(f"unsupported protocol version {protocol_version!r}; mcp_ref speaks "
                     f"{', '.join(MODERN_VERSIONS + SUPPORTED_VERSIONS)}")


def pick_version(offered: list, pinned: str | None) -> str | None:
    """The modern version to speak, given the versions a server offers: the pinned one if offered,
    else the newest modern version both sides know; None when there is none."""
    if pinned is not None:
        return pinned if pinned in offered else None
    return next((v for v in MODERN_VERSIONS if v in offered), None)


class LegacyServer(Exception):
    """The probe found a handshake-era server (internal: the connection falls back to ``initialize``)."""


def probe(connection: ClientConnection, pinned: str | None, timeout: float | None,
          *, bounded: bool) -> tuple[str, DiscoverResult]:
    """Ask ``server/discover``; return the version to speak and the server's answer.

    Raises :class:`LegacyServer` when the answer says the server is handshake-only:
    any error that is not a recognized modern one or, with ``bounded`` (stream
    transports, where no HTTP status drives the fallback), no answer within
    :data:`PROBE_TIMEOUT`.  2026-07-28 basic/transports/stdio §Backward Compatibility:
    "The fallback MUST NOT be keyed to one specific error code".  A modern error
    is raised as it is (-32022 is handled here: one retry with a supported version).
    """
    version = pinned or MODERN_VERSIONS[0]
    wait = timeout
    if bounded:
        wait = PROBE_TIMEOUT if timeout is None else min(timeout, PROBE_TIMEOUT)
    retried = False
    while True:
        params = {"_meta": connection.envelope_meta(version)}
        try:
            raw = connection.session.request("server/discover", params, timeout=wait)
        except UnsupportedProtocolVersionError as exc:
            # A modern server that does not speak ``version``: "Use one of the versions in its
            # advertised supported list. Do not fall back to initialize."
            choice = pick_version(exc.supported, pinned)
            if choice is None or retried:
                handshake = [v for v in SUPPORTED_VERSIONS if v in exc.supported]
                if handshake and pinned is None:
                    raise LegacyServer(handshake[0]) from None  # it offers a handshake revision we speak
                raise UnsupportedProtocolVersion(
                    f"the server speaks {', '.join(exc.supported) or 'no listed version'}; "
                    f"mcp_ref speaks {', '.join(MODERN_VERSIONS + SUPPORTED_VERSIONS)}") from None
            version, retried = choice, True
            continue
        except McpError as exc:
            if exc.code in MODERN_ERROR_CODES or exc.code == LIMIT_EXCEEDED:
                raise  # a modern refusal; and a rate-limited probe says nothing of the era: try later
            raise LegacyServer(None) from exc
        except RequestTimeout:
            if bounded:
                raise LegacyServer(None) from None
            raise
        try:
            result = DiscoverResult.from_wire(raw)
        except TypeError:
            result = None
        if result is None or not isinstance(result.supported_versions, list) \
                or not isinstance(result.capabilities, dict):
            # Not a DiscoverResult: a server that answers any method it does not know with
            # something; "any other" answer than a modern one identifies a legacy server.
            raise LegacyServer(None)
        offered = [v for v in result.supported_versions if isinstance(v, str)]
        choice = pick_version(offered, pinned) if version not in offered else version
        if choice is None:
            handshake = [v for v in SUPPORTED_VERSIONS if v in offered]
            if handshake and pinned is None:
                raise LegacyServer(handshake[0])
            raise UnsupportedProtocolVersion(
                f"the server speaks {', '.join(offered) or 'no listed version'}; mcp_ref speaks "
                f"{', '.join(MODERN_VERSIONS + SUPPORTED_VERSIONS)}")
        return choice, result


def with_envelope(params: dict | None, meta: dict) -> dict:
    """A copy of a request's params with the envelope's keys added to its ``_meta`` (keys the caller
    put there, such as trace context, are kept)."""
    out = dict(params or {})
    own = out.get("_meta")
    out["_meta"] = {**own, **meta} if isinstance(own, dict) else dict(meta)
    return out


class Call:
    """One request of the caller's, across the rounds the modern era may need (see the module
    docstring).  ``result()`` waits for the final result; ``cancel()`` stops it at any round."""

    def __init__(self, connection: ClientConnection, method: str, params: dict | None, options: dict,
                 task: bool = False):
        self._connection = connection
        self.method = method
        self._params = params
        #: True when the request declares the tasks extension: the server may answer with a task,
        #: which :func:`mcp_ref.extras.client_tasks.follow` drives to its end.  ``task_id`` is then its id.
        self.task = task
        self.task_id: str | None = None
        self._stop = threading.Event()
        self._finished = False
        on_progress = options.get("on_progress")
        if on_progress is not None:
            options = dict(options, on_progress=_Forward(on_progress))
        self._options = options
        self._lock = threading.Lock()
        self._cancelled: str | None = None
        self._contexts: list[RequestContext] = []  # of the input handlers running now
        #: ``input_required`` rounds answered so far (a result reached through any is not cached).
        self.rounds = 0
        self.pending: PendingRequest = connection.send_request(method, params, task=task, **options)

    @property
    def id(self):
        """The JSON-RPC id of the current round."""
        return self.pending.id

    def done(self) -> bool:
        """True once the call has settled (a call that may become a task: once ``result()`` returned)."""
        return self._finished or (self.pending.done() and not self.task)

    def cancel(self, reason: str | None = None) -> bool:
        """Cancel the request (the server is told, as the transport requires); False if it had finished."""
        with self._lock:
            self._cancelled = reason or "cancelled"
            for context in self._contexts:
                context.cancelled.set()
            self._stop.set()  # a task being followed: tasks/cancel
            return self.pending.cancel(reason) or (self.task and not self._finished)

    def result(self) -> dict:
        """Wait for the final result: answer ``input_required`` rounds, retry as the module says."""
        try:
            return self._result()
        finally:
            self._finished = True

    def _result(self) -> dict:
        connection = self._connection
        if not connection.modern:
            return self.pending.result()
        rounds = reissues = 0
        version_retried = headers_retried = False
        params = self._params
        while True:
            try:
                result = self.pending.result()
            except UnsupportedProtocolVersionError as exc:
                if version_retried:
                    raise
                version_retried = True
                connection.adopt_version(exc)
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
            kind = result.get("resultType", envelope.COMPLETE)  # absent: "MUST treat ... as complete"
            if kind == envelope.COMPLETE:
                return result
            if kind == tasks.TASK and self.task:
                return tasks.follow(self, result, self._stop, self._options.get("max_total_timeout"))
            if kind != envelope.INPUT_REQUIRED:
                raise McpError(f"{self.method}: the server answered with resultType {kind!r}, which this "
                               f"client did not ask for")
            rounds += 1
            self.rounds = rounds
            if rounds > self.max_input_rounds:
                raise self.too_many_rounds()
            params = dict(self._params or {})
            requests = result.get("inputRequests")
            if requests is not None:
                params["inputResponses"] = self._answer(requests)
            if "requestState" in result:
                # mrtr: "the client MUST echo back the exact value"; without one, "MUST NOT include one".
                params["requestState"] = result["requestState"]
            self._resend(params)

    def _resend(self, params: dict | None) -> None:
        with self._lock:
            if self._cancelled is not None:
                raise RequestCancelled(f"{self.method}: cancelled ({self._cancelled})")
            # mrtr: "The JSON-RPC id MUST be different between the initial request and the retry".
            self.pending = self._connection.send_request(self.method, params, task=self.task, **self._options)

    @property
    def connection(self) -> ClientConnection:
        """The connection the call travels on."""
        return self._connection

    @property
    def max_input_rounds(self) -> int:
        """Rounds of input requests the client answers for this call (``Client(max_input_rounds=)``)."""
        return self._connection.client.max_input_rounds

    def too_many_rounds(self) -> LimitExceeded:
        """The error of a call whose server still asks for input after :attr:`max_input_rounds` rounds."""
        limit = self.max_input_rounds
        return LimitExceeded(f"{self.method}: the server still needed input after {limit} rounds; this client "
                             f"answers at most {limit} (max_input_rounds)", data={"limit": limit})

    def request_options(self) -> dict:
        """The call's options that apply to each request it sends (its timeout)."""
        return {"timeout": self._options["timeout"]} if "timeout" in self._options else {}

    def answer(self, requests: Any) -> dict:
        """The ``inputResponses`` for an ``inputRequests`` map (of an ``input_required`` result, or of
        a task), from the client's handlers."""
        return self._answer(requests)

    def _answer(self, requests: Any) -> dict:
        """The ``inputResponses`` for an ``inputRequests`` map, from the client's handlers."""
        if not isinstance(requests, dict) or len(requests) > MAX_INPUT_REQUESTS:
            raise McpError(f"{self.method}: the server's inputRequests is not a map of at most "
                           f"{MAX_INPUT_REQUESTS} requests")
        responses: dict[str, Any] = {}
        for key, ask in requests.items():
            method = ask.get("method") if isinstance(ask, dict) else None
            params = ask.get("params") if isinstance(ask, dict) else None
            if not isinstance(method, str) or not self._connection.answers(method):
                raise McpError(f"{self.method}: the server asked for {method!r}, which no client answers")
            context = RequestContext(self._connection.session, f"{self.pending.id}:{key}", method,
                                     params if isinstance(params, dict) else {})
            with self._lock:
                if self._cancelled is not None:
                    raise RequestCancelled(f"{self.method}: cancelled ({self._cancelled})")
                self._contexts.append(context)
            try:
                responses[key] = self._connection.handle_request(context, method, context.params)
            except McpError as exc:
                raise type(exc)(f"{self.method}: could not give the server's {method} input: {exc.message}",
                                code=exc.code, data=exc.data) from None
            finally:
                with self._lock:
                    self._contexts.remove(context)
        return responses


class _Forward:
    """A call's ``on_progress`` across its rounds: only progress beyond what was already reported.

    Each round is a new request with a new progress token, and a server that re-runs its handler
    for the retry (as mcp_ref's does) reports the same steps again; the caller sees one call whose
    progress only increases (2026-07-28 basic/patterns/progress: "The progress value MUST increase
    with each notification").
    """

    __slots__ = ("callback", "reported")

    def __init__(self, callback):
        self.callback = callback
        self.reported: float | None = None

    def __call__(self, progress, total, message) -> None:
        if self.reported is not None and progress <= self.reported:
            return
        self.reported = progress
        self.callback(progress, total, message)
