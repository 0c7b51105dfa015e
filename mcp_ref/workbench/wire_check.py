"""Every message of a conversation checked against the official JSON Schema of its revision.

:class:`WireValidator` is a ``trace`` hook (``Client(trace=...)``): it learns the negotiated
revision from the ``initialize`` result and checks each message as its type, a request as its
request type, a result as the result type of the method it answers, a notification as its
notification type, an error as a JSON-RPC error.  A 2026-07-28 request names its revision in its
own ``_meta``: it, and the answer to it, are checked at that revision (an ``input_required``
result as ``InputRequiredResult``), and so are the notifications of a conversation that never
had a handshake.  ``mcp-ref check`` reports what it finds;
the test suite uses it on every conversation it has.
"""

from __future__ import annotations

import json
import threading

from .. import schemas
from ..request import DEFAULT, Default

#: method -> (request type, result type) in the official schema.
REQUEST_TYPES = {
    "initialize": ("InitializeRequest", "InitializeResult"),
    "server/discover": ("DiscoverRequest", "DiscoverResult"),
    "ping": ("PingRequest", "EmptyResult"),
    "tools/list": ("ListToolsRequest", "ListToolsResult"),
    "tools/call": ("CallToolRequest", "CallToolResult"),
    "resources/list": ("ListResourcesRequest", "ListResourcesResult"),
    "resources/templates/list": ("ListResourceTemplatesRequest", "ListResourceTemplatesResult"),
    "resources/read": ("ReadResourceRequest", "ReadResourceResult"),
    "resources/subscribe": ("SubscribeRequest", "EmptyResult"),
    "resources/unsubscribe": ("UnsubscribeRequest", "EmptyResult"),
    "prompts/list": ("ListPromptsRequest", "ListPromptsResult"),
    "prompts/get": ("GetPromptRequest", "GetPromptResult"),
    "logging/setLevel": ("SetLevelRequest", "EmptyResult"),
    "completion/complete": ("CompleteRequest", "CompleteResult"),
    "sampling/createMessage": ("CreateMessageRequest", "CreateMessageResult"),
    "roots/list": ("ListRootsRequest", "ListRootsResult"),
    "elicitation/create": ("ElicitRequest", "ElicitResult"),
    "subscriptions/listen": ("SubscriptionsListenRequest", "SubscriptionsListenResult"),
    "tasks/get": ("GetTaskRequest", "GetTaskResult"),  # the four tasks/* types: 2025-11-25 only
    "tasks/result": ("GetTaskPayloadRequest", "GetTaskPayloadResult"),
    "tasks/list": ("ListTasksRequest", "ListTasksResult"),
    "tasks/cancel": ("CancelTaskRequest", "CancelTaskResult"),
}
#: Lines that are not JSON quoted at most (in ``errors``; all are counted in ``not_messages``).
MAX_NOT_MESSAGES_QUOTED = 3
#: Characters of such a line quoted at most.
NOT_MESSAGE_EXCERPT = 80

NOTIFICATION_TYPES = {
    "notifications/initialized": "InitializedNotification",
    "notifications/cancelled": "CancelledNotification",
    "notifications/progress": "ProgressNotification",
    "notifications/message": "LoggingMessageNotification",
    "notifications/resources/updated": "ResourceUpdatedNotification",
    "notifications/resources/list_changed": "ResourceListChangedNotification",
    "notifications/tools/list_changed": "ToolListChangedNotification",
    "notifications/prompts/list_changed": "PromptListChangedNotification",
    "notifications/roots/list_changed": "RootsListChangedNotification",
    "notifications/subscriptions/acknowledged": "SubscriptionsAcknowledgedNotification",
    "notifications/tasks/status": "TaskStatusNotification",
}


