"""What a type checker sees of :mod:`mcp_ref`: every exported name, typed.  At run time ``__init__.py``
imports each on first use (its ``__getattr__``), so ``import mcp_ref`` stays cheap (issue 24)."""

from .client import Client, ToolCall
from .errors import (
    CapabilityError,
    ConnectionClosed,
    HeaderMismatchError,
    InternalError,
    InvalidParams,
    InvalidRequest,
    InvalidResult,
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
from .extension import Extension
from .extensions.approval import ServerRequest
from .extensions.ratelimit import RateLimit
from .feature_types import (
    GetPromptResult,
    LogMessage,
    Prompt,
    PromptMessage,
    Resource,
    ResourceTemplate,
    Root,
)
from .http.connection_limits import ConnectionLimits
from .lifecycle import LATEST_VERSION, MODERN_VERSIONS, SUPPORTED_VERSIONS, __version__
from .media import Audio, Image
from .oauth.client import OAuth
from .oauth.errors import AuthorizationError
from .per_thread import PerThread
from .proxy.server import ProxyServer, proxy_server
from .request import DEFAULT, Default
from .sampling_and_elicitation import (
    CreateMessageParams,
    CreateMessageResult,
    ElicitParams,
    ElicitResult,
)
from .server import (
    Context,
    Elicit,
    ElicitUrl,
    ListRoots,
    PromptError,
    ResourceError,
    Sample,
    Server,
    ToolError,
)
from .server.principal import Principal
from .session import PendingRequest, RequestContext, Session
from .types import (
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
    "InvalidResult",
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
    "ProxyServer",
    "proxy_server",
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
    "PerThread",
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
