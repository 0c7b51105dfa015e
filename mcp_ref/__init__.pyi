"""What a type checker sees of :mod:`mcp_ref`: every exported name, typed.  At run time ``__init__.py``
imports each on first use (its ``__getattr__``), so ``import mcp_ref`` stays cheap (issue 24)."""

from .auth.errors import AuthorizationError
from .auth.oauth import OAuth
from .client import Client, ToolCall
from .core import LATEST_VERSION, MODERN_VERSIONS, SUPPORTED_VERSIONS, __version__
from .core.errors import (
    CapabilityError,
    ConnectionClosed,
    HeaderMismatchError,
    InternalError,
    InvalidParams,
    InvalidRequest,
    LimitExceeded,
    McpError,
    MCPRefError,
    MethodNotFound,
    MissingRequiredClientCapabilityError,
    ParseError,
    RequestCancelled,
    RequestRefused,
    RequestTimeout,
    ResourceNotFound,
    ServerBusy,
    ServerUnreachable,
    UnsupportedProtocolVersionError,
    UrlElicitationRequired,
)
from .core.extension import Extension
from .core.feature_types import (
    GetPromptResult,
    LogMessage,
    Prompt,
    PromptMessage,
    Resource,
    ResourceTemplate,
    Root,
)
from .core.media import Audio, Image
from .core.requests import DEFAULT, Default
from .core.sampling_and_elicitation import CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult
from .core.session import PendingRequest, RequestContext, Session
from .core.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    Tool,
)
from .extras.approval import ServerRequest
from .extras.ratelimit import RateLimit
from .server import Context, Elicit, ElicitUrl, ListRoots, PromptError, ResourceError, Sample, Server, ToolError
from .server.principal import Principal
from .workbench.connection_limits import ConnectionLimits

__all__ = [
    "AuthorizationError",
    "OAuth",
    "Client",
    "ToolCall",
    "LATEST_VERSION",
    "MODERN_VERSIONS",
    "SUPPORTED_VERSIONS",
    "__version__",
    "CapabilityError",
    "ConnectionClosed",
    "HeaderMismatchError",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "LimitExceeded",
    "McpError",
    "MCPRefError",
    "MethodNotFound",
    "MissingRequiredClientCapabilityError",
    "ParseError",
    "RequestCancelled",
    "RequestRefused",
    "RequestTimeout",
    "ResourceNotFound",
    "ServerBusy",
    "ServerUnreachable",
    "UnsupportedProtocolVersionError",
    "UrlElicitationRequired",
    "GetPromptResult",
    "LogMessage",
    "Prompt",
    "PromptMessage",
    "Resource",
    "ResourceTemplate",
    "Root",
    "Audio",
    "Image",
    "DEFAULT",
    "Default",
    "CreateMessageParams",
    "CreateMessageResult",
    "ElicitParams",
    "ElicitResult",
    "PendingRequest",
    "RequestContext",
    "Session",
    "AudioContent",
    "BlobResourceContents",
    "CallToolResult",
    "EmbeddedResource",
    "ImageContent",
    "ResourceLink",
    "TextContent",
    "TextResourceContents",
    "Tool",
    "ServerRequest",
    "RateLimit",
    "Context",
    "Elicit",
    "ElicitUrl",
    "ListRoots",
    "PromptError",
    "ResourceError",
    "Sample",
    "Server",
    "ToolError",
    "Principal",
    "Extension",
    "ConnectionLimits",
]