class WireValidator:
    """A ``trace`` hook that validates every message against the negotiated revision's schema.

    Requests are checked as their request type, results as the result type of
    the method they answer, notifications as their notification type, errors as
    JSON-RPC errors.  The version is learnt from the initialize result.
    Messages seen before it (initialize itself) are checked once it is known.

    The schemas come from ``mcp_ref.schemas``, so there is always one to check
    against, except when a peer announces a revision that has none: then the
    revision the initialize request asked for is used, and if that has none
    either, the checker records an error (it never passes unchecked).
    """

    def __init__(self, version: str | None = None):
        self.version = version
        self.asked: str | None = None  # the protocolVersion of the initialize request
        self.messages: list[tuple[str, dict]] = []
        self.errors: list[str] = []
        #: The errors of the messages received (the peer's own faults; ``errors`` has both ways).
        self.received_errors: list[str] = []
        #: (direction, id) of each request -> (its method, its modern version)
        self.methods: dict[tuple[str, object], tuple[str, str | None]] = {}
        self.augmented: set[tuple[str, object]] = set()  # 2025-11-25 requests with params.task
        #: The revision of the last 2026-07-28-era request seen (None: none yet).
        self.modern_version: str | None = None
        #: direction -> how many lines that way were not JSON at all (not an MCP message).
        self.not_messages: dict[str, int] = {}
        self._backlog: list[tuple[str, dict]] = []
        self._unchecked = False
        self.lock = threading.Lock()

    def __call__(self, direction: str, data: bytes) -> None:
        try:
            message = json.loads(data)
        except ValueError:  # not JSON (JSONDecodeError), or not UTF-8 (UnicodeDecodeError)
            self._not_a_message(direction, data)
            return
        with self.lock:
            self.messages.append((direction, message))
            items = message if isinstance(message, list) else [message]
            for item in items:
                if not isinstance(item, dict):
                    continue  # not a JSON-RPC message: no type of the schema to check it as
                modern = _modern_version(item)
                if modern is not None:
                    self.modern_version = modern
                    self._check(direction, item, modern)
                    continue
                if "method" in item and "id" in item:
                    # a handshake-era request: its answer is not a modern one, even when an earlier
                    # conversation in the same trace used the same id for a modern request
                    self.methods[(direction, item["id"])] = (item["method"], None)
                elif "method" not in item and self._request_of(direction, item)[1] is not None:
                    self._check(direction, item, None)
                    continue
                if self.version is None and self.modern_version is not None and "id" not in item:
                    # a notification in a conversation with no handshake
                    self._check(direction, item, self.modern_version)
                    continue
                if self.version is None:
                    if item.get("method") == "initialize" and isinstance(item.get("params"), dict):
                        self.asked = item["params"].get("protocolVersion")
                    result = item.get("result")
                    if not (isinstance(result, dict) and "protocolVersion" in result):
                        self._backlog.append((direction, item))
                        continue
                    self.version = result["protocolVersion"]
                    backlog, self._backlog = self._backlog, []
                    for d, m in backlog:
                        self._check(d, m)
                self._check(direction, item)

    def _not_a_message(self, direction: str, data: bytes) -> None:
        """Record a line that is no JSON at all: counted, the first few quoted in ``errors``.

        2025-11-25 basic/transports §stdio: "The server MUST NOT write anything to its stdout that
        is not a valid MCP message" (and the client nothing to the server's stdin).  A server that
        prints a line for each request is reported, not quoted a thousand times.
        """
        with self.lock:
            seen = self.not_messages.get(direction, 0) + 1
            self.not_messages[direction] = seen
            if seen > MAX_NOT_MESSAGES_QUOTED:
                return
            text = bytes(data).decode("utf-8", "replace").strip()
            if len(text) > NOT_MESSAGE_EXCERPT:
                text = text[:NOT_MESSAGE_EXCERPT] + "..."
            way = "from the server" if direction == "<--" else "to the server"
            self._found(direction, [f"not a JSON-RPC message ({way}): {text!r}"])

    @property
    def schema_version(self) -> str | None:
        """The revision whose schema the messages are checked against (None: none applies)."""
        for version in (self.version, self.asked):
            if version in schemas.VERSIONS:
                return version
        return None

    def _request_of(self, direction: str, answer: dict) -> tuple[str | None, str | None]:
        """``(method, modern version)`` of the request ``answer`` (sent in ``direction``) answers."""
        return self.methods.get((_asked_way(direction), answer.get("id")), (None, None))

    def _check(self, direction: str, msg: dict, version: str | None | Default = DEFAULT) -> None:
        if "method" not in msg:  # an answer: at its request's revision
            version = self._request_of(direction, msg)[1] or version
        if version is None or version is DEFAULT:
            version = self.schema_version
        if version is None:
            if not self._unchecked:  # said once, and the test fails: nothing passes unchecked
                self._found(
                    direction,
                    [
                        f"protocol version {self.version!r} has no official schema: its messages cannot be checked"
                    ],
                )
            self._unchecked = True
            return
        if "method" in msg and "id" in msg:
            self.methods[(direction, msg["id"])] = (msg["method"], _modern_version(msg))
            if isinstance(msg.get("params"), dict) and "task" in msg["params"]:
                self.augmented.add((direction, msg["id"]))
        augmented = (_asked_way(direction), msg.get("id")) in self.augmented
        self._found(
            direction, message_errors(msg, version, self._request_of(direction, msg)[0], augmented)
        )

    def _found(self, direction: str, errors: list[str]) -> None:
        self.errors += errors
        if direction == "<--":
            self.received_errors += errors


