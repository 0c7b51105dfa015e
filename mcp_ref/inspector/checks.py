"""Each message of the conversation checked: valid against its revision's schema, and its spec section.

:func:`check_message` checks one JSON-RPC message (a dict) against the official JSON Schema of
the revision given, as :mod:`mcp_ref.workbench.wire_check` (the check ``mcp-ref check`` runs)
types it: a request as its request type, a notification as its notification type, a result as
the result type of the method it answers, an error as a JSON-RPC error.  The answer is a
:class:`Check`: ``valid`` (None when no type of the schema applies), at most
:data:`MAX_ERRORS` short errors, the revision checked against, and the spec section the message
obeys (:func:`spec_section`, a link to modelcontextprotocol.io).

:class:`MessageChecker` pairs answers with their requests (by id, each way) so that a result is
checked as the answer to its method, and learns the negotiated revision from the ``initialize``
result when it is not told; a 2026-07-28 request names its revision in its own ``_meta``, and
it and its answer are checked at that revision.

:data:`SECTIONS` is the table of every method and notification of each revision's schema
(2025-03-26 to 2026-07-28) to its page and section heading, taken from the specification's own
text (each heading is the one under which the spec introduces the message; the inspector's tests
check every row against the spec text when it is at hand).  The 2024-11-05 revision's text is not
among those, so its methods link to their page, without a section (:data:`PAGES_2024`).
"""

from __future__ import annotations

import collections
import re
import threading
from dataclasses import dataclass
from typing import Any

from .. import schemas
from ..jsonrpc import valid_id
from ..workbench.wire_check import message_errors, schema_type
from .masking import mask_free_text

#: At most this many errors are kept for one message (the first ones the schema reports).
MAX_ERRORS = 5
#: An error line is cut to this many characters (a message's whole payload may be quoted in it).
MAX_ERROR_LENGTH = 300
#: The site the links point to.
SPEC_SITE = "https://modelcontextprotocol.io/specification"

#: 2025-03-26's table: method -> (page path under the revision, page title, section heading).
_FIRST: dict[str, tuple[str, str, str]] = {
    "completion/complete": ("server/utilities/completion", "Completion", "Requesting Completions"),
    "initialize": ("basic/lifecycle", "Lifecycle", "Initialization"),
    "logging/setLevel": ("server/utilities/logging", "Logging", "Setting Log Level"),
    "notifications/cancelled": (
        "basic/utilities/cancellation",
        "Cancellation",
        "Cancellation Flow",
    ),
    "notifications/initialized": ("basic/lifecycle", "Lifecycle", "Initialization"),
    "notifications/message": ("server/utilities/logging", "Logging", "Log Message Notifications"),
    "notifications/progress": ("basic/utilities/progress", "Progress", "Progress Flow"),
    "notifications/prompts/list_changed": (
        "server/prompts",
        "Prompts",
        "List Changed Notification",
    ),
    "notifications/resources/list_changed": (
        "server/resources",
        "Resources",
        "List Changed Notification",
    ),
    "notifications/resources/updated": ("server/resources", "Resources", "Subscriptions"),
    "notifications/roots/list_changed": ("client/roots", "Roots", "Root List Changes"),
    "notifications/tools/list_changed": ("server/tools", "Tools", "List Changed Notification"),
    "ping": ("basic/utilities/ping", "Ping", "Message Format"),
    "prompts/get": ("server/prompts", "Prompts", "Getting a Prompt"),
    "prompts/list": ("server/prompts", "Prompts", "Listing Prompts"),
    "resources/list": ("server/resources", "Resources", "Listing Resources"),
    "resources/read": ("server/resources", "Resources", "Reading Resources"),
    "resources/subscribe": ("server/resources", "Resources", "Subscriptions"),
    "resources/templates/list": ("server/resources", "Resources", "Resource Templates"),
    "resources/unsubscribe": ("server/resources", "Resources", "Subscriptions"),
    "roots/list": ("client/roots", "Roots", "Listing Roots"),
    "sampling/createMessage": ("client/sampling", "Sampling", "Creating Messages"),
    "tools/call": ("server/tools", "Tools", "Calling Tools"),
    "tools/list": ("server/tools", "Tools", "Listing Tools"),
}
#: What each later revision changed, in order: a row it added or moved, or None for a method it
#: dropped (2026-07-28 has no initialize, no subscriptions, no roots list_changed ...).
_CHANGES: tuple[tuple[str, dict[str, tuple[str, str, str] | None]], ...] = (
    (
        "2025-06-18",
        {
            "elicitation/create": (
                "client/elicitation",
                "Elicitation",
                "Creating Elicitation Requests",
            ),
        },
    ),
    (
        "2025-11-25",
        {
            "elicitation/create": ("client/elicitation", "Elicitation", "Elicitation Requests"),
            "notifications/elicitation/complete": (
                "client/elicitation",
                "Elicitation",
                "Completion Notifications for URL Mode Elicitation",
            ),
            "notifications/tasks/status": (
                "basic/utilities/tasks",
                "Tasks",
                "Task Status Notification",
            ),
            "tasks/cancel": ("basic/utilities/tasks", "Tasks", "Cancelling Tasks"),
            "tasks/get": ("basic/utilities/tasks", "Tasks", "Getting Tasks"),
            "tasks/list": ("basic/utilities/tasks", "Tasks", "Listing Tasks"),
            "tasks/result": ("basic/utilities/tasks", "Tasks", "Retrieving Task Results"),
        },
    ),
    (
        "2026-07-28",
        {
            "initialize": None,
            "logging/setLevel": None,
            "notifications/cancelled": (
                "basic/patterns/cancellation",
                "Cancellation",
                "Cancellation Flow",
            ),
            "notifications/elicitation/complete": None,
            "notifications/initialized": None,
            "notifications/progress": ("basic/patterns/progress", "Progress", "Progress Flow"),
            "notifications/roots/list_changed": None,
            "notifications/subscriptions/acknowledged": (
                "basic/patterns/subscriptions",
                "Subscriptions",
                "Acknowledgment",
            ),
            "notifications/tasks/status": None,
            "ping": None,
            "resources/subscribe": None,
            "resources/unsubscribe": None,
            "server/discover": ("server/discover", "Discovery", "Request"),
            "subscriptions/listen": (
                "basic/patterns/subscriptions",
                "Subscriptions",
                "Opening a Stream",
            ),
            "tasks/cancel": None,
            "tasks/get": None,
            "tasks/list": None,
            "tasks/result": None,
        },
    ),
)


