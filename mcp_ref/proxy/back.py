"""A connection to the proxy's target (:class:`BackLink`): a Client whose questions go to the
front."""

from __future__ import annotations

import contextlib
import logging
import shlex
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .. import lifecycle
from ..cancellation import Cancellation
from ..client import Client
from ..client.connection import ModernCall, envelope_meta, with_envelope
from ..errors import RequestCancelled, RequestRefused, ServerBusy
from ..extension import Extension
from .forward import (
    ASK_CAPABILITY,
    ASK_METHODS,
    CANCEL_GRACE,
    Forward,
    Front,
    Plain,
    callbacks_run,
    current,
    put_question,
    withdrawn_refusal,
)
from .translate import back_params

log = logging.getLogger(__name__)

#: A handshake-era session's listings and completions its command target has not answered yet, at
#: most (on its own connection, cancelled ones included; see BackLink.pass_on): past it, its next
#: ones are refused with -31000 until the target answers one, or a cancelled one's timeout passes.
MAX_UNANSWERED = 16


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
        if front_caps is None and version in lifecycle.MODERN_VERSIONS:
            # 2026-07-28: capabilities are per request; a forwarded one declares its front
            # request's (start_request), one of the proxy's own has no client to answer it
            return {}
        if front_caps is None:  # shared: whatever a front client may offer (checked when asked)
            front_caps = {"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {}}
        return client_capabilities(front_caps, version)

    def start_request(
        self,
        connection: Any,
        method: str,
        params: dict | None,
        options: dict[str, Any],
        start: Callable[[str, dict | None, dict[str, Any]], Any],
    ) -> Any:
        # ``front_capabilities``: what the front client declared for the request forwarded now
        front = options.pop("front_capabilities", None)
        if front is None or not connection.modern:
            return start(method, params, options)  # the handshake era declared them at initialize
        # 2026-07-28 basic/index §_meta: every request carries its own clientCapabilities, so the
        # target is told what the client in front declared for this request, on every round.
        # The proxy's extension is the client's last, so ``start`` is the call itself: made here.
        declared = client_capabilities(front, connection.protocol_version)
        declares = options.pop("declares", ())
        return ModernCall(_Declaring(connection, declared), method, params, options, declares)

    def methods(self, version: str | None) -> dict[str, Callable[..., Any]]:
        return dict.fromkeys(ASK_METHODS, self._answer)

    def _answer(self, connection: Any, context: Any, params: dict) -> dict:
        # a 2026 target's questions are answered on the thread waiting for the call's result
        forward = getattr(current, "forward", None)
        if forward is not None:
            return forward.ask(context.method, params, context.cancelled)
        return self.link.ask(context.method, params, context.cancelled)


class _Declaring:
    """A 2026-07-28 back connection as one forwarded call sees it: each request the call sends
    (each of its rounds) declares ``capabilities`` where the proxy's back client would declare
    what a client answers (sampling, elicitation, roots); all else is the connection's own."""

    def __init__(self, connection: Any, capabilities: dict):
        self.connection = connection
        self.capabilities = capabilities

    def __getattr__(self, name: str) -> Any:
        return getattr(self.connection, name)

    def send_request(
        self, method: str, params: dict | None = None, *, declares: tuple[str, ...] = (), **options
    ) -> Any:
        """As the connection's own ``send_request``, with the front request's capabilities."""
        connection = self.connection
        connection.lifecycle.check_send(method)
        meta = envelope_meta(connection, declares=declares)
        kept = {
            key: value
            for key, value in meta[lifecycle.CLIENT_CAPABILITIES].items()
            if key not in ASK_CAPABILITY.values()
        }
        declared = {**kept, **self.capabilities}
        meta = {**meta, lifecycle.CLIENT_CAPABILITIES: declared}
        return connection.session.send_request(method, with_envelope(params, meta), **options)


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
        proxy: Any,  # the ProxyServer: its client_options and open_back
        declared: dict | None,
        *,
        session: Any = None,
        on_list_changed: Callable[[str], None] | None = None,
        on_resource_updated: Callable[[str], None] | None = None,
        on_log: Callable[[Any], None] | None = None,
        on_elicitation_complete: Callable[[Any], None] | None = None,
    ):
        self.proxy = proxy
        #: The handshake-era front connection whose own connection this is (None: one shared, or
        #: leased by turns); weak, so that the link keeps no front connection alive.
        self.session: Callable[[], Any] = (
            (lambda: None) if session is None else weakref.ref(session)
        )
        #: Every request in flight on it now (a :class:`Forward`, or a :class:`Plain` request:
        #: a listing, a completion, one of the proxy's own), oldest first; guarded by :attr:`lock`.
        self.running: list[Forward | Plain] = []
        self.lock = threading.Lock()
        #: The cancelled listings and completions the target has not answered yet, each with when
        #: it is given up and how (:meth:`_withdraw`); one thread (:meth:`_expire`) gives them up
        #: while there are any.  Guarded by :attr:`lock`, which :attr:`withdrawn_changed` wakes.
        self.withdrawn: dict[Plain, tuple[float, Callable[[], None]]] = {}
        self.withdrawn_changed = threading.Condition(self.lock)
        self.expiring = False  # True while that thread runs
        self.log_level: str | None = None
        self.subscribed: set[str] = set()
        #: True once its close has begun: not alive from then on.
        self.ended = False
        #: Set once its close has ended (its process, if it has one, has exited or been ended).
        self.closed = threading.Event()
        options = dict(proxy.client_options)
        options.update(
            extensions=[*options.get("extensions", ()), _Router(self, declared)],
            on_list_changed=on_list_changed,
            on_resource_updated=on_resource_updated,
            on_log=on_log or self._log,
            on_elicitation_complete=on_elicitation_complete,
            log_level=None,
        )
        self.client: Client = proxy.open_back(**options)

    def start(self, method: str, params: dict, front: Front | None, **options: Any) -> Any:
        """Start ``method`` at the target for ``front``'s request (None: the proxy's own) with its
        params (:func:`back_params`): at 2026-07-28 declaring what its client declared for it."""
        if front is not None:
            options["front_capabilities"] = front.capabilities
        return self.client.connection.start(method, back_params(params), **options)

    def pass_on(self, method: str, params: dict, front: Front) -> dict:
        """Send ``front``'s request as it is (a listing, a completion) and wait for its answer,
        counted in flight here until then.  The front request's cancellation cancels it at the
        target (2025-11-25 basic/utilities/cancellation: the target is told), as a forwarded
        call's does (:class:`Forward`); a handshake-era command target may go on with it, so
        there it still counts in flight until the target answers it (:meth:`_withdraw`)."""
        if self.client.connection.modern or self.proxy.http_target:
            # its messages come with its own answers (2026-07-28), or on its own HTTP stream,
            # which the cancellation closes: nothing of it can come once it is cancelled
            with self.carrying(front):
                return cancelled_with(self.start(method, params, front), front.context.cancelled)
        request = Plain(front)
        self._enter_unless_full(request)
        kept = False  # True: withdrawn, and left here once the target has answered it
        try:
            call = self.start(method, params, front)
            pending = getattr(call, "pending", None)  # (an extension's call of its own: None)
            if pending is None:
                return cancelled_with(call, front.context.cancelled)
            if not settled_or_cancelled(pending, front.context.cancelled):
                self._withdraw(request, call)
                kept = True
                raise RequestCancelled("cancelled by the client")
            return call.result()
        finally:
            if not kept:
                callbacks_run(self)
                self.leave(request)

    def _withdraw(self, request: Plain, call: Any) -> None:
        """``request``'s front request was cancelled before the handshake-era target answered it.
        The target is told (2025-11-25 basic/utilities/cancellation); receivers only "SHOULD" stop
        and "MAY ignore" a cancellation, and its log messages and questions name no request
        (:meth:`_log`, :meth:`ask`): so it still counts in flight here, its client told and asked
        nothing more, until the target answers it or the connection ends.  As a forwarded call's
        (:meth:`Forward._withdraw`): on the watcher, shared by every client, for
        :data:`CANCEL_GRACE` at most, then the connection is closed, its process with it (a
        target that stops as asked never answers); on a session's own, until the call's timeout
        (without one, ``ask_timeout`` from now), then it is given up; it counts among the
        session's :data:`MAX_UNANSWERED` (:meth:`_enter_unless_full`).  The connection's one
        :meth:`_expire` thread gives them up."""
        reason = "cancelled by the client in front of the proxy"
        request.withdrawn = True
        pending = call.pending
        if self.session() is None:  # the watcher
            expires_at = time.monotonic() + CANCEL_GRACE
            give_up: Callable[[], None] = self._unanswered
        else:
            deadline = pending.first_deadline
            expires_at = time.monotonic() + self.proxy.ask_timeout if deadline is None else deadline

            def give_up() -> None:
                call.cancel(reason)

        with self.lock:  # given up by the one thread that gives them up (no thread of its own)
            self.withdrawn[request] = (expires_at, give_up)
            self.withdrawn_changed.notify_all()
            start = not self.expiring
            self.expiring = True
        if start:
            threading.Thread(target=self._expire, name="mcp-proxy-withdrawn", daemon=True).start()

        def settled(_: Any) -> None:
            with self.lock:
                self.withdrawn.pop(request, None)
                self.withdrawn_changed.notify_all()
            # left after the callbacks of what the target said before (they run in arrival order)
            if not self.client.session.call_soon(self.leave, request, keep=True):
                self.leave(request)  # the connection has ended: no callback will run

        pending.add_done_callback(settled)  # its answer, its give-up, the connection's end
        with contextlib.suppress(Exception):  # the connection has ended: nothing more will come
            self.client.session.notify(
                "notifications/cancelled", {"requestId": call.id, "reason": reason}
            )

    def _expire(self) -> None:
        """Give up each withdrawn request once its time has come (:meth:`_withdraw`), until none
        is left: one thread for all of them on this connection."""
        while True:
            with self.lock:
                while True:
                    if not self.withdrawn:
                        self.expiring = False  # the next withdrawn request starts another
                        return
                    now = time.monotonic()
                    due = [r for r, (at, _) in self.withdrawn.items() if at <= now]
                    if due:
                        break
                    first = min(at for at, _ in self.withdrawn.values())
                    self.withdrawn_changed.wait(first - now)
                give_ups = [self.withdrawn.pop(request)[1] for request in due]
            for give_up in give_ups:
                try:
                    give_up()
                except Exception:  # the connection has ended meanwhile: nothing to give up
                    log.debug("giving up a withdrawn request failed", exc_info=True)

    def _unanswered(self) -> None:
        # a withdrawn request on the watcher went unanswered for CANCEL_GRACE: the connection is
        # closed (the next request opens another) and the listen streams are fed by a new one
        self.end()
        self.proxy.watch_again()

    def _enter_unless_full(self, request: Plain) -> None:
        """:meth:`enter`; on a session's own connection, refused first (-31000 "server busy",
        ``data.limit``) while :data:`MAX_UNANSWERED` of its listings and completions are
        unanswered there, cancelled ones included: a target that does as asked (2025-11-25
        basic/utilities/cancellation: receivers "SHOULD ... Not send a response for the cancelled
        request") never answers a cancelled one, so each would stay until its timeout
        (docs/proxy.md, "Connections to the target, and their bounds")."""
        limit = MAX_UNANSWERED
        with self.lock:
            unanswered = sum(isinstance(other, Plain) for other in self.running)
            full = self.session() is not None and unanswered >= limit
            if not full:
                self.running.append(request)
        if full:
            raise ServerBusy(
                f"Server busy: this session has {limit} listings and completions the server "
                "behind this proxy has not answered (cancelled ones included); retry later",
                data={"limit": limit},
            )

    def enter(self, request: Forward | Plain) -> None:
        """``request`` is in flight here from now on (before it is sent)."""
        with self.lock:
            self.running.append(request)

    def leave(self, request: Forward | Plain) -> None:
        """``request`` is no longer in flight here."""
        with self.lock:
            if request in self.running:
                self.running.remove(request)

    @contextlib.contextmanager
    def carrying(self, front: Front | None) -> Iterator[None]:
        """Around a request sent as it is, for ``front`` (None: the proxy's own): counted in flight
        until its answer, and the callbacks of what the target said before it, have run."""
        request = Plain(front)
        self.enter(request)
        try:
            yield
        finally:
            callbacks_run(self)
            self.leave(request)

    def ask(self, method: str, params: dict | None, withdrawn: Cancellation) -> dict:
        """The answer to a question of a handshake-era target, whose requests name none of ours:
        it is the request's when exactly one request of any kind is in flight here (a cancelled
        one included, until the target has answered it), else nobody's but a session's.  A
        question that may be another client's is put to no client: the target gets an error."""
        with self.lock:
            running = list(self.running)
        only = running[0] if len(running) == 1 else None
        if isinstance(only, Plain) and only.withdrawn:  # its client is asked nothing more
            raise withdrawn_refusal(method)
        if isinstance(only, Forward):
            return only.ask(method, params, withdrawn)
        front = None if only is None else only.front
        timeout = self.proxy.ask_timeout
        if front is not None and front.envelope is None:
            return front.ask(method, params, timeout, (withdrawn,))
        session = self.session()
        if session is not None:
            # A session's own connection: every request on it is its client's (the target told
            # the roots changed, a completion that looks at them ...).  2025-11-25 client/roots:
            # -32601 would say "Client does not support roots", declared on its behalf.
            return put_question(
                session, session.client_capabilities, method, params, timeout, ends=(withdrawn,)
            )
        if len(running) > 1:
            why = "it names no request, and several clients' requests are in flight here"
        else:
            # 2026-07-28 basic/patterns/mrtr §Supported Requests: a 2026 listing or completion
            # cannot ask its client anything
            why = "no request in flight here can put it to a client"
        raise RequestRefused(f"Request refused: {method}: {why}")

    def _log(self, message: Any) -> None:
        # A log message names no request (2025-11-25 server/utilities/logging): it is the request's
        # when exactly one request of any kind is in flight here, else nobody's (dropped: another
        # client's message must not reach this one).  On a session's own connection every request
        # is its client's: the session gets it then, tied to none of them.
        with self.lock:
            only = self.running[0] if len(self.running) == 1 else None
        withdrawn = isinstance(only, Plain) and only.withdrawn  # its client is told nothing more
        front = None if only is None or withdrawn else only.front
        if front is not None:
            front.log(message.level, message.data, message.logger)
            return
        session = self.session()
        if session is not None:
            session.log(message.level, message.data, message.logger)

    @property
    def alive(self) -> bool:
        """False once the connection to the target has ended (closed, or the target went away)."""
        return not self.ended and not self.client.session.is_closed

    def set_log_level(self, level: str | None) -> None:
        """Ask the target for log messages at ``level`` (None: none), unless asked already."""
        if level == self.log_level or "logging" not in self.client.server_capabilities:
            return
        if level is None and not self.client.connection.modern:
            return  # the handshake era cannot take it back: messages are then not forwarded
        self.client.set_logging_level(level)
        self.log_level = level

    def close(self) -> None:
        """End the connection to the target (the first call does; a later one returns at once)."""
        if self._ending():
            self._close()

    def end(self) -> None:
        """:meth:`close` without waiting: not alive from now on, closed on a thread of its own."""
        if self._ending():
            threading.Thread(target=self._close, name="mcp-proxy-close", daemon=True).start()

    def _ending(self) -> bool:
        with self.lock:
            first = not self.ended
            self.ended = True
        if first:  # until it has closed, the proxy's close waits for it too (ProxyServer.close)
            self.proxy.links.ending.add(self)
        return first

    def _close(self) -> None:
        try:
            self.client.close()
        except Exception:  # closing a connection that already broke
            log.debug("closing a back connection failed", exc_info=True)
        finally:
            self.closed.set()
            self.proxy.links.ending.discard(self)


def cancelled_with(call: Any, cancelled: Cancellation) -> dict:
    """``call``'s result, the call cancelled (the target told) once ``cancelled`` is set."""

    def cancel() -> None:
        call.cancel("cancelled by the client in front of the proxy")

    cancelled.add_callback(cancel)
    try:
        return call.result()
    finally:
        cancelled.remove_callback(cancel)


def settled_or_cancelled(pending: Any, cancelled: Cancellation) -> bool:
    """Wait until ``pending`` is settled or past its deadline (True: its ``result()`` has its
    outcome now, or gives it up), or until ``cancelled`` is set first (False); neither settles
    it."""
    woken = threading.Event()
    pending.add_done_callback(lambda _: woken.set())
    cancelled.add_callback(woken.set)
    try:
        while not pending.done():
            if cancelled.is_set():
                return False
            deadline = pending.first_deadline  # (progress may move it)
            if deadline is None:
                woken.wait()
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            woken.wait(left)
        return True
    finally:
        cancelled.remove_callback(woken.set)
