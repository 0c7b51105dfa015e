"""A proxy: serve any MCP server to any MCP client, across transports and across eras.

``proxy_server(target)`` returns a :class:`ProxyServer`, a :class:`~mcp_ref.server.Server` that
serves what ``target`` serves: run it on stdio or HTTP like any server
(``mcp-ref proxy TARGET --http HOST:PORT`` does).  The front speaks every revision (the handshake
era, 2025-03-26 to 2025-11-25, and stateless 2026-07-28) whatever the target speaks, so a
2025-era client can use a 2026-only server and a 2026 client a handshake-only one.

What is carried across: the target's capabilities, its tools (schemas as they are: the proxy
validates nothing a second time), resources, templates, prompts and completion, with pagination;
list-changed and resource-updated notifications; the target's log messages and the progress of a
forwarded request, to the client that made it; cancellation of a forwarded request; and
sampling, elicitation and roots asked by the target, to the front client whose request caused
them.  Era translation:

* a front request of the handshake era asks its client with a request (``sampling/createMessage``
  ...), whatever the target's era (a 2026 target's ``input_required`` rounds are answered by the
  back connection, which asks the front client);
* a 2026-07-28 front request gets an ``input_required`` result for each question the target asks,
  and its retry carries the answer back (basic/patterns/mrtr).  The target's request is kept
  open meanwhile (the proxy *parks* it, keyed by the ``requestState`` it sends): so a retry must
  reach the same proxy process, within ``ask_timeout``.

Back connections (the target is a URL or a command, so the proxy can open several): one per
front session of the handshake era (opened at its ``initialize``: server-to-client requests,
subscriptions and the log level of one client never reach another), one shared *watcher* (the
target's capabilities, the 2026 front's listings and its ``subscriptions/listen`` streams), and
for 2026 front requests that may ask (``tools/call``, ``prompts/get``, ``resources/read``) one
leased from a pool for the request's life, so that what the target asks is the caller's.  At most
``max_back_connections`` in all: past it a new session's ``initialize`` or such a request is
refused with -32000 ("server busy"); at most ``max_forwarded`` such requests in flight (parked
ones included), past it the same.
"""

from __future__ import annotations

import itertools
import logging
import secrets
import shlex
import threading
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from . import lifecycle
from .client import Client
from .errors import (
    InternalError,
    InvalidParams,
    McpError,
    MethodNotFound,
    MissingRequiredClientCapabilityError,
    RequestCancelled,
    ResourceNotFound,
    ServerBusy,
)
from .extension import Extension
from .server import Server
from .server.seams import MRTR_METHODS

__all__ = ["ProxyServer", "proxy_server", "connector"]

log = logging.getLogger(__name__)

#: The requests a target may send its client (each one a question for the front client).
ASK_METHODS = ("sampling/createMessage", "elicitation/create", "roots/list")
#: The capability each question needs of the front client.
ASK_CAPABILITY = {
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
    "roots/list": "roots",
}
#: Requests forwarded as they are (listings, completion), beside MRTR_METHODS.
PASSED = frozenset(
    {
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
        "completion/complete",
    }
)
#: What a handshake-era front session may ask besides: forwarded on its own back connection.
SESSION_METHODS = frozenset({"resources/subscribe", "resources/unsubscribe", "logging/setLevel"})
#: The capabilities mirrored from the target.
MIRRORED = ("tools", "resources", "prompts", "logging")
#: Back connections a proxy holds at most by default (``max_back_connections``).
DEFAULT_MAX_BACK_CONNECTIONS = 16
#: Forwarded requests that may ask (in flight or parked) at most by default (``max_forwarded``).
DEFAULT_MAX_FORWARDED = 64
#: How long a question of the target waits for the front client's answer (seconds).
DEFAULT_ASK_TIMEOUT = 300.0
#: Resources the watcher subscribes to for 2026 listen streams, at most.
MAX_WATCHED_URIS = 1024
#: The prefix of a ``requestState`` the proxy issues (the rest: a random key of a parked request).
STATE_PREFIX = "mcp-ref-proxy."