def _sections() -> dict[str, dict[str, tuple[str, str, str]]]:
    """Every revision's table: 2025-03-26's, then each later one's changes applied in turn."""
    table = {"2025-03-26": dict(_FIRST)}
    last = table["2025-03-26"]
    for revision, changes in _CHANGES:
        merged = {**last, **changes}
        last = {method: row for method, row in merged.items() if row is not None}
        table[revision] = last
    return table


#: revision -> method -> (page path under the revision, page title, section heading).
SECTIONS: dict[str, dict[str, tuple[str, str, str]]] = _sections()
#: 2024-11-05 (no spec text here to take anchors from): the page of each method, no section; its
#: methods and pages are 2025-03-26's.
PAGES_2024: dict[str, tuple[str, str]] = {
    method: (path, title) for method, (path, title, _heading) in _FIRST.items()
}


def anchor(heading: str) -> str:
    """The URL fragment the spec site gives a heading: lower case, punctuation dropped, spaces as ``-``."""
    text = re.sub(r"[^\w\s-]", "", heading.replace("`", "").strip().lower())
    return re.sub(r"\s+", "-", text)


def spec_section(method: str | None, revision: str | None) -> dict[str, str] | None:
    """``{"title", "url"}`` of the spec section of ``method`` at ``revision``; None when it has none.

    >>> spec_section("tools/call", "2025-11-25")["url"]
    'https://modelcontextprotocol.io/specification/2025-11-25/server/tools#calling-tools'
    """
    if method is None or revision is None:
        return None
    row = SECTIONS.get(revision, {}).get(method)
    if row is not None:
        path, title, heading = row
        return {
            "title": f"{title} — {heading}",
            "url": f"{SPEC_SITE}/{revision}/{path}#{anchor(heading)}",
        }
    if revision == "2024-11-05" and method in PAGES_2024:
        path, title = PAGES_2024[method]
        return {"title": title, "url": f"{SPEC_SITE}/{revision}/{path}"}
    return None


@dataclass(frozen=True)
class Check:
    """What the checks found for one message.

    ``valid``: True or False against ``schema_type`` of ``schema``'s JSON Schema; None when no
    type applies (an unknown method, a result whose request was not seen, no revision known).
    ``errors``: at most :data:`MAX_ERRORS` lines.  ``method``: the request's method, or for an
    answer the method of the request it answers (None when unknown).  ``spec``: :func:`spec_section`.
    """

    valid: bool | None
    errors: tuple[str, ...]
    schema: str | None
    schema_type: str | None
    method: str | None
    spec: dict[str, str] | None


def check_message(
    message: Any,
    revision: str | None,
    answered: str | None = None,
    task_augmented: bool = False,
    validate: bool = True,
) -> Check:
    """Check one JSON-RPC message (a parsed dict) against ``revision``'s schema.

    ``answered``: for a result or an error, the method of the request it answers (a result is
    checked as that method's result type).  ``task_augmented``: the request it answers asked
    for a task (2025-11-25 tasks).  Anything but a dict is invalid: it is no JSON-RPC message.
    ``validate`` False: its method and spec section only, ``valid`` None (the schema's walk
    recurses: a message nested deeper than the session reads is not walked).
    """
    if not isinstance(message, dict):
        return Check(False, ("not a JSON-RPC message (a JSON object)",), revision, None, None, None)
    method = message.get("method") if isinstance(message.get("method"), str) else answered
    spec = spec_section(method, revision)
    if revision not in schemas.VERSIONS:
        return Check(None, (), None, None, method, spec)
    if not validate:
        return Check(None, (), revision, None, method, spec)
    assert revision is not None
    bad_id = _id_errors(message)
    name, _payload, found = schema_type(message, revision, answered, task_augmented)
    if name is None and not found and not bad_id:
        return Check(None, (), revision, None, method, spec)
    errors = bad_id + message_errors(message, revision, answered, task_augmented)
    short = tuple(_short(error) for error in errors[:MAX_ERRORS])
    return Check(not errors, short, revision, name, method, spec)


