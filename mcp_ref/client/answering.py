"""What the server sends the client: its requests answered, its notifications routed.

:class:`~mcp_ref.client.connection.ClientConnection` is the session's dispatcher; it hands each
request of the server's and each notification here, and this module loads with the first of them:
a plain client, which is sent neither, never reads it.

A request (in both eras: a 2026-07-28 ``inputRequests`` entry comes here too, from
:class:`~mcp_ref.client.connection.ModernCall`) is answered with a method of one of the client's
extensions, else by this module's own answer (:data:`HANDLERS`: sampling, elicitation, roots),
after every extension's ``intercept_request``.  A notification goes to the listen stream that
asked for it, or to the client's callbacks on the callback thread.
"""

from __future__ import annotations

import functools
import logging
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from .. import lifecycle
from ..errors import InvalidParams, MethodNotFound
from ..feature_types import Root
from ..sampling_and_elicitation import (
    CreateMessageParams,
    ElicitParams,
    elicit_result_problem,
    fits_form_type,
)
from ..session import RequestContext
from .callbacks import call_handler, notify_callbacks, result_dict

if TYPE_CHECKING:
    from .cache import ResultCache
    from .interfaces import ClientSettings, Connection
    from .listening import Streams

log = logging.getLogger(__name__)


# -- sampling (2025-11-25 client/sampling): answering the server's ``sampling/createMessage`` ------


def create_message(connection: Connection, context: RequestContext, params: dict) -> dict:
    """``sampling/createMessage``: check the params, then ask the client's ``sampling_handler``."""
    client = connection.client
    max_tokens = params.get("maxTokens")
    if (
        not isinstance(params.get("messages"), list)
        or not isinstance(max_tokens, int)
        or isinstance(max_tokens, bool)
    ):
        # schema CreateMessageRequest: messages is an array, maxTokens an integer.
        raise InvalidParams(
            "Invalid params: sampling/createMessage needs a messages array and an integer maxTokens"
        )
    try:
        request = CreateMessageParams.from_wire(params)
    except (TypeError, KeyError) as exc:
        raise InvalidParams(f"Invalid params: {exc}") from None
    if (
        request.tools is not None or request.tool_choice is not None
    ) and "tools" not in client.capabilities().get("sampling", {}):
        # 2025-11-25 client/sampling: a client that did not declare sampling.tools MUST return an error.
        raise InvalidParams("Invalid params: this client did not declare sampling.tools")
    return result_dict(
        call_handler(cast("Callable[..., Any]", client.sampling_handler), request, context)
    )


# -- elicitation (2025-06-18 and later, client/elicitation): answering ``elicitation/create`` ------


#: The Unicode general categories of what no URL holds (RFC 3986 §2: no space or control
#: character), nor characters that hide part of one from the user who must examine it: controls
#: (Cc), format characters (Cf: zero-width ones, bidi controls, the soft hyphen, the byte order
#: mark ...), line and paragraph separators (Zl, Zp) and spaces (Zs).  By category, not by a
#: list: any such character Unicode has, or adds, is refused.
_NOT_IN_A_URL = frozenset({"Cc", "Cf", "Zl", "Zp", "Zs"})
#: And the characters of other categories that show as nothing: Unicode's Default_Ignorable_Code_Point
#: outside Cf (DerivedCoreProperties.txt: the combining grapheme joiner, the Hangul fillers, the
#: Khmer inherent vowels, the Mongolian and other variation selectors, the reserved ones), and
#: the blank Braille pattern.  Inclusive ranges of code points.
_BLANK_RANGES = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x2065, 0x2065),
    (0x2800, 0x2800),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0xE0000, 0xE0FFF),
)