def connector(target: str | Sequence[str] | Callable[..., Client]) -> Callable[..., Client]:
    """``connect(**client_options) -> Client`` for ``target``: an ``http(s)://`` URL, a command
    (a list, or a string split as a shell would), or such a function already (returned as is).

    The proxy passes options of its own (``extensions``, ``on_log`` ...): a function of the
    caller's must pass them on to ``Client.stdio`` / ``Client.http``."""
    if callable(target):
        return target
    if isinstance(target, str) and target.startswith(("http://", "https://")):
        url = target
        return lambda **options: Client.http(url, **options)
    command = shlex.split(target) if isinstance(target, str) else list(target)
    if not command:
        raise ValueError("the proxy's target is an empty command")
    return lambda **options: Client.stdio(command, **options)


def proxy_server(
    target: str | Sequence[str] | Callable[..., Client],
    *,
    name: str | None = None,
    max_back_connections: int = DEFAULT_MAX_BACK_CONNECTIONS,
    max_forwarded: int = DEFAULT_MAX_FORWARDED,
    ask_timeout: float = DEFAULT_ASK_TIMEOUT,
    client_options: dict[str, Any] | None = None,
) -> ProxyServer:
    """A :class:`ProxyServer` for ``target`` (see :func:`connector`), connected to it now.

    ``name``: the front's server name (default: the target's).  ``client_options``: keywords for
    every back ``Client`` (``timeout``, ``era``, ``headers``, ``stderr`` ...)."""
    return ProxyServer(
        connector(target),
        name=name,
        max_back_connections=max_back_connections,
        max_forwarded=max_forwarded,
        ask_timeout=ask_timeout,
        client_options=client_options,
    )


# -- the front: which request a question of the target belongs to ---------------------------------


@dataclass
class Front:
    """One request of a front client: its connection, its context and (2026-07-28) its envelope."""

    connection: Any
    context: Any
    envelope: lifecycle.Envelope | None

    @property
    def capabilities(self) -> dict:
        """What the front client declared (for this request, in 2026-07-28)."""
        if self.envelope is not None:
            return self.envelope.client_capabilities
        return self.connection.client_capabilities

    def log(self, level: str, data: Any, logger: str | None) -> None:
        """A log message of the target's for this request, if its client asked for that level."""
        self.connection.log(
            level,
            data,
            logger,
            related_request_id=self.context.request_id,
            envelope=self.envelope,
        )


@dataclass
class Question:
    """One question of the target (a sampling, elicitation or roots request) for a 2026 front."""

    key: str
    method: str
    params: dict | None
    answered: threading.Event = field(default_factory=threading.Event)
    answer: dict | None = None


#: The forward whose back call this thread runs (a 2026 target's questions come on that thread).
_current = threading.local()


class _Signal(threading.Event):
    """A front request's ``cancelled`` Event that also wakes the forward waiting on it."""

    def __init__(self, wake: Callable[[], None]):
        super().__init__()
        self._wake = wake

    def set(self) -> None:
        super().set()
        self._wake()


