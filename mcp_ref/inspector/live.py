"""The inspector's live side: :class:`InspectedServer`, one client connected to the inspected server,
and every operation the page may ask of it.

The client is made exactly as the other ``mcp-ref`` verbs make theirs
(:func:`mcp_ref.workbench.cli_verbs.connect`: the same launch, OAuth login and failure messages),
with the conversation's hooks: ``trace`` sees every JSON-RPC message, ``http_trace`` every HTTP
exchange, ``stderr`` a launched server's stderr.

It declares sampling, elicitation (form and URL modes) and roots.  Each sampling or elicitation
request of the server's is *parked* as an :class:`Ask`: pushed to the page (the ``ask`` event),
and its handler thread waits for the page's answer (:meth:`InspectedServer.answer`), at most
``answer_timeout`` seconds.  An ask ends ``answered``, ``expired`` (no answer in time: an
elicitation is answered ``cancel``, a sampling request with an error) or ``cancelled`` (the
server cancelled its request, or the connection ended) or ``failed`` (the wait itself failed:
logged, and the request fails with a clear :class:`InspectorError`, a 409 for a page's call
that would carry the answer, never a 500); each end is pushed as ``ask-done``.
The handler's thread waits on one Event, with the time left as its timeout: the page's answer,
the server's cancellation (a callback on the request's ``cancelled`` Event, whoever sets it)
and the connection's end each set it, so the ask ends the moment one of them happens; nothing
polls.  At most :data:`MAX_ASKS` wait at once: past it a request is answered at once as if it
had expired, and a note says so.

Everything the server says stays data: results go to the page as the JSON they came as, and a
failure becomes a short message (:class:`InspectorError`), never a traceback.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import (
    CapabilityError,
    ConnectionClosed,
    McpError,
    RequestCancelled,
    RequestRefused,
    RequestTimeout,
)
from ..extension import Extension
from ..http.exchange_trace import HttpRequestSeen
from ..lifecycle import LOG_LEVELS
from ..request import RequestContext
from .masking import MASK, mask_free_text, mask_url, secret_header
from .output_check import OutputChecker

log = logging.getLogger(__name__)

#: The server requests that may wait for the page at once; past it, each is answered at once as if
#: it had expired (an elicitation ``cancel``, a sampling request an error), and a note says so.
MAX_ASKS = 64
#: The tool calls that may run at once from the page; past it, a call is refused (HTTP 400).
MAX_CALLS = 256
#: The tools whose ``outputSchema`` is kept (from the listings) to check results against.
MAX_KNOWN_TOOLS = 10_000
#: The tasks this inspector started that it remembers (for "tasks" when the server cannot list them).
MAX_STARTED_TASKS = 1_000
#: A call the page cancelled before its request was sent: it is cancelled as soon as it is.
CANCEL_ASKED = "cancel asked"
#: What the page's ids (call ids) may be: at most this many characters.
MAX_ID_LENGTH = 64

LISTINGS = {
    "tools": "list_tools_page",
    "resources": "list_resources_page",
    "templates": "list_resource_templates_page",
    "prompts": "list_prompts_page",
}
#: Each listing's key in the result.
LISTED_KEY = {
    "tools": "tools",
    "resources": "resources",
    "templates": "resourceTemplates",
    "prompts": "prompts",
}


class InspectorError(Exception):
    """A request of the page's that cannot be done: ``status`` is the HTTP status for the page
    (400 a bad request, 409 not connected, 200 the server's JSON-RPC error), ``error`` the
    ``{"code", "message", "data"}`` object the page shows."""

    def __init__(self, status: int, message: str, code: int | None = None, data: Any = None):
        super().__init__(message)
        self.status = status
        self.error = {"code": code, "message": message, "data": data}


def bad_request(message: str) -> InspectorError:
    """An :class:`InspectorError` for a request of the page's that is wrong (HTTP 400)."""
    return InspectorError(400, message)


@dataclass
class Ask:
    """A request of the server's waiting for the page's answer."""

    ask_id: str
    #: "sampling" or "elicitation".
    kind: str
    #: An elicitation's mode ("form" or "url"); None for sampling.
    mode: str | None
    #: The request's params, as the server sent them.
    params: dict[str, Any]
    #: When it expires, in epoch seconds (for the page), and on the monotonic clock (for the wait).
    expires: float
    deadline: float
    #: Set when the wait ends before the deadline: the page answered, the server cancelled its
    #: request, or the connection ended (the one Event the handler's thread waits on).
    ended: threading.Event = field(default_factory=threading.Event)
    #: The page's answer: ``{"action", "content", "result"}`` (``{"action": "connection-ended"}``
    #: when the connection ended first); empty while there is none.
    answer: dict[str, Any] = field(default_factory=dict)
    #: True once the server cancelled its request (the request's ``cancelled`` Event was set).
    server_cancelled: bool = False

    def end_by_cancellation(self) -> None:
        """The server cancelled its request: wake the wait (run on the cancelling thread)."""
        self.server_cancelled = True
        self.ended.set()

    def event(self) -> dict:
        """The ``ask`` event the page is sent."""
        return {
            "ask": self.ask_id,
            "kind": self.kind,
            "mode": self.mode,
            "params": self.params,
            "expires": self.expires,
        }


class InspectedServer:
    """The inspected server: one :class:`~mcp_ref.client.Client` to it (re-made by :meth:`connect`),
    the operations of the page's API, and the server's requests parked for the page.

    ``args``: the command line (``mcp_ref.workbench.cli_grammar.parse``): TARGET and the options
    every verb takes (``--era``, ``--transport``, ``--header``, ``--timeout``, ``--connect-timeout``,
    ``--root``, ``--log-level``, OAuth's ``--no-browser``).  ``conversation``: the record
    (:class:`~mcp_ref.inspector.conversation.Conversation`); ``trace``: the hook the client's
    messages go to (default: the conversation's).  ``answer_timeout``: how long a server request
    waits for the page.  Events for the page go to the functions added with :meth:`add_listener`,
    as ``listener(event, data)``.  Thread-safe.
    """

    def __init__(
        self,
        args: Any,
        conversation: Any,
        *,
        trace: Callable[[str, bytes], None] | None = None,
        answer_timeout: float | None = None,
    ):
        from pathlib import Path

        self.args = args
        self.conversation = conversation
        self.trace = trace or conversation.trace
        self.answer_timeout = answer_timeout or getattr(args, "answer_timeout", None) or 300.0
        self._lock = threading.Lock()  # the client, the tables below
        self._connecting = threading.Lock()  # one connect at a time
        self._client: Any = None
        self._closed = False
        self.connecting = False
        #: Why the last connect failed (None: it did not).
        self.error: str | None = None
        self._listeners: list[Callable[[str, dict], None]] = []
        self._asks: dict[str, Ask] = {}
        self._ask_ids = itertools.count(1)
        self._calls: dict[str, Any] = {}
        self._output_schemas: dict[str, Any] = {}
        self._output_checker = OutputChecker()
        self._started_tasks: dict[str, str] = {}  # taskId -> the tool's name
        self._being_made: ClientBeingMade | None = None  # the client of a connect under way
        self.roots: list[dict] = [
            {"uri": Path(path).resolve().as_uri()} for path in getattr(args, "root", None) or []
        ]
        self.log_level: str | None = getattr(args, "log_level", None) or "info"
        #: The names (lower case) of the headers given with ``--header``: their values are masked.
        self._given_headers = frozenset(
            header.partition(":")[0].strip().lower()
            for header in getattr(args, "header", None) or ()
        )

    @property
    def target(self) -> str:
        """TARGET as the page shows it (:func:`shown_target`)."""
        return shown_target(self.args.target)

    # -- events for the page -------------------------------------------------------------------

    def add_listener(self, listener: Callable[[str, dict], None]) -> None:
        """Send the page's events (``state``, ``ask``, ``ask-done``, ``progress`` ...) to ``listener``."""
        with self._lock:
            self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[str, dict], None]) -> None:
        """Stop sending events to ``listener``."""
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def publish(self, event: str, data: dict) -> None:
        """Send ``event`` to every listener (a listener that fails is logged and kept)."""
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(event, data)
            except Exception:  # a listener's bug must not break the client's threads
                log.exception("an inspector listener failed")

    def pending_asks(self) -> list[dict]:
        """The ``ask`` events of the requests waiting for the page now (for a page that (re)connects)."""
        with self._lock:
            return [ask.event() for ask in self._asks.values()]

    # -- the connection ----------------------------------------------------------------------

    def state(self) -> dict:
        """What the page shows of the connection (the contract's ``state``)."""
        with self._lock:
            client = self._client
            connecting, error = self.connecting, self.error
        state: dict[str, Any] = {
            "connected": client is not None,
            "connecting": connecting,
            "target": self.target,
            "transport": "stdio",
            "era": None,
            "protocol_version": None,
            "server_info": None,
            "instructions": None,
            "capabilities": None,
            "client_capabilities": None,
            "roots": list(self.roots),
            "log_level": self.log_level,
            "error": error,
            "replay": False,
            # the conversation's bounds: the page keeps no more than it does
            "max_records": getattr(self.conversation, "max_records", None),
            "max_bytes": getattr(self.conversation, "max_bytes", None),
        }
        if self.args.target.startswith(("http://", "https://")):
            state["transport"] = "sse" if self.args.transport == "sse" else "streamable"
        if client is None:
            return state
        if state["transport"] != "stdio":
            from ..http.client import HttpClientTransport

            transport = client.session.transport
            if isinstance(transport, HttpClientTransport) and transport.mode == "sse":
                state["transport"] = "sse"  # the 2024-11-05 HTTP+SSE transport, found by fallback
        info = client.server_info
        state.update(
            era=client.era,
            protocol_version=client.protocol_version,
            server_info=None if info is None else info.to_wire(),
            instructions=client.instructions,
            capabilities=client.server_capabilities,
            client_capabilities=client.capabilities(client.protocol_version),
        )
        return state

    def connect(self, era: str | None = None) -> dict:
        """(Re)connect, in ``era`` ("auto", "modern", "handshake"; default: the last one asked for,
        at first the command line's):
        the old client is closed first (its parked requests end ``cancelled``).  Returns the state;
        a failure to connect is in its ``error`` (the page shows it, and may try again)."""
        if era is not None and era not in ("auto", "modern", "handshake"):
            raise bad_request("era must be auto, modern or handshake")
        with self._connecting:
            with self._lock:
                old, self._client = self._client, None
                self.connecting, self.error = True, None
            if old is not None:
                self.conversation.note(
                    f"reconnecting in the {era} era" if era and era != "auto" else "reconnecting"
                )
                old.close()
            self._end_asks("cancelled")
            self.publish("state", self.state())
            if era is not None:  # kept: a later reconnect without one stays in it
                self.args = copy.copy(self.args)
                self.args.era = era
            client, error = self._open(self.args)
            with self._lock:
                closed = self._closed
                if not closed:
                    self._client, self.connecting, self.error = client, False, error
            if closed:  # closed while connecting: what was opened is not kept
                if client is not None:
                    client.close()
                return self.state()
            if client is not None:
                threading.Thread(
                    target=self._watch, args=(client,), name="inspector-watch", daemon=True
                ).start()
                self.conversation.set_revision(client.protocol_version)
                self.conversation.note(
                    f"connected over {self.state()['transport']}, {client.protocol_version}"
                    f" ({client.era} era)"
                )
            else:
                self.conversation.note(f"cannot connect: {error}")
            state = self.state()
            self.publish("state", state)
            return state

    def _watch(self, client: Any) -> None:
        """Wait for ``client``'s connection to end; if it ends while in use (the server exited, or
        the network went), the page is told: not connected, and why."""
        client.session.wait_closed()
        with self._lock:
            current = self._client is client
            if current:
                self._client = None
                self.error = "the connection to the server ended"
        if current:
            self._end_asks("cancelled")
            self.conversation.note("the connection to the server ended")
            self.publish("state", self.state())

    def _open(self, args: Any) -> tuple[Any, str | None]:
        """A connected client (and None), or None and why not."""
        from ..workbench.cli_verbs import CliError, connect

        being_made = ClientBeingMade()
        options = self._client_options(args)
        options["extensions"] = (being_made,)
        with self._lock:
            if self._closed:  # closing has begun: no server is launched that no one would stop
                return None, "the inspector is closing"
            self._being_made = being_made
        try:
            client = connect(
                args,
                self.trace,
                options=options,
                on_stderr=self.conversation.stderr,
                http_trace=self._http_trace,
            )
        except CliError as exc:
            return None, mask_free_text(str(exc))
        except (McpError, ConnectionClosed, RequestTimeout, OSError, ValueError) as exc:
            return None, mask_free_text(f"cannot connect to {self.target}: {exc}")
        finally:
            with self._lock:
                self._being_made = None
        return client, None

    def _http_trace(self, seen: Any) -> None:
        """An HTTP report to the conversation, a request's headers given with ``--header`` masked
        whatever their names (one often carries a credential of a name no masking knows:
        ``Ocp-Apim-Subscription-Key``); one named as a secret is left to the conversation's
        masking, which keeps an ``Authorization``'s scheme word."""
        if isinstance(seen, HttpRequestSeen) and self._given_headers:
            headers = tuple(
                (name, MASK)
                if name.lower() in self._given_headers and not secret_header(name)
                else (name, value)
                for name, value in seen.headers
            )
            seen = dataclasses.replace(seen, headers=headers)
        self.conversation.http_trace(seen)

    def _client_options(self, args: Any) -> dict:
        """The :class:`~mcp_ref.client.Client` keywords: what it declares, and where what the server
        sends goes."""
        return {
            "timeout": args.timeout,
            "initialize_timeout": args.connect_timeout,
            "trace": self.trace,
            "era": args.era,
            "roots": list(self.roots),
            "sampling_handler": self._sample,
            "elicitation_handler": self._elicit,
            "elicitation_modes": ("form", "url"),
            "on_log": self._on_log,
            "log_level": self.log_level,
            "on_resource_updated": self._on_updated,
            "on_list_changed": self._on_list_changed,
        }

    def close(self) -> None:
        """Close the client (a launched server is stopped) for good: parked requests end
        ``cancelled``, and a connect still under way keeps nothing: the client it is making is
        closed now (its server stopped), not left to finish after the inspector has gone."""
        with self._lock:
            client, self._client = self._client, None
            being_made, self._being_made = self._being_made, None
            self._closed = True
        self._end_asks("cancelled")
        self._output_checker.close()
        if client is not None:
            client.close()
        if being_made is not None:
            being_made.close()

    def client(self) -> Any:
        """The connected client, or :class:`InspectorError` 409."""
        with self._lock:
            client = self._client
        if client is None:
            raise InspectorError(409, "not connected: connect first")
        return client

    # -- what the server sends -----------------------------------------------------------------

    def _on_log(self, message: Any) -> None:
        self.publish(
            "log", {"level": message.level, "logger": message.logger, "data": message.data}
        )

    def _on_updated(self, uri: str) -> None:
        self.publish("updated", {"uri": uri})

    def _on_list_changed(self, what: str) -> None:
        self.publish("list-changed", {"what": what})

    def _sample(self, params: Any, context: Any = None) -> dict:
        """``sampling/createMessage``: parked for the page; accept answers with the page's result."""
        ask, outcome = self._park("sampling", None, params.to_wire(), context)
        if outcome == "answered" and ask.answer.get("action") == "accept":
            return ask.answer["result"]
        if outcome == "cancelled":
            raise RequestCancelled("the server cancelled its sampling request")
        if outcome == "answered":
            # 2025-11-25 client/sampling §Error Handling: "User rejected sampling request" is -1.
            raise RequestRefused("User rejected sampling request")
        raise RequestRefused(
            f"User rejected sampling request: no answer within {self.answer_timeout:g} s"
        )

    def _elicit(self, params: Any, context: Any = None) -> dict:
        """``elicitation/create``: parked for the page; its action (and form content) is the answer."""
        wire = params.to_wire()
        ask, outcome = self._park("elicitation", params.mode or "form", wire, context)
        if outcome != "answered":
            # client/elicitation §Response Actions: "cancel": dismissed without an explicit choice.
            return {"action": "cancel"}
        action = ask.answer["action"]
        if action == "accept" and ask.mode == "form":
            return {"action": "accept", "content": ask.answer.get("content") or {}}
        return {"action": action}

    def _park(self, kind: str, mode: str | None, params: dict, context: Any) -> tuple[Ask, str]:
        """Show a server request to the page and wait for its answer; the ask and its outcome:
        "answered", "expired" or "cancelled" (a wait that fails raises :class:`InspectorError`)."""
        now = time.time()
        ask = Ask(
            ask_id=f"a{next(self._ask_ids)}",
            kind=kind,
            mode=mode,
            params=params,
            expires=now + self.answer_timeout,
            deadline=time.monotonic() + self.answer_timeout,
        )
        with self._lock:
            full = len(self._asks) >= MAX_ASKS
            if not full:
                self._asks[ask.ask_id] = ask
        if full:
            self.conversation.note(
                f"{MAX_ASKS} server requests already wait for an answer: a {kind} request was "
                "refused at once"
            )
            return ask, "expired"
        self.publish("ask", ask.event())
        try:
            self._wait_for_the_end(ask, context)
        except Exception:  # the inspector's own failure: its terminal says why, the page what
            log.exception("the wait for the page's answer to a server's %s request failed", kind)
            failed = True
        else:
            failed = False
        finally:  # a wait that fails leaves no ask behind in the table
            with self._lock:
                self._asks.pop(ask.ask_id, None)
                answer = ask.answer  # none can come after this (answer() looks in the table)
        if failed:
            # The page's card goes (its answer could reach no one), and the request fails: in
            # the handshake era the server is told -32603; in the 2026-07-28 era the page's call
            # that answers it ends with this message (a 409, not a 500 with no reason).
            self.publish("ask-done", {"ask": ask.ask_id, "outcome": "failed"})
            raise InspectorError(
                409,
                f"the server's {kind} request could not wait for the page's answer (the "
                "inspector's terminal says why); it was not answered",
            )
        if answer.get("action") == "connection-ended":
            outcome = "cancelled"
        elif answer:
            outcome = "answered"
        elif ask.server_cancelled:
            outcome = "cancelled"
        else:
            outcome = "expired"
        self.publish("ask-done", {"ask": ask.ask_id, "outcome": outcome})
        return ask, outcome

    @staticmethod
    def _wait_for_the_end(ask: Ask, context: Any) -> None:
        """Wait until ``ask`` ends (its ``ended`` Event: the page's answer, the server's
        cancellation, the connection's end) or its deadline passes: one wait, with the time left
        as its timeout, woken by what ends it and by nothing else.

        The server's cancellation reaches the ask through a callback on the request's
        ``cancelled`` Event (:class:`~mcp_ref.request.Cancellation`), whoever sets it
        (2025-11-25 basic/utilities/cancellation: the receiver "SHOULD: Stop processing the
        cancelled request"; in the 2026-07-28 era, cancelling the call the input request belongs
        to cancels it the same way)."""
        # (a deadline further off than a lock's wait can hold is waited for as long as it can)
        left = min(max(ask.deadline - time.monotonic(), 0.0), threading.TIMEOUT_MAX)
        if not isinstance(context, RequestContext):  # a handler called without its context
            ask.ended.wait(left)
            return
        cancelled = context.cancelled
        cancelled.add_callback(ask.end_by_cancellation)
        try:
            ask.ended.wait(left)
        finally:
            cancelled.remove_callback(ask.end_by_cancellation)

    def _end_asks(self, outcome: str) -> None:
        """End every parked request (the connection ended): each wait wakes at once."""
        with self._lock:
            for ask in self._asks.values():
                ask.answer = {"action": "connection-ended"}
                ask.ended.set()

    # -- the page's requests -------------------------------------------------------------------

    def answer(self, body: dict) -> dict:
        """``api/answer``: the page's answer to a parked request."""
        ask_id = body.get("ask")
        action = body.get("action")
        with self._lock:
            ask = self._asks.get(ask_id) if isinstance(ask_id, str) else None
        if ask is None:
            raise bad_request("no such request waits for an answer (it may have ended)")
        if action not in ("accept", "decline", "cancel"):
            raise bad_request("action must be accept, decline or cancel")
        answer: dict[str, Any] = {"action": action}
        if ask.kind == "sampling" and action == "accept":
            answer["result"] = _sampling_result(body.get("result"))
        if ask.kind == "elicitation" and action == "accept" and ask.mode == "form":
            content = body.get("content")
            if content is not None and not isinstance(content, dict):
                raise bad_request("content must be an object")
            answer["content"] = content or {}
        with self._lock:
            if ask.answer or ask.ask_id not in self._asks:
                raise bad_request("this request was answered or has ended")
            ask.answer = answer
            ask.ended.set()
        return {}

    def list_page(self, body: dict) -> dict:
        """``api/list``: one page of tools, resources, templates, prompts or tasks."""
        what = body.get("what")
        cursor = body.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise bad_request("cursor must be a string or null")
        if what == "tasks":
            return self._list_tasks(cursor)
        if what not in LISTINGS:
            raise bad_request("what must be tools, resources, templates, prompts or tasks")
        client = self.client()
        page = _served(lambda: getattr(client, LISTINGS[what])(cursor))
        items = (page.raw or {}).get(LISTED_KEY[what], [])
        if what == "tools":
            self._learn_tools(items)
        return {"items": items, "nextCursor": page.next_cursor}

    def _learn_tools(self, tools: list) -> None:
        with self._lock:
            for tool in tools:
                if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                    continue
                if (
                    len(self._output_schemas) < MAX_KNOWN_TOOLS
                    or tool["name"] in self._output_schemas
                ):
                    self._output_schemas[tool["name"]] = tool.get("outputSchema")

    def _list_tasks(self, cursor: str | None) -> dict:
        """The server's ``tasks/list`` when it has one; else the tasks this inspector started."""
        client = self.client()
        tasks = client.server_capabilities.get("tasks")
        if client.era == "handshake" and isinstance(tasks, dict) and "list" in tasks:
            page = _served(lambda: client.list_tasks(cursor))
            return {"items": list(page.items), "nextCursor": page.next_cursor}
        with self._lock:
            started = list(self._started_tasks.items())
        return {
            "items": [{"taskId": task, "tool": tool} for task, tool in started],
            "nextCursor": None,
        }

    def call(self, body: dict) -> dict:
        """``api/call``: call a tool (blocks until it ends); progress goes to the page as
        ``progress`` events with the page's call id; :meth:`cancel` cancels it."""
        call_id = _page_id(body.get("call"), "call")
        name = body.get("name")
        arguments = body.get("arguments")
        if not isinstance(name, str) or not name:
            raise bad_request("name must be the tool's name")
        if arguments is not None and not isinstance(arguments, dict):
            raise bad_request("arguments must be an object")
        client = self.client()

        def on_progress(progress: float, total: float | None, message: str | None) -> None:
            self.publish(
                "progress",
                {"call": call_id, "progress": progress, "total": total, "message": message},
            )

        options: dict[str, Any] = {"on_progress": on_progress}
        if body.get("task"):
            options["task"] = True
        with self._lock:
            if call_id in self._calls:
                raise bad_request(f"a call {call_id} is running already")
            if len(self._calls) >= MAX_CALLS:
                raise bad_request(f"{MAX_CALLS} calls are running: wait for one to end")
            self._calls[call_id] = None
        try:
            tool_call = _served(lambda: client.start_tool_call(name, arguments or {}, **options))
            with self._lock:
                cancelled_early = self._calls.get(call_id) == CANCEL_ASKED
                self._calls[call_id] = tool_call
            if cancelled_early:  # the page cancelled it while it was being sent
                tool_call.cancel("cancelled in the inspector")
            result = _served(tool_call.result)
        finally:
            with self._lock:
                self._calls.pop(call_id, None)
        task_id = getattr(tool_call, "task_id", None)
        if isinstance(task_id, str):
            self._remember_task(task_id, name)
        wire = result.to_wire()
        return {"result": wire, "output_check": self._output_check(name, wire)}

    def _remember_task(self, task_id: str, tool: str) -> None:
        with self._lock:
            self._started_tasks[task_id] = tool
            while len(self._started_tasks) > MAX_STARTED_TASKS:
                del self._started_tasks[next(iter(self._started_tasks))]

    def _output_check(self, name: str, result: dict) -> dict | None:
        """``structuredContent`` checked against the tool's ``outputSchema`` (None: no schema, or an
        ``isError`` result, which need not match it), in a child process within a deadline
        (:mod:`.output_check`: a server's ``pattern`` may take exponential time)."""
        with self._lock:
            schema = self._output_schemas.get(name)
        if not isinstance(schema, dict) or result.get("isError"):
            return None
        if "structuredContent" not in result:
            # 2025-06-18 server/tools §Output Schema: "Servers MUST provide structured results
            # that conform to this schema."
            return {"valid": False, "errors": ["the result has no structuredContent"]}
        return self._output_checker.check(schema, result["structuredContent"])

    def cancel(self, body: dict) -> dict:
        """``api/cancel``: cancel a running call."""
        call_id = _page_id(body.get("call"), "call")
        with self._lock:
            if call_id not in self._calls:
                return {"cancelled": False}
            tool_call = self._calls[call_id]
            # still being sent: it is cancelled as soon as it is
            if tool_call is None or tool_call == CANCEL_ASKED:
                self._calls[call_id] = CANCEL_ASKED
                return {"cancelled": True}
        tool_call.cancel("cancelled in the inspector")
        # Running (it is in the table until its answer is taken): cancelled now, even when the
        # request on the wire had ended (a 2026-07-28 call answering the server's input requests).
        return {"cancelled": True}

    def read(self, body: dict) -> dict:
        """``api/read``: ``resources/read``, its result as the server sent it."""
        uri = _text(body, "uri")
        client = self.client()
        return {"result": _served(lambda: client.request("resources/read", {"uri": uri}))}

    def subscribe(self, body: dict) -> dict:
        """``api/subscribe``: updates about a resource on (``updated`` events) or off."""
        uri = _text(body, "uri")
        client = self.client()
        if body.get("on", True):
            _served(lambda: client.subscribe(uri))
        else:
            _served(lambda: client.unsubscribe(uri))
        return {}

    def complete(self, body: dict) -> dict:
        """``api/complete``: ``completion/complete`` for a prompt's argument or a template's variable."""
        ref = body.get("ref")
        argument = body.get("argument")
        context = body.get("context")
        if not isinstance(ref, dict) or ref.get("type") not in ("ref/prompt", "ref/resource"):
            raise bad_request("ref must be a ref/prompt or a ref/resource")
        if not isinstance(argument, dict):
            raise bad_request("argument must be {name, value}")
        name, value = _text(argument, "name"), argument.get("value", "")
        if not isinstance(value, str):
            raise bad_request("argument.value must be a string")
        arguments = context.get("arguments") if isinstance(context, dict) else None
        if arguments is not None and not isinstance(arguments, dict):
            raise bad_request("context.arguments must be an object")
        client = self.client()
        if ref["type"] == "ref/prompt":
            target = {"prompt": _text(ref, "name")}
        else:
            target = {"resource": _text(ref, "uri")}
        completion = _served(
            lambda: client.complete(argument=name, value=value, context=arguments, **target)
        )
        return {"completion": completion.to_wire()}

    def prompt(self, body: dict) -> dict:
        """``api/prompt``: ``prompts/get`` with the page's arguments (strings)."""
        name = _text(body, "name")
        arguments = body.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise bad_request("arguments must be an object")
        client = self.client()
        return {"result": _served(lambda: client.get_prompt(name, arguments)).to_wire()}

    def set_log_level(self, body: dict) -> dict:
        """``api/log-level``: the server's log messages at this level and above (``log`` events)."""
        level = body.get("level")
        if level not in LOG_LEVELS:
            raise bad_request("level must be one of " + ", ".join(LOG_LEVELS))
        client = self.client()
        _served(lambda: client.set_logging_level(level))
        self.log_level = level
        return {}

    def set_roots(self, body: dict) -> dict:
        """``api/roots``: replace the roots (in the handshake era the server is sent
        ``notifications/roots/list_changed``; a 2026-07-28 server asks for them each time)."""
        from ..client.answering import as_root

        given = body.get("roots")
        if not isinstance(given, list) or not all(isinstance(root, dict) for root in given):
            raise bad_request("roots must be a list of {uri, name?}")
        try:
            roots = [as_root(root).to_wire() for root in given]
        except (ValueError, TypeError, KeyError) as exc:
            raise bad_request(
                str(exc) if isinstance(exc, ValueError) else "a root needs a uri"
            ) from None
        client = self.client()
        _served(lambda: client.set_roots(roots))
        self.roots = roots
        return {}

    def task(self, body: dict) -> dict:
        """``api/task``: ``tasks/get``, the task's result (2025-11-25 ``tasks/result``; 2026-07-28:
        ``tasks/get``, which carries it), or ``tasks/cancel``."""
        action = body.get("action")
        task_id = _text(body, "taskId")
        client = self.client()
        if action == "get":
            return {"result": _served(lambda: client.get_task(task_id))}
        if action == "result":
            if client.era == "modern":
                return {"result": _served(lambda: client.get_task(task_id))}
            return {"result": _served(lambda: client.task_result(task_id)).to_wire()}
        if action == "cancel":
            return {"result": _served(lambda: client.cancel_task(task_id))}
        raise bad_request("action must be get, result or cancel")