def check_elicitation(params: dict, version: str | None) -> None:
    """Refuse with -32602 an ``elicitation/create`` that does not have the spec's shape in protocol
    ``version``, before the user's handler (or an ``approve`` hook) sees it.

    2025-11-25 client/elicitation: ``message`` is a string; a form-mode ``requestedSchema`` is an
    object, its ``properties`` an object; in URL mode "The url parameter **MUST** contain a valid
    URL" and §Safe URL Handling asks clients to handle URLs carefully: here an ``http`` or
    ``https`` URL with a host (the spec asks servers for HTTPS outside development, so plain
    ``http`` passes), nothing that could run script (``javascript:``) or open a local file.
    URL mode exists from 2025-11-25 on; its ``elicitationId`` only in 2025-11-25 (see below).
    """
    if not isinstance(params.get("message"), str):
        raise InvalidParams("Invalid params: elicitation/create needs a string message")
    mode = params.get("mode")
    if mode == "url":
        if not lifecycle.at_least(version, lifecycle.ELICITATION_URL_MODE):
            # 2025-06-18 schema ElicitRequest: params are a message and a requestedSchema, no mode.
            raise InvalidParams(
                f"Invalid params: URL-mode elicitation does not exist in protocol version {version}"
            )
        if not is_web_url(params.get("url")):
            raise InvalidParams(
                "Invalid params: a URL-mode elicitation needs a url, an http or https URL"
            )
        if version not in lifecycle.MODERN_VERSIONS and not isinstance(
            params.get("elicitationId"), str
        ):
            # 2025-11-25 client/elicitation §URL Mode Elicitation Requests: they "MUST specify
            # mode: "url", a message, and include these additional parameters: url,
            # elicitationId" (schema ElicitRequestURLParams: "required": ["elicitationId", ...]);
            # the completion notification names it.  2026-07-28 changelog 11 removed both.
            raise InvalidParams(
                "Invalid params: a URL-mode elicitation needs an elicitationId, a string"
            )
        return
    schema = params.get("requestedSchema")
    if schema is not None and (
        not isinstance(schema, dict) or not isinstance(schema.get("properties", {}), dict)
    ):
        raise InvalidParams(
            "Invalid params: requestedSchema must be an object whose properties is an object"
        )


def _blank(char: str) -> bool:
    """True for a character of :data:`_BLANK_RANGES`."""
    point = ord(char)
    return any(first <= point <= last for first, last in _BLANK_RANGES)


def is_web_url(url: object) -> bool:
    """Whether ``url`` is a well-formed ``http``/``https`` URL with a host (a valid port, if any),
    with no backslash, no character of the categories of :data:`_NOT_IN_A_URL` and none of
    :data:`_BLANK_RANGES`.

    2025-11-25 client/elicitation §Safe URL Handling: clients "MUST show the full URL to the user
    for examination before consent": a URL with an invisible part cannot be examined."""
    if not isinstance(url, str) or any(
        char == "\\" or unicodedata.category(char) in _NOT_IN_A_URL or _blank(char) for char in url
    ):
        return False
    try:
        parts = urlsplit(url)
        _ = parts.port  # a port that is not a number from 0 to 65535 is a ValueError
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def elicit(connection: Connection, context: RequestContext, params: dict) -> dict:
    """``elicitation/create``: ask the client's ``elicitation_handler``, in a mode the client declared."""
    client = connection.client
    check_elicitation(params, connection.protocol_version)  # again: an approve hook may edit them
    try:
        request = ElicitParams.from_wire(params)
    except (TypeError, KeyError) as exc:
        raise InvalidParams(f"Invalid params: {exc}") from None
    mode = request.mode or "form"
    if mode not in client.elicitation_modes:
        raise InvalidParams(f"Invalid params: this client does not support {mode}-mode elicitation")
    result = result_dict(
        call_handler(cast("Callable[..., Any]", client.elicitation_handler), request, context)
    )
    if (
        mode == "form"
        and result.get("action") == "accept"
        and isinstance(result.get("content"), (dict, type(None)))
    ):
        result["content"] = apply_defaults(request.requested_schema, result.get("content"))
    if result.get("content") is not None:
        # 2025-11-25 client/elicitation: StringSchema's formats include "date" and "date-time";
        # a handler may answer with the Python values (a date, a datetime, an Enum member ...),
        # sent as JSON as a tool call's arguments are (mcp_ref.jsonable)
        from ..jsonable import sendable

        result["content"] = sendable(result["content"], "content")
    problem = elicit_result_problem(result, mode, request.requested_schema)
    if problem is not None:
        # The handler's mistake, not the server's: logged here with this reason (the session's
        # handler failure), and the server is told -32603 "Internal error", nothing of the answer.
        raise ValueError(
            f"the elicitation_handler's answer is no ElicitResult the spec allows: {problem}"
        )
    return result