class Forward:
    """One front request forwarded to the target: the back call, and its questions.

    The back call's ``result()`` runs on a thread of the proxy's pool; the front request's thread
    waits for its outcome, a question (2026-07-28 front), or its own cancellation.
    """

    def __init__(self, proxy: ProxyServer, link: BackLink, front: Front, owner: str | None):
        self.proxy = proxy
        self.link = link
        self.front: Front | None = front
        #: What the front client declared (for the first request, in 2026-07-28).
        self.capabilities = front.capabilities
        self.owner = owner
        self.lock = threading.Condition()
        self.outcome: tuple[str, Any] | None = None
        self.waiting: dict[str, Question] = {}  # not yet shown to the front client
        self.shown: dict[str, Question] = {}  # shown, not yet answered
        self.numbers = itertools.count(1)
        self.token: str | None = None
        self.finished = False
        self.call: Any = None
        #: How it holds its back connection: "session", "leased" (a pool's) or "turn" (the watcher's).
        self.hold = "session"
        #: The -32021 error a 2026 front gets for a question it cannot answer, once asked.
        self.refusal: McpError | None = None

    # -- on the back's threads -------------------------------------------------------------------

    def ask(self, method: str, params: dict | None) -> dict:
        """The front client's answer to a question of the target's (blocks until it comes)."""
        front = self.front
        if front is not None and front.envelope is None:
            # handshake-era front: a request of our own to the client that made this request
            if ASK_CAPABILITY[method] not in front.capabilities:
                # the target asked what the front client cannot answer: not found, as a client says
                raise MethodNotFound(
                    f"Method not found: the client in front of this proxy does not offer "
                    f"{ASK_CAPABILITY[method]}"
                )
            return front.connection.request(
                method,
                params,
                timeout=self.proxy.ask_timeout,
                related_request_id=front.context.request_id,
            )
        needed = ASK_CAPABILITY[method]
        if needed not in self.capabilities:
            # 2026-07-28 mrtr: "Servers MUST NOT send an inputRequests that the client has not
            # declared support for"; the front request ends with -32021 naming it instead.
            self.refusal = MissingRequiredClientCapabilityError.needing(
                {needed: {}}, f"the server behind this proxy asks for {needed}"
            )
            raise self.refusal
        number = next(self.numbers)
        question = Question(f"{method.partition('/')[0]}-{number}", method, params)
        with self.lock:
            if self.finished or self.outcome is not None:
                raise RequestCancelled(f"{method}: the request it belonged to has ended")
            self.waiting[question.key] = question
            self.lock.notify_all()
        if not question.answered.wait(self.proxy.ask_timeout):
            raise McpError(f"{method}: the client in front of the proxy did not answer in time")
        if question.answer is None:
            raise RequestCancelled(f"{method}: the request it belonged to has ended")
        return question.answer

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """The target's progress on this request, to the front request now waiting for it."""
        front = self.front
        if front is None:
            return  # parked: nobody waits for progress now (the retry gets what comes after)
        try:
            front.context.report_progress(progress, total, message)
        except ValueError:
            pass  # not above what this front request was told already (a new round's repeat)

    def run(self) -> None:
        """Wait for the back call's outcome (on a pool thread), and hand it to the front."""
        try:
            outcome: tuple[str, Any] = ("result", self.call.result())
        except BaseException as exc:  # every failure is the front's to see
            outcome = ("error", exc)
        finally:
            _current.forward = None
        with self.lock:
            self.outcome = outcome
            attached = self.front is not None
            self.lock.notify_all()
        if not attached:  # parked, and its question expired or failed: nobody will come for it
            self.finish()

    # -- on the front request's thread -----------------------------------------------------------

    def serve(self, front: Front) -> dict:
        """Wait for the outcome, a question or a cancellation; the front's raw result."""
        context = front.context
        with self.lock:
            self.front = front
        signal = _Signal(self._wake)
        if context.is_cancelled:
            signal.set()
        context.cancelled = signal
        with self.lock:
            while self.outcome is None and not signal.is_set():
                if front.envelope is not None and self.waiting:
                    break
                self.lock.wait()
            if self.outcome is None and not signal.is_set():
                # a 2026 front: the questions go out as input_required, the back call is parked
                self.shown.update(self.waiting)
                self.waiting.clear()
                self.front = None
                questions = {q.key: _input_request(q.method, q.params) for q in self.shown.values()}
                token = self.token = self.token or STATE_PREFIX + secrets.token_urlsafe(24)
                self.proxy.park(self)
                return {
                    "resultType": lifecycle.INPUT_REQUIRED,
                    "inputRequests": questions,
                    "requestState": token,
                }
            outcome = self.outcome
        if outcome is None:  # cancelled by the front client: the target is told too
            self.call.cancel("cancelled by the client in front of the proxy")
            self.finish()
            raise RequestCancelled("cancelled by the client")
        self.finish()
        kind, value = outcome
        if kind == "error":
            raise self.refusal or value
        return value

    def answer(self, responses: Any) -> None:
        """A 2026 front's retry: its ``inputResponses`` answer the questions shown to it."""
        if responses is not None and not isinstance(responses, dict):
            raise InvalidParams("Invalid params: inputResponses must be an object")
        with self.lock:
            for key, question in list(self.shown.items()):
                answer = (responses or {}).get(key)
                if answer is None:
                    continue  # unanswered: asked again (mrtr §Error Handling)
                if not isinstance(answer, dict):
                    raise InvalidParams(
                        f"Invalid params: inputResponses[{key!r}] must be a "
                        f"{question.method} result object"
                    )
                del self.shown[key]
                question.answer = answer
                question.answered.set()
            self.waiting.update(self.shown)
            self.shown.clear()

    def _wake(self) -> None:
        with self.lock:
            self.lock.notify_all()

    def finish(self) -> None:
        """The forward has ended: its open questions are dropped, its back connection released."""
        with self.lock:
            if self.finished:
                return
            self.finished = True
            open_questions = [*self.waiting.values(), *self.shown.values()]
        for question in open_questions:
            question.answered.set()  # answer None: the question's request ends
        self.proxy.release(self)