class ClientBeingMade(Extension):
    """The client a connect is making, known from the moment it exists (an extension's ``setup``
    runs before the client opens its connection), so that closing the inspector during that
    connect (Ctrl-C while a launched server has not answered yet) closes it, and stops its
    server, instead of leaving it running after the inspector has gone.  It adds nothing else."""

    name = "mcp-ref inspector: the client being made"

    def __init__(self) -> None:
        self.client: Any = None

    def setup(self, host: Any) -> None:
        """Remember the client (``host``)."""
        self.client = host

    def close(self) -> None:
        """Close the client, if it has gone far enough to have a connection to close."""
        if getattr(self.client, "session", None) is not None:
            self.client.close()


def shown_target(target: str) -> str:
    """TARGET as the page and the export show it: a URL's userinfo and secret query values
    masked; in a command line, what reads as a secret (:func:`~.masking.mask_free_text`: a URL's
    userinfo, ``API_KEY=...``, a bearer credential)."""
    if target.startswith(("http://", "https://")):
        return mask_url(target)
    return mask_free_text(target)


def _served(operation: Callable[[], Any]) -> Any:
    """Run a client operation; its failure as an :class:`InspectorError` with a clear message."""
    try:
        return operation()
    except McpError as exc:
        # the server's JSON-RPC error, shown as it sent it (its words are data for the page)
        return_error = exc.to_error()
        raise InspectorError(
            200,
            str(return_error.get("message", "")),
            return_error.get("code"),
            return_error.get("data"),
        ) from None
    except RequestCancelled:
        raise InspectorError(200, "cancelled") from None
    except RequestTimeout as exc:
        raise InspectorError(200, f"timed out: {exc}") from None
    except CapabilityError as exc:
        raise InspectorError(400, str(exc)) from None
    except ConnectionClosed as exc:
        raise InspectorError(409, f"the connection to the server ended: {exc}") from None
    except (ValueError, TypeError) as exc:
        raise bad_request(str(exc)) from None


def _text(body: dict, key: str) -> str:
    """``body[key]``, a non-empty string, or a bad request."""
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise bad_request(f"{key} must be a non-empty string")
    return value


def _page_id(value: Any, what: str) -> str:
    """An id the page chose (a call's): a short string."""
    if not isinstance(value, str) or not value or len(value) > MAX_ID_LENGTH:
        raise bad_request(f"{what} must be a string of 1 to {MAX_ID_LENGTH} characters")
    return value


def _sampling_result(result: Any) -> dict:
    """The page's CreateMessageResult for an accepted sampling request, checked."""
    if (
        not isinstance(result, dict)
        or not isinstance(result.get("model"), str)
        or result.get("role") not in ("assistant", "user")
        or not isinstance(result.get("content"), (dict, list))
    ):
        raise bad_request(
            "accepting a sampling request needs result: {role, content, model} "
            "(a CreateMessageResult)"
        )
    return dict(result)
