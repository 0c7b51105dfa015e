"""The server role: register plain functions as tools, resources and prompts.

::

    server = Server("demo", version="1.0")

    @server.tool()
    def add(a: int, b: int) -> int:
        \"\"\"Add two numbers.\"\"\"
        return a + b

    server.run_stdio()

The package is laid out by spec area, so each module lines up with a note in
``spec_notes/`` and a test file:

================  ==========================================================
module            one idea
================  ==========================================================
``server``        :class:`Server`: what is registered, and how to serve it
``connection``    :class:`ServerConnection`: one connection's dispatcher —
                  the method table, the lifecycle and capability gates
``context``       :class:`Context`: what a handler sees of its request
``listing``       one page of any listing (pagination, written once)
``tools``         tools: registration, ``tools/list``, ``tools/call``
``resources``     resources, templates, file roots, subscriptions
``prompts``       prompts: registration, ``prompts/list``, ``prompts/get``
``completion``    ``completion/complete``
``logging``       ``logging/setLevel`` and which log messages are sent
``input_required`` 2026-07-28 MRTR: asks answered by the client's retry
================  ==========================================================
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .connection import ServerConnection
    from .context import Context
    from .input_required import Elicit, ElicitUrl, InputRequired, ListRoots, Sample
    from .logging import LOG_LEVELS
    from .prompts import PromptError
    from .resources import ResourceError
    from .server import Server
    from .tools import ToolError

#: What this package exports, and the module of each (imported on first use: a server loads only
#: the features it uses).
_EXPORTS = {
    "Server": "server",
    "ServerConnection": "connection",
    "Context": "context",
    "ToolError": "tools",
    "ResourceError": "resources",
    "PromptError": "prompts",
    "LOG_LEVELS": "logging",
    "Elicit": "input_required",
    "ElicitUrl": "input_required",
    "Sample": "input_required",
    "ListRoots": "input_required",
    "InputRequired": "input_required",
}

__all__ = [
    "Server",
    "ServerConnection",
    "Context",
    "ToolError",
    "ResourceError",
    "PromptError",
    "LOG_LEVELS",
    "Elicit",
    "ElicitUrl",
    "Sample",
    "ListRoots",
    "InputRequired",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
