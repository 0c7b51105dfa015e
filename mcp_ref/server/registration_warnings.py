"""The warnings a registration gives, each naming the user's registering line.

A name registered twice (the later registration replaces the earlier one, as the official SDK
warns) and a tool name outside the spec's guidance (2025-11-25 server/tools §Tool Names) are
warned about on the line that registered, whichever way it registered (``@server.tool``,
``@server.tool(...)``, ``server.add_tool(f)``, or an extension registering for it).  Loaded by the
first such warning: a server that registers each name once, as the spec advises, never loads it.
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["warn"]

#: mcp_ref's own directory: a frame whose file is under it is not the user's.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def warn(message: str) -> None:
    """A UserWarning saying ``message``, naming the first line outside mcp_ref that led here."""
    frame = sys._getframe(0)
    level = 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    warnings.warn(message, UserWarning, stacklevel=level)