def apply_defaults(schema: dict | None, content: dict | None) -> dict:
    """Fill fields the user left out with the schema's ``default`` values.

    2025-11-25 client/elicitation (SEP-1034): primitive schemas may carry a
    ``default``; a client that accepts should send it for fields left unset.  A default that is
    not a value of its property's type is the server's mistake: it is not filled in (the handler's
    answer would otherwise be blamed for it).
    """
    content = dict(content or {})
    for key, spec in ((schema or {}).get("properties") or {}).items():
        if key in content or not isinstance(spec, dict) or "default" not in spec:
            continue
        if fits_form_type(spec["default"], spec.get("type")):
            content[key] = spec["default"]
    return content


# -- roots (client/roots): what a root may be, and answering the server's ``roots/list`` -----------


def as_root(value: Root | dict | str) -> Root:
    """``value`` (a Root, its wire dict, or a URI string) as a :class:`~mcp_ref.types.Root`.

    client/roots §Root: "uri: Unique identifier for the root. This MUST be a file:// URI".
    """
    if isinstance(value, Root):
        root = value
    elif isinstance(value, str):
        root = Root(uri=value)
    else:
        root = Root.from_wire(value)
    if not root.uri.startswith("file://"):
        raise ValueError(f"a root must be a file:// URI, not {root.uri!r}")
    return root


def list_roots(connection: Connection, context: RequestContext, params: dict) -> dict:
    """``roots/list``: the client's roots (:func:`check_offered` has seen that there are some)."""
    return result_dict(
        {"roots": [r.to_wire() for r in cast("list[Root]", connection.client.roots)]}
    )


#: Every request a client answers itself (``ping``: the session's,
#: :func:`mcp_ref.lifecycle.answered_at_once`), and its answer.
HANDLERS = {
    "sampling/createMessage": create_message,
    "elicitation/create": elicit,
    "roots/list": list_roots,
}


def offered(client: ClientSettings, version: str | None) -> dict[str, Any]:
    """The capabilities of the requests this client answers itself (:data:`HANDLERS`) at
    ``version``: sampling with a handler; elicitation with a handler and a revision that has it;
    roots, roots given.  What ``Client.capabilities`` declares before its extensions' own."""
    caps: dict[str, Any] = {}
    if client.roots is not None:
        # 2026-07-28 has no roots list_changed (the server asks for the roots when it needs them).
        caps["roots"] = {} if version in lifecycle.MODERN_VERSIONS else {"listChanged": True}
    if client.sampling_handler is not None:
        caps["sampling"] = {}
        if client.sampling_tools and lifecycle.at_least(version, lifecycle.SAMPLING_TOOLS):
            caps["sampling"]["tools"] = {}
    if client.elicitation_handler is not None and lifecycle.at_least(
        version, lifecycle.ELICITATION
    ):
        url_mode = lifecycle.at_least(version, lifecycle.ELICITATION_URL_MODE)
        caps["elicitation"] = {mode: {} for mode in client.elicitation_modes} if url_mode else {}
    return caps


def check_offered(connection: Connection, method: str) -> None:
    """Raise MethodNotFound unless this client answers ``method`` (one of :data:`HANDLERS`) at all
    (:func:`offered`).  Checked before the request is shown to the extensions (an ``approve``) or
    its handler runs."""
    feature = method.partition("/")[0]
    if feature not in offered(connection.client, connection.protocol_version):
        raise MethodNotFound(f"Method not found: this client does not offer {feature}")