def _short(error: str) -> str:
    """An error line cut and masked: it may quote the message's payload (``{'password': ...} is
    not valid under any of the given schemas``), secrets and all (:func:`~.masking.mask_free_text`
    reads what the cut left, as cut short)."""
    if len(error) <= MAX_ERROR_LENGTH:
        return mask_free_text(error)
    return mask_free_text(error[: MAX_ERROR_LENGTH - 1], cut_short=True) + "…"


class MessageChecker:
    """Checks a conversation's messages in order, pairing each answer with its request.

    ``check(direction, message)`` (``"-->"``: client to server, ``"<--"``: back) returns the
    :class:`Check`.  The revision is the one the last ``initialize`` result named or
    :meth:`set_revision` gave, whichever came last (the ``initialize`` request itself is checked
    at the revision it asks for); a 2026-07-28 request and its answer are checked at the revision its ``_meta`` names, and
    so are the notifications of a conversation that never had a handshake.
    Requests awaiting their answer are remembered up to :data:`MAX_PENDING`; past it the
    oldest is forgotten (its answer is then checked with ``valid`` None).  Thread-safe.
    """

    #: Requests remembered until answered; past it the oldest is forgotten.
    MAX_PENDING = 10_000

    def __init__(self, revision: str | None = None):
        self.revision = revision
        self._modern: str | None = None  # the revision the last 2026-07-28 request named
        self._pending: collections.OrderedDict[tuple[str, Any], tuple[str, str | None, bool]] = (
            collections.OrderedDict()
        )
        self._lock = threading.Lock()

    def set_revision(self, revision: str | None) -> None:
        """The negotiated revision: messages from now on are checked against it."""
        with self._lock:
            self.revision = revision

    def clear(self) -> None:
        """Forget the requests awaiting answers (a new connection)."""
        with self._lock:
            self._pending.clear()

    def check(self, direction: str, message: Any, validate: bool = True) -> Check:
        """Check one message sent in ``direction`` (``"-->"`` or ``"<--"``); ``validate`` False:
        paired, and not checked against the schema (:func:`check_message`)."""
        with self._lock:
            if not isinstance(message, dict):
                return check_message(message, self.revision, validate=validate)
            method = message.get("method")
            request_id = message.get("id")
            if isinstance(method, str):
                modern = _named_revision(message)
                if modern is not None:
                    self._modern = modern
                # a notification of a conversation with no handshake: the revision its requests name
                revision = modern or self.revision or self._modern
                if method == "initialize":  # checked at the revision it asks for
                    params = message.get("params")
                    asked = params.get("protocolVersion") if isinstance(params, dict) else None
                    revision = asked if isinstance(asked, str) else revision
                if "id" in message and _hashable(request_id):
                    params = message.get("params")
                    augmented = isinstance(params, dict) and "task" in params
                    self._pending[(direction, request_id)] = (method, modern, augmented)
                    if len(self._pending) > self.MAX_PENDING:
                        self._pending.popitem(last=False)
                return check_message(message, revision, validate=validate)
            asked_way = "<--" if direction == "-->" else "-->"
            request = (
                self._pending.pop((asked_way, request_id), None) if _hashable(request_id) else None
            )
            answered, modern, augmented = request or (None, None, False)
            result = message.get("result")
            if (
                answered == "initialize"  # a handshake: its answer names the revision from now on
                and isinstance(result, dict)
                and isinstance(result.get("protocolVersion"), str)
            ):
                self.revision = result["protocolVersion"]
            revision = modern or self.revision or (self._modern if answered is None else None)
            return check_message(message, revision, answered, augmented, validate)


def _id_errors(message: dict) -> list[str]:
    """What is wrong with a message's ``id`` (the schemas' types leave the envelope's id unchecked).

    2025-06-18 basic/index §Requests: "Requests MUST include a string or integer ID", and "Unlike
    base JSON-RPC, the ID MUST NOT be null"; §Responses: "Responses MUST include the same ID as
    the request they correspond to", so a string or an integer too, except the null id of an
    error answering a request whose id could not be read (JSON-RPC 2.0 §5).  A notification has
    none (and an answer without one is the schema's to flag)."""
    if "id" not in message:
        return []
    request_id = message["id"]
    if valid_id(request_id):
        return []
    if request_id is None and "method" not in message and "error" in message:
        return []
    if request_id is None:
        return ["id: null (only an error answering an unreadable request may have it)"]
    return ["id: not a string or an integer"]


def _hashable(value: Any) -> bool:
    return isinstance(value, (str, int, float)) or value is None


def _named_revision(message: dict) -> str | None:
    """The revision a 2026-07-28-era request names in ``params._meta`` (None: none, or not known)."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    named = meta.get("io.modelcontextprotocol/protocolVersion") if isinstance(meta, dict) else None
    return named if named in schemas.VERSIONS else None