def schema_type(
    msg: dict, version: str, answered: str | None = None, task_augmented: bool = False
) -> tuple[str | None, object, list[str]]:
    """What one JSON-RPC message is checked as at ``version``: ``(type name, the part checked,
    errors found without a schema)``; the name is None when no type of the schema applies.

    A request is its request type, a notification its notification type, a result the result
    type of ``answered`` (the method of the request it answers; an ``input_required`` result
    ``InputRequiredResult``, a task-augmented request's (``task_augmented``) ``CreateTaskResult``),
    an error a JSON-RPC error.  ``WireValidator`` and the inspector's checks both use it.
    """
    known = schemas.type_names(version)
    name: str | None = None
    payload: object = msg
    found: list[str] = []
    if "method" in msg and "id" in msg:
        name = REQUEST_TYPES.get(msg["method"], (None, None))[0]
    elif "method" in msg:
        name = NOTIFICATION_TYPES.get(msg["method"])
    elif "result" in msg:
        result = payload = msg["result"]
        result_type = result.get("resultType") if isinstance(result, dict) else None
        if result_type == "task":
            # The tasks extension's CreateTaskResult is not in the core schema (SEP-2663).
            found = task_errors(result)
        elif result_type == "input_required" and "InputRequiredResult" in known:
            name = "InputRequiredResult"
        elif (
            isinstance(result, dict)
            and "task" in result
            and task_augmented
            and "CreateTaskResult" in known
        ):  # 2025-11-25 tasks §Creating Tasks (a receiver may also ignore task)
            name = "CreateTaskResult"
        else:
            name = REQUEST_TYPES.get(answered or "", (None, None))[1]
    elif "error" in msg and (msg.get("id") is not None or version >= "2025-11-25"):
        name = "JSONRPCErrorResponse" if "JSONRPCErrorResponse" in known else "JSONRPCError"
    return (name if name in known else None), payload, found


def message_errors(
    msg: dict, version: str, answered: str | None = None, task_augmented: bool = False
) -> list[str]:
    """Every way ``msg`` breaks its type (:func:`schema_type`) of ``version``'s schema; empty when valid."""
    name, payload, found = schema_type(msg, version, answered, task_augmented)
    return found + (schemas.errors(version, name, payload) if name is not None else [])


def _asked_way(direction: str) -> str:
    """The direction of the request an answer going ``direction`` answers (the other one)."""
    return "<--" if direction == "-->" else "-->"


def _modern_version(msg) -> str | None:
    """The revision a 2026-07-28-era request names in its ``_meta`` (None: not such a request)."""
    if not isinstance(msg, dict) or "method" not in msg or "id" not in msg:
        return None
    params = msg.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = (
        meta.get("io.modelcontextprotocol/protocolVersion") if isinstance(meta, dict) else None
    )
    return version if version in schemas.VERSIONS else None


def task_errors(result: dict) -> list[str]:
    """What a CreateTaskResult (the tasks extension, SEP-2663 §Tasks) lacks: ``taskId``, ``status``,
    ``createdAt``, ``lastUpdatedAt`` and ``ttlMs`` (an integer or null); no ``result``, ``error``
    or ``inputRequests`` of its own."""
    errors = [
        f"CreateTaskResult: {name} must be a string"
        for name in ("taskId", "status", "createdAt", "lastUpdatedAt")
        if not isinstance(result.get(name), str)
    ]
    ttl = result.get("ttlMs", "absent")
    if ttl is not None and (not isinstance(ttl, int) or isinstance(ttl, bool)):
        errors.append("CreateTaskResult: ttlMs must be an integer or null")
    errors += [
        f"CreateTaskResult: unexpected {name}"
        for name in ("result", "error", "inputRequests")
        if name in result
    ]
    return errors