@dataclass
class IncomingRequest:
    """A request of the server's as the client's extensions' ``intercept_request`` see it (the
    ``call``): an interceptor may replace ``params`` (an edited request) or ``context`` (the request
    then runs under another one, e.g. a task's) before it calls ``proceed()``."""

    #: The connection it came on (``connection.modern``: the era; ``connection.client``: the client).
    connection: Connection
    #: Its context: its id, whether the server cancelled it, its progress.
    context: RequestContext
    method: str
    params: dict[str, Any]


def answer_request(
    connection: Connection, context: RequestContext, method: str, params: dict
) -> dict:
    """Answer a request of the server's: with a method of one of the client's extensions
    (``methods(version)``), else sampling, elicitation or roots (:data:`HANDLERS`).

    A request the client answers (what it does not offer is -32601 and reaches no extension)
    then passes every extension's ``intercept_request``, the first given outermost, before its
    handler: they may refuse it, edit it, or answer it otherwise.
    """
    version = connection.session.protocol_version
    extensions = connection.client.extensions
    handler = next(
        (found for extension in extensions if (found := extension.methods(version).get(method))),
        None,
    )
    if handler is None and method not in HANDLERS:
        raise MethodNotFound(f"Method not found: {method}")
    connection.lifecycle.check_receive(method)
    if handler is None:
        check_offered(connection, method)
        if method == "elicitation/create":
            # before an extension shows it to the user or makes a task
            check_elicitation(params, connection.protocol_version)
        handler = HANDLERS[method]
    call = IncomingRequest(connection, context, method, params)

    def answer() -> dict:
        return handler(connection, call.context, call.params)

    proceed = answer
    for extension in reversed(extensions):
        proceed = functools.partial(extension.intercept_request, call, proceed)
    return proceed()


#: What a 2026-07-28 server never sends but on a listen stream (the change notifications), or at all.
UNASKED_AT_2026 = frozenset(
    {
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
        "notifications/elicitation/complete",
    }
)


def route_notification(
    connection: Connection,
    method: str,
    params: dict,
    cache: ResultCache | None,
    streams: Streams | None,
) -> None:
    """Route a notification of the server's: a listen stream's to that stream (by its
    ``subscriptionId``), the rest to the client's callbacks (on the callback thread).  ``cache``
    and ``streams``: the connection's, if made."""
    client = connection.client
    meta = params.get("_meta")
    subscription = meta.get(lifecycle.SUBSCRIPTION_ID) if isinstance(meta, dict) else None
    if subscription is None and connection.modern and method in UNASKED_AT_2026:
        # 2026-07-28 basic/patterns/subscriptions §Opening a Stream: change notifications come on
        # a listen stream, and "The server MUST NOT send notification types the client has not
        # explicitly requested"; changelog 11: "Remove the notifications/elicitation/complete
        # notification".  So neither reaches a callback (nor the cache) off a listen stream.
        log.debug("dropped %s: a 2026-07-28 server sends it on no listen stream", method)
        return
    if cache is not None:
        # caching §Interaction with Notifications: a change notification "invalidates the cached response".
        cache.invalidate(method, params)
    if subscription is not None:
        # subscriptions §Receiving Notifications: "clients MUST use this field to correlate
        # notifications with their originating subscription".
        if streams is None:
            log.debug("dropped %s for unknown subscription %r", method, subscription)
        else:
            streams.deliver(subscription, method, params)
        return
    if method == "notifications/message":
        if client.on_log is not None:
            from ..feature_types import LogMessage

            connection.session.call_soon(client.on_log, LogMessage.from_wire(params))
    elif method == "notifications/elicitation/complete":
        # client/elicitation: clients MUST ignore ids they do not know; the callback decides.
        if client.on_elicitation_complete is not None:
            connection.session.call_soon(
                client.on_elicitation_complete, params.get("elicitationId")
            )
    elif method == "notifications/resources/updated" or method.endswith("/list_changed"):
        connection.tools_changed += 1 if method == "notifications/tools/list_changed" else 0
        notify_callbacks(connection, method, params, () if streams is None else streams.feed.uris)
        if streams is not None:
            streams.deliver_local(method, params)
    else:
        log.debug("ignored notification %s", method)
