"""Protocol revisions: which ones we speak, how one is chosen, what each allows.

Behaviour that changed between revisions is decided here, as data, so the
rest of the code asks ``at_least(version, STRUCTURED_OUTPUT)`` instead of
comparing dates.  Revisions are ISO dates, so string order is time order.
"""

from __future__ import annotations

from . import LATEST_VERSION, SUPPORTED_VERSIONS
from .errors import UnsupportedProtocolVersion

__all__ = ["SUPPORTED_VERSIONS", "LATEST_VERSION", "at_least", "batches_allowed", "server_choose_version",
           "client_accept_version", "strip_newer_fields", "content_for_revision"]

# The revision in which each feature first appeared (see spec_notes/revisions.md).
AUDIO_CONTENT = "2025-03-26"
TOOL_ANNOTATIONS = "2025-03-26"
COMPLETIONS_CAPABILITY = "2025-03-26"
PROGRESS_MESSAGE = "2025-03-26"
STRUCTURED_OUTPUT = "2025-06-18"  # Tool.outputSchema, CallToolResult.structuredContent
TITLES = "2025-06-18"  # BaseMetadata.title
COMPLETION_CONTEXT = "2025-06-18"  # CompleteRequest.params.context
ELICITATION = "2025-06-18"
RESOURCE_LINKS = "2025-06-18"
ICONS = "2025-11-25"
OPTIONAL_ERROR_ID = "2025-11-25"  # JSONRPCErrorResponse.id may be omitted (and must not be null)
INPUT_ERRORS_AS_TOOL_ERRORS = "2025-11-25"  # SEP-1303
ELICITATION_URL_MODE = "2025-11-25"
SAMPLING_TOOLS = "2025-11-25"

#: JSON-RPC batches: 2025-03-26 basic §Batching made them explicit ("MUST support receiving");
#: 2024-11-05 requires plain JSON-RPC 2.0, of which §6 batches are part; 2025-06-18 removed them.
BATCH_VERSIONS = frozenset({"2024-11-05", "2025-03-26"})


def at_least(version: str | None, feature_revision: str) -> bool:
    """True when ``version`` is ``feature_revision`` or newer (None: not negotiated yet, assume newest)."""
    return version is None or version >= feature_revision


def batches_allowed(version: str | None) -> bool:
    """True when JSON-RPC batches are part of the negotiated revision."""
    return version in BATCH_VERSIONS


def server_choose_version(requested: object) -> str:
    """The server's half of version negotiation.

    2025-11-25 basic/lifecycle §Version Negotiation: "If the server supports the
    requested protocol version, it MUST respond with the same version.
    Otherwise, the server MUST respond with another protocol version it
    supports. This SHOULD be the latest version supported by the server."
    """
    if isinstance(requested, str) and requested in SUPPORTED_VERSIONS:
        return requested
    return LATEST_VERSION


def client_accept_version(chosen: object) -> str:
    """The client's half: "If the client does not support the version in the
    server's response, it SHOULD disconnect." — raise, and the caller closes."""
    if isinstance(chosen, str) and chosen in SUPPORTED_VERSIONS:
        return chosen
    raise UnsupportedProtocolVersion(
        f"server chose protocol version {chosen!r}; mcp_ref supports {', '.join(SUPPORTED_VERSIONS)}"
    )


# Fields of listed objects that first appeared in a revision; a server
# strips them when it speaks an older one, so each message matches the
# negotiated revision's schema.
_NEWER_FIELDS = {
    "title": TITLES,
    "outputSchema": STRUCTURED_OUTPUT,
    "annotations": TOOL_ANNOTATIONS,
    "icons": ICONS,
    "execution": ICONS,
}


def strip_newer_fields(obj: dict, version: str | None, *, keep_annotations: bool = False) -> dict:
    """A copy of a listed tool/resource/prompt without the fields ``version`` lacks.

    Resource and content ``annotations`` exist since 2024-11-05, only tool
    annotations are newer: pass ``keep_annotations=True`` for non-tools.
    """
    if version is None or version >= ICONS:
        return obj
    out = {}
    for key, value in obj.items():
        since = _NEWER_FIELDS.get(key)
        if since is not None and version < since and not (keep_annotations and key == "annotations"):
            continue
        out[key] = value
    return out


def content_for_revision(block: dict, version: str | None) -> dict:
    """A content block the negotiated revision can carry.

    Audio content exists from 2025-03-26 and resource links from 2025-06-18;
    for an older peer they become a text block that says what was there, so
    the message stays valid for that revision's schema and nothing is lost
    silently.
    """
    kind = block.get("type")
    if kind == "audio" and not at_least(version, AUDIO_CONTENT):
        return {"type": "text", "text": f"[audio content ({block.get('mimeType', 'unknown type')}) "
                                        f"cannot be sent with protocol version {version}]"}
    if kind == "resource_link" and not at_least(version, RESOURCE_LINKS):
        name = block.get("name") or block.get("uri")
        return {"type": "text", "text": f"Resource {name}: {block.get('uri')}"}
    return block