def _input_request(method: str, params: dict | None) -> dict:
    request: dict[str, Any] = {"method": method}
    if params is not None:
        request["params"] = params
    return request


# -- the back: one connection to the target --------------------------------------------------------


class _Router(Extension):
    """The back client's extension: the target's questions go to the front request of the moment,
    and the client declares what the front client does."""

    name = "mcp-ref/proxy"

    def __init__(self, link: BackLink, declared: dict | None):
        self.link = link
        self.declared = declared

    def capabilities(self, version: str | None, peer: Any = None) -> dict[str, Any] | None:
        front_caps = self.declared
        if front_caps is None:  # shared: whatever a front client may offer (checked when asked)
            front_caps = {"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {}}
        return client_capabilities(front_caps, version)

    def methods(self, version: str | None) -> dict[str, Callable[..., Any]]:
        return dict.fromkeys(ASK_METHODS, self._answer)

    def _answer(self, connection: Any, context: Any, params: dict) -> dict:
        # a 2026 target's questions are answered on the thread waiting for the call's result
        forward = getattr(_current, "forward", None) or self.link.forward
        if forward is None:
            raise MethodNotFound(
                f"Method not found: {context.method} outside a request forwarded by the proxy"
            )
        return forward.ask(context.method, params)


def client_capabilities(front: dict, version: str | None) -> dict:
    """What a back client declares at ``version`` for a front client that declared ``front``."""
    caps: dict[str, Any] = {}
    if "sampling" in front:
        sampling = front["sampling"] if isinstance(front["sampling"], dict) else {}
        caps["sampling"] = {"tools": {}} if "tools" in sampling else {}
    if "elicitation" in front and lifecycle.at_least(version, lifecycle.ELICITATION):
        elicitation = front["elicitation"] if isinstance(front["elicitation"], dict) else {}
        if lifecycle.at_least(version, lifecycle.ELICITATION_URL_MODE):
            # 2025-11-25 client/elicitation: an empty object means form mode
            modes: dict[str, dict] = {m: {} for m in ("form", "url") if m in elicitation}
            caps["elicitation"] = modes or {"form": {}}
        else:
            caps["elicitation"] = {}
    if "roots" in front:
        caps["roots"] = {} if version in lifecycle.MODERN_VERSIONS else {"listChanged": True}
    return caps


class BackLink:
    """One connection to the target, and the forward its questions go to now."""

    def __init__(
        self,
        proxy: ProxyServer,
        declared: dict | None,
        *,
        on_list_changed: Callable[[str], None] | None = None,
        on_resource_updated: Callable[[str], None] | None = None,
        on_log: Callable[[Any], None] | None = None,
    ):
        self.proxy = proxy
        self.forward: Forward | None = None
        self.log_level: str | None = None
        self.subscribed: set[str] = set()
        options = dict(proxy.client_options)
        options.update(
            extensions=[*options.get("extensions", ()), _Router(self, declared)],
            on_list_changed=on_list_changed,
            on_resource_updated=on_resource_updated,
            on_log=on_log or self._log,
            log_level=None,
        )
        self.client: Client = proxy.open_back(**options)

    def _log(self, message: Any) -> None:
        forward = self.forward
        front = None if forward is None else forward.front
        if front is not None:
            front.log(message.level, message.data, message.logger)

    def set_log_level(self, level: str | None) -> None:
        """Ask the target for log messages at ``level`` (None: none), if that is not asked already."""
        if level == self.log_level or "logging" not in self.client.server_capabilities:
            return
        if level is None and not self.client.connection.modern:
            return  # the handshake era cannot take it back: messages are then not forwarded
        self.client.set_logging_level(level)
        self.log_level = level

    def close(self) -> None:
        """End the connection to the target."""
        try:
            self.client.close()
        except Exception:  # closing a connection that already broke
            log.debug("closing a back connection failed", exc_info=True)


# -- the front server ------------------------------------------------------------------------------


class _FrontDoor(Extension):
    """The front server's extension: every feature request goes to the target."""

    name = "mcp-ref/proxy"

    def __init__(self, proxy: ProxyServer):
        self.proxy = proxy

    def intercept_request(self, call: Any, proceed: Callable[[], Any]) -> Any:
        # basic/versioning §Backward Compatibility: a request with the modern _meta is 2026-07-28's
        envelope = lifecycle.read_envelope(call.params)
        if envelope is None:
            return self.proxy.serve_handshake(call, proceed)
        return self.proxy.serve_modern(call, proceed, envelope)


class ProxyServer(Server):
    """A server that serves what another server serves (see the module docstring)."""

    def __init__(
        self,
        connect: Callable[..., Client],
        *,
        name: str | None = None,
        max_back_connections: int = DEFAULT_MAX_BACK_CONNECTIONS,
        max_forwarded: int = DEFAULT_MAX_FORWARDED,
        ask_timeout: float = DEFAULT_ASK_TIMEOUT,
        client_options: dict[str, Any] | None = None,
    ):
        for setting, value in (
            ("max_back_connections", max_back_connections),
            ("max_forwarded", max_forwarded),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{setting} must be a positive int, not {value!r}")
        if max_back_connections < 2:
            raise ValueError("max_back_connections must be at least 2 (the watcher and one more)")
        #: Opens a back connection: ``connect(**client_options) -> Client``.
        self.open_back = connect
        #: Keywords for every back Client.
        self.client_options = dict(client_options or {})
        #: Back connections held at most (the watcher, sessions and the pool).
        self.max_back_connections = max_back_connections
        #: Forwarded requests that may ask, in flight or parked, at most.
        self.max_forwarded = max_forwarded
        #: Seconds a question of the target waits for the front client (and a parked request for its retry).
        self.ask_timeout = ask_timeout
        self._lock = threading.Lock()
        self._sessions: dict[Any, BackLink] = {}  # handshake-era front connection -> its link
        self._greeted: weakref.WeakSet[Any] = weakref.WeakSet()  # front connections initialized
        self._opening = threading.Lock()
        self._idle: list[BackLink] = []  # the pool's connections not leased now
        self._leased = 0
        self._parked: dict[str, Forward] = {}
        self._forwards = 0
        self._links_open = 1  # the watcher
        self._pool = ThreadPoolExecutor(max_forwarded, thread_name_prefix="mcp-proxy")
        #: The shared back connection: capabilities, 2026 listings, listen streams.
        self.watcher = BackLink(
            self,
            None,
            on_list_changed=self._publish_list_changed,
            on_resource_updated=self._publish_updated,
        )
        back = self.watcher.client
        # basic/versioning: a 2026 front request's log level is its own, so a shared connection
        # asks for every message and the front keeps those at the request's level (Front.log).
        self.watcher.set_log_level("debug")
        #: An HTTP target is one server behind every connection; any other (a command) is one
        #: process per connection, so 2026 requests that may ask go through the watcher, in turn.
        self.http_target = type(back.session.transport).__module__.startswith("mcp_ref.http")
        self._turn = threading.Lock()
        info = back.server_info
        super().__init__(
            name or (info.name if info is not None else "proxy"),
            info.version if info is not None and info.version else "0.1.0",
            instructions=back.instructions,
            extensions=[_FrontDoor(self)],
        )

    # -- what the front declares ---------------------------------------------------------------

    def capabilities(self, version: str | None = None, caller: Any = None) -> dict:
        """The target's capabilities, as the front's at ``version``."""
        back = self.watcher.client.server_capabilities
        caps = {key: dict(back[key]) for key in MIRRORED if isinstance(back.get(key), dict)}
        if "completions" in back and lifecycle.at_least(version, lifecycle.COMPLETIONS_CAPABILITY):
            caps["completions"] = {}
        return caps

    def offers(self, capability: str, version: str | None = None) -> bool:
        """True when the target offers ``capability``."""
        return capability in self.capabilities(version)

    # -- serving the handshake era ---------------------------------------------------------------

    def serve_handshake(self, call: Any, proceed: Callable[[], Any]) -> Any:
        """A handshake-era front request: on its session's own back connection."""
        method, params, connection = call.method, call.params, call.caller
        if method == "initialize":
            result = proceed()
            self._greeted.add(connection)  # its back connection is opened at its first request
            return result
        if method not in PASSED and method not in MRTR_METHODS and method not in SESSION_METHODS:
            return proceed()
        connection.lifecycle.check_receive(method)  # before initialized: refused as usual
        if connection not in self._greeted:
            # a stateless HTTP request (no initialize on its connection): served as a 2026 one is
            return self._serve_sessionless(call, proceed)
        with _errors_of(method, None):
            link = self._session_link(connection)
        if method == "logging/setLevel":
            result = proceed()  # the front session's own level, checked and kept
            link.set_log_level(params.get("level"))
            return result
        uri = params.get("uri")
        if method in ("resources/subscribe", "resources/unsubscribe"):
            if not isinstance(uri, str):
                raise InvalidParams("Invalid params: uri must be a string")
            with _errors_of(method, None):
                if method == "resources/subscribe":
                    link.client.subscribe(uri)
                else:
                    link.client.unsubscribe(uri)
            return {}
        front = Front(connection, call.context, None)
        if method in MRTR_METHODS:
            forward = self._start(link, method, params, front, connection.owner, hold="session")
            with _errors_of(method, None):
                return _plain(forward.serve(front))
        with _errors_of(method, None):
            return _plain(link.client.request(method, _back_params(params)))

    def _session_link(self, connection: Any) -> BackLink:
        """The back connection of a handshake-era front session, opened at its first request."""
        link = self._sessions.get(connection)
        if link is not None:
            return link
        with self._opening:  # one opening at a time: a session's concurrent first requests share it
            link = self._sessions.get(connection)
            if link is None:
                link = self._open_session(connection)
                with self._lock:
                    self._sessions[connection] = link
                # closed with the session: one thread per session link (at most max_back_connections)
                threading.Thread(
                    target=self._end_with,
                    args=(connection,),
                    name="mcp-proxy-session",
                    daemon=True,
                ).start()
        return link

    def _end_with(self, connection: Any) -> None:
        connection.session.wait_closed()
        self.end_session(connection)

    def _open_session(self, connection: Any) -> BackLink:
        with self._lock:
            self._count_link()
        front = weakref.ref(connection)  # the link must not keep the front connection alive

        def list_changed(kind: str) -> None:
            session = front()
            if session is not None:
                session.list_changed(kind)

        def updated(uri: str) -> None:
            session = front()
            if session is not None:
                session.notify("notifications/resources/updated", {"uri": uri})

        def logged(message: Any) -> None:
            forward = link.forward
            now = None if forward is None else forward.front
            session = front()
            if now is not None:
                now.log(message.level, message.data, message.logger)
            elif session is not None:
                session.log(message.level, message.data, message.logger)

        try:
            link = BackLink(
                self,
                dict(connection.client_capabilities),
                on_list_changed=list_changed,
                on_resource_updated=updated,
                on_log=logged,
            )
            return link
        except BaseException:
            with self._lock:
                self._links_open -= 1
            raise

    def _serve_sessionless(self, call: Any, proceed: Callable[[], Any]) -> Any:
        """A handshake-era request with no session behind it (stateless HTTP)."""
        method, params = call.method, call.params
        if method == "logging/setLevel":
            return proceed()
        if method in SESSION_METHODS:
            raise InvalidParams(
                f"Invalid params: {method} needs a session; this proxy is stateless"
            )
        if method in MRTR_METHODS:
            front = Front(call.caller, call.context, None)
            with _errors_of(method, None):
                link, hold = self._link_for_2026()
            forward = self._start(link, method, params, front, call.caller.owner, hold=hold)
            with _errors_of(method, None):
                return _plain(forward.serve(front))
        with _errors_of(method, None):
            return _plain(self.watcher.client.request(method, _back_params(params)))

    # -- serving 2026-07-28 ----------------------------------------------------------------------

    def serve_modern(self, call: Any, proceed: Callable[[], Any], envelope: Any) -> Any:
        """A 2026-07-28 front request: stateless, so on the watcher or a leased connection."""
        method, params = call.method, call.params
        call.context.envelope = envelope
        if method == "subscriptions/listen":
            self._watch(params)
            return proceed()
        if method not in PASSED and method not in MRTR_METHODS:
            return proceed()
        front = Front(call.caller, call.context, envelope)
        if method in MRTR_METHODS:
            state = params.get("requestState")
            if state is not None:
                forward = self._unpark(state, call.caller.owner)
                forward.answer(params.get("inputResponses"))
            else:
                with _errors_of(method, envelope):
                    link, hold = self._link_for_2026()
                forward = self._start(link, method, params, front, call.caller.owner, hold=hold)
            with _errors_of(method, envelope):
                result = forward.serve(front)
            if result.get("resultType") == lifecycle.INPUT_REQUIRED:
                return lifecycle.complete_result(
                    result, self.server_info(envelope.version), lifecycle.INPUT_REQUIRED
                )
        else:
            with _errors_of(method, envelope):
                result = self.watcher.client.request(method, _back_params(params))
        result = _plain(result, keep_hints=True)
        if method != "tools/call":
            # 2026-07-28 server/utilities/caching: "Servers MUST include caching hints" on these
            from .server.connection import add_hints

            add_hints(self, method, params, result)
        return lifecycle.complete_result(result, self.server_info(envelope.version))

    def _watch(self, params: dict) -> None:
        """A 2026 listen stream names resources: the watcher subscribes to them at the target."""
        notifications = params.get("notifications")
        uris = (
            notifications.get("resourceSubscriptions") if isinstance(notifications, dict) else None
        )
        if not isinstance(uris, list):
            return
        watcher = self.watcher
        if not watcher.client.server_capabilities.get("resources", {}).get("subscribe"):
            return
        for uri in uris:
            if not isinstance(uri, str) or uri in watcher.subscribed:
                continue
            if len(watcher.subscribed) >= MAX_WATCHED_URIS:
                log.warning("proxy: %d resources watched already; %s is not", MAX_WATCHED_URIS, uri)
                return
            try:
                watcher.client.subscribe(uri)
            except McpError as exc:
                log.info("proxy: the target refused a subscription to %s: %s", uri, exc)
                continue
            watcher.subscribed.add(uri)

    def _publish_list_changed(self, kind: str) -> None:
        self.subscriptions.publish(f"notifications/{kind}/list_changed")

    def _publish_updated(self, uri: str) -> None:
        self.subscriptions.publish("notifications/resources/updated", {"uri": uri})

    # -- forwards, leases, parking ---------------------------------------------------------------

    def _start(
        self, link: BackLink, method: str, params: dict, front: Front, owner: Any, *, hold: str
    ) -> Forward:
        with self._lock:
            if self._forwards >= self.max_forwarded:
                busy = True
            else:
                busy = False
                self._forwards += 1
        if busy:
            self._let_go(link, hold)
            raise ServerBusy(
                f"Server busy: this proxy has {self.max_forwarded} requests in flight; retry later",
                data={"limit": self.max_forwarded},
            )
        forward = Forward(self, link, front, owner)
        forward.hold = hold
        link.forward = forward
        _current.forward = forward
        try:
            forward.call = link.client.connection.start(
                method, _back_params(params), on_progress=forward.progress
            )
        except BaseException:
            forward.finish()
            raise
        finally:
            _current.forward = None
        self._pool.submit(forward.run)
        return forward

    def release(self, forward: Forward) -> None:
        """A forward has ended: forget it, and give its leased connection back."""
        with self._lock:
            self._forwards -= 1
            if forward.token is not None:
                self._parked.pop(forward.token, None)
        link = forward.link
        if link.forward is forward:
            link.forward = None
        self._let_go(link, forward.hold)

    def _let_go(self, link: BackLink, hold: str) -> None:
        if hold == "leased":
            self._return(link)
        elif hold == "turn":
            self._turn.release()

    def _link_for_2026(self) -> tuple[BackLink, str]:
        """The back connection of a 2026 front request that may ask, and how it is held."""
        if self.http_target:
            return self._lease(), "leased"
        # One process behind one connection: a handshake-era target's questions name no request,
        # and its state is the process's, so these requests take turns on the watcher.
        if not self._turn.acquire(timeout=self.ask_timeout):
            raise ServerBusy(
                "Server busy: the server behind this proxy is answering another request; retry later"
            )
        return self.watcher, "turn"

    def park(self, forward: Forward) -> None:
        """Keep a 2026 front's forward until its retry names its ``requestState``."""
        with self._lock:
            self._parked[forward.token] = forward  # type: ignore[index]

    def _unpark(self, state: Any, owner: Any) -> Forward:
        with self._lock:
            forward = self._parked.pop(state, None) if isinstance(state, str) else None
        if forward is None:
            # basic/patterns/mrtr §Server Requirements: "MUST reject state that fails verification"
            raise InvalidParams(
                "Invalid params: requestState is unknown or has expired; send the request again "
                "without it"
            )
        if forward.owner != owner:
            self.park(forward)  # not the caller's: left for its owner
            raise InvalidParams("Invalid params: requestState belongs to another caller")
        return forward

    def _count_link(self) -> None:
        if self._links_open >= self.max_back_connections:
            raise ServerBusy(
                f"Server busy: this proxy holds {self.max_back_connections} connections to its "
                "target; retry later",
                data={"limit": self.max_back_connections},
            )
        self._links_open += 1

    def _lease(self) -> BackLink:
        with self._lock:
            if self._idle:
                self._leased += 1
                return self._idle.pop()
            self._count_link()
            self._leased += 1
        try:
            link = BackLink(self, None)
            link.set_log_level("debug")  # kept at each request's own level by the front
            return link
        except BaseException:
            with self._lock:
                self._links_open -= 1
                self._leased -= 1
            raise

    def _return(self, link: BackLink) -> None:
        with self._lock:
            self._leased -= 1
            self._idle.append(link)

    def _release_link(self, link: BackLink) -> None:
        with self._lock:
            self._links_open -= 1
        link.close()

    def remove_connection(self, connection: Any) -> None:
        """A front session ended (HTTP): its back connection is closed too."""
        super().remove_connection(connection)
        self.end_session(connection)

    def end_session(self, connection: Any) -> None:
        """Close the back connection of a handshake-era front ``connection``, if it has one."""
        with self._lock:
            link = self._sessions.pop(connection, None)
        if link is not None:
            self._release_link(link)

    def close(self) -> None:
        """Close every back connection (the proxy serves nothing more)."""
        with self._lock:
            links = [*self._sessions.values(), *self._idle, self.watcher]
            self._sessions.clear()
            self._idle.clear()
        for link in links:
            link.close()
        self._pool.shutdown(wait=False, cancel_futures=True)


# -- results and errors across eras ---------------------------------------------------------------


def _back_params(params: dict) -> dict:
    """A front request's params as the back request's: without the front's envelope, progress
    token and MRTR fields (the back client adds its own); the caller's own ``_meta`` keys stay."""
    out = {k: v for k, v in params.items() if k not in ("_meta", "inputResponses", "requestState")}
    meta = params.get("_meta")
    if isinstance(meta, dict):
        own = {
            k: v
            for k, v in meta.items()
            if k != "progressToken" and not k.startswith("io.modelcontextprotocol/")
        }
        if own:
            out["_meta"] = own
    return out


def _plain(result: dict, *, keep_hints: bool = False) -> dict:
    """A back result without what belongs to the back's era and identity (``resultType``, the
    target's ``serverInfo``; caching hints unless ``keep_hints``)."""
    out = {k: v for k, v in result.items() if k != "resultType"}
    if not keep_hints:
        out.pop("ttlMs", None)
        out.pop("cacheScope", None)
    meta = out.get("_meta")
    if isinstance(meta, dict) and lifecycle.SERVER_INFO in meta:
        meta = {k: v for k, v in meta.items() if k != lifecycle.SERVER_INFO}
        if meta:
            out["_meta"] = meta
        else:
            del out["_meta"]
    return out


class _errors_of:
    """The target's errors as the front's: its own codes, translated where the eras differ; a
    failure to reach it a plain error naming no internals."""

    def __init__(self, method: str, envelope: Any):
        self.method = method
        self.modern = envelope is not None

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Any, traceback: Any) -> None:
        if exc is None or isinstance(exc, RequestCancelled):
            return
        if isinstance(exc, McpError):
            data = exc.data
            names_uri = isinstance(data, dict) and "uri" in data
            if self.method == "resources/read" and names_uri:
                # 2026-07-28 changelog 6: "resource not found" is -32602 (was -32002)
                if self.modern and exc.code == ResourceNotFound.code:
                    raise InvalidParams(exc.message, data=data) from None
                if not self.modern and exc.code == InvalidParams.code:
                    raise ResourceNotFound(exc.message, data=data) from None
            raise McpError(exc.message, code=exc.code, data=data) from None
        if isinstance(exc, Exception):
            log.warning("proxy: %s failed at the target: %s", self.method, exc)
            raise InternalError(
                f"Internal error: the server behind this proxy did not answer {self.method}"
            ) from None
